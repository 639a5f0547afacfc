package base

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/image"
)

// Installed is what an image's package database says it holds.
type Installed struct {
	Distro   string // os-release ID-VERSION_ID, e.g. "debian-12"; "" without one
	Packages []descriptor.BasePackage
	// DiffIDs are the SHA-256 digests of each layer's uncompressed
	// stream, in layer order, as read here (not as the image's config
	// claims them): reading the package database decompresses every
	// layer anyway, so an image assembled on this base need not do it
	// again to learn them.
	DiffIDs []v1.Hash
}

// maxRecord bounds one package database file read from a layer.
const maxRecord = 64 << 20

// ReadInstalled reads the OS packages of img from its layers, as the
// image's root filesystem would hold them after every layer is applied
// (a later layer's file, or whiteout, wins): dpkg's var/lib/dpkg/status
// (packages whose status is "install ok installed") and the one-record
// files of var/lib/dpkg/status.d/ that distroless-style bases (ours
// included) carry instead, plus os-release for the distribution. The
// packages are sorted by name and architecture. An image without a
// package database gives none.
func ReadInstalled(img v1.Image) (*Installed, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	// Layers are decompressed in parallel (most of the time is gunzip),
	// then their changes applied in layer order.
	changes := make([][]change, len(layers))
	diffIDs := make([]v1.Hash, len(layers))
	errs := make([]error, len(layers))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, l := range layers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			changes[i], diffIDs[i], errs[i] = scanLayer(l)
		}()
	}
	wg.Wait()
	files := map[string][]byte{}
	for i := range layers {
		if errs[i] != nil {
			return nil, fmt.Errorf("base layer %d: %w", i, errs[i])
		}
		// Whiteouts hide lower layers only: they go first, then what
		// the layer itself holds.
		for _, c := range changes[i] {
			if c.whiteout {
				c.apply(files)
			}
		}
		for _, c := range changes[i] {
			if !c.whiteout {
				c.apply(files)
			}
		}
	}
	in := &Installed{Distro: distroOf(files), DiffIDs: diffIDs}
	seen := map[string]bool{}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n != "var/lib/dpkg/status" && path.Dir(n) != "var/lib/dpkg/status.d" {
			continue
		}
		for _, para := range strings.Split(string(files[n]), "\n\n") {
			f := controlFields(para)
			if f["Package"] == "" {
				continue
			}
			if st, ok := f["Status"]; ok && st != "install ok installed" {
				continue
			}
			p := descriptor.BasePackage{Name: f["Package"], Version: f["Version"], Architecture: f["Architecture"], Source: f["Source"]}
			key := p.Name + ":" + p.Architecture
			if seen[key] {
				continue
			}
			seen[key] = true
			in.Packages = append(in.Packages, p)
		}
	}
	sort.Slice(in.Packages, func(i, j int) bool {
		a, b := in.Packages[i], in.Packages[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Architecture < b.Architecture
	})
	return in, nil
}

// wanted reports whether a layer file is one ReadInstalled reads.
func wanted(name string) bool {
	switch name {
	case "var/lib/dpkg/status", "etc/os-release", "usr/lib/os-release":
		return true
	}
	return path.Dir(name) == "var/lib/dpkg/status.d"
}

// change is one entry of a layer that matters to ReadInstalled.
type change struct {
	name     string
	data     []byte // a package database file or os-release
	remove   bool   // a whiteout, or a link where such a file was
	opaqueIn string // an opaque whiteout of this directory (with a trailing slash, or "")
	opaque   bool
	whiteout bool // a whiteout entry (plain or opaque), applied before the layer's files
}

func (c change) apply(files map[string][]byte) {
	switch {
	case c.opaque:
		for n := range files {
			if strings.HasPrefix(n, c.opaqueIn) {
				delete(files, n)
			}
		}
	case c.remove:
		for n := range files {
			if n == c.name || strings.HasPrefix(n, c.name+"/") {
				delete(files, n)
			}
		}
	default:
		files[c.name] = c.data
	}
}

func scanLayer(l v1.Layer) ([]change, v1.Hash, error) {
	rc, err := image.OpenLayer(l, nil)
	if err != nil {
		return nil, v1.Hash{}, err
	}
	defer rc.Close()
	diff := sha256.New()
	stream := io.TeeReader(rc, diff)
	var out []change
	tr := tar.NewReader(stream)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			// What follows the tar's end marker is part of the diff ID.
			if _, err := io.Copy(io.Discard, stream); err != nil {
				return nil, v1.Hash{}, err
			}
			return out, v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(diff.Sum(nil))}, nil
		}
		if err != nil {
			return nil, v1.Hash{}, err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")
		dir, base := path.Split(name)
		if base == ".wh..wh..opq" {
			out = append(out, change{opaque: true, opaqueIn: dir, whiteout: true})
			continue
		}
		if strings.HasPrefix(base, ".wh.") {
			out = append(out, change{name: dir + strings.TrimPrefix(base, ".wh."), remove: true, whiteout: true})
			continue
		}
		if !wanted(name) {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
			if hdr.Size > maxRecord {
				return nil, v1.Hash{}, fmt.Errorf("%s: %d bytes, over the %d a package database file may have", name, hdr.Size, maxRecord)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, v1.Hash{}, err
			}
			out = append(out, change{name: name, data: b})
		case tar.TypeSymlink:
			// etc/os-release is a link to ../usr/lib/os-release on
			// Debian; distroOf falls back to the target's name.
			out = append(out, change{name: name, remove: true})
		}
	}
}

func distroOf(files map[string][]byte) string {
	b, ok := files["etc/os-release"]
	if !ok {
		b = files["usr/lib/os-release"]
	}
	vals := osReleaseFields(b)
	if vals["ID"] == "" {
		return ""
	}
	if vals["VERSION_ID"] == "" {
		return vals["ID"]
	}
	return vals["ID"] + "-" + vals["VERSION_ID"]
}

// osReleaseFields reads an os-release file's KEY=value lines, quotes
// removed.
func osReleaseFields(b []byte) map[string]string {
	vals := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vals[k] = strings.Trim(v, `"'`)
		}
	}
	return vals
}

// controlFields reads the fields of one control paragraph (RFC 822
// style, as in .deb control files, dpkg's status and apt-cache show);
// a continuation line is appended to its field after a newline.
func controlFields(para string) map[string]string {
	f := map[string]string{}
	last := ""
	for _, line := range strings.Split(para, "\n") {
		if line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last != "" {
				f[last] += "\n" + line
			}
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			last = k
			f[k] = strings.TrimSpace(v)
		}
	}
	return f
}
