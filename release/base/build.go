package base

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/layer"
)

// ErrTree is wrapped when the packages do not form one consistent tree
// (two packages ship different files at one path, a link dangles).
var ErrTree = reject.New("base tree is inconsistent")

// DefaultLayers is the number of package layers: enough to compress on
// every core of a build machine, few enough for any runtime's layer limit.
const DefaultLayers = 8

// mergedUsr are the top-level directories that are links into /usr on a
// merged-/usr Debian system (the default since bookworm); package entries
// under them are written under usr/ instead, as dpkg on such a system
// would place them.
var mergedUsr = []string{"bin", "lib", "lib32", "lib64", "libx32", "sbin"}

// BuildOptions tune a build; none changes the image's bytes except Layers.
type BuildOptions struct {
	Cache Cache
	// Layers is the number of package layers (default DefaultLayers).
	Layers int
	// Jobs is the number of layers written at once (default GOMAXPROCS).
	Jobs int
	// Progress, when set, is told about each layer.
	Progress func(format string, args ...any)
}

// Result is a written base.
type Result struct {
	Digest v1.Hash
	// RefName is the name index.json lists it under.
	RefName string
	Layers  []LayerSummary
	Files   int   // regular files, across all layers
	Bytes   int64 // their uncompressed bytes
}

// LayerSummary describes one layer of the base.
type LayerSummary struct {
	Digest   string   `json:"digest"`
	Size     int64    `json:"size"`
	Packages []string `json:"packages"`
}

// Groups splits the lock's packages into n layers of similar installed
// size: packages by decreasing size, each into the lightest layer so far
// (the first on ties), each layer's packages then in name order. It
// depends on the lock alone.
func Groups(l *Lock, n int) [][]Package {
	if n > len(l.Packages) {
		n = len(l.Packages)
	}
	byWeight := append([]Package(nil), l.Packages...)
	sort.SliceStable(byWeight, func(i, j int) bool { return byWeight[i].InstalledSize > byWeight[j].InstalledSize })
	groups := make([][]Package, n)
	weight := make([]int64, n)
	for _, p := range byWeight {
		lightest := 0
		for i := range weight {
			if weight[i] < weight[lightest] {
				lightest = i
			}
		}
		groups[lightest] = append(groups[lightest], p)
		weight[lightest] += max(p.InstalledSize, 1)
	}
	for _, g := range groups {
		sort.Slice(g, func(i, j int) bool { return g[i].Name < g[j].Name })
	}
	return groups
}

// Build assembles the base image of l from the cached packages (Fetch
// them first) into a new OCI image layout at out, written under a
// temporary name and renamed into place when complete.
func Build(ctx context.Context, l *Lock, out string, opts BuildOptions) (*Result, error) {
	if _, err := os.Lstat(out); err == nil {
		return nil, fmt.Errorf("base layout %s already exists", out)
	}
	platform, _ := platformOf(l.Architecture)
	p, err := image.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	n := opts.Layers
	if n <= 0 {
		n = DefaultLayers
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	if p := opts.Progress; p != nil {
		// Layers finish on several goroutines; the caller sees one
		// line at a time.
		var mu sync.Mutex
		opts.Progress = func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			p(format, args...)
		}
	}
	work, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("base build: %w", err)
	}
	defer os.RemoveAll(work)

	t := &tree{nodes: map[string]node{}}
	groups := Groups(l, n)
	controls := make(map[string][]byte, len(l.Packages))
	written := make([]*layer.Written, len(groups))
	errs := make([]error, len(groups))
	var ctlMu sync.Mutex
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, len(groups)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				w, ctl, err := writePackageLayer(ctx, filepath.Join(work, fmt.Sprintf("packages-%02d.tar.gz", i)), groups[i], opts.Cache, t)
				written[i], errs[i] = w, err
				ctlMu.Lock()
				for k, v := range ctl {
					controls[k] = v
				}
				ctlMu.Unlock()
				if err == nil && opts.Progress != nil {
					opts.Progress("layer %d/%d: %d packages, %.1f MB compressed, %.1fs", i+1, len(groups), len(groups[i]), float64(w.Size)/1e6, time.Since(start).Seconds())
				}
			}
		}()
	}
	for i := range groups {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	fsLayer, err := writeFilesystemLayer(filepath.Join(work, "filesystem.tar.gz"), l, controls, t)
	if err != nil {
		return nil, err
	}

	res := &Result{RefName: l.Name + ":" + strings.ReplaceAll(platform, "/", "-")}
	adds := []image.Added{{Layer: image.FileLayer{W: fsLayer}, CreatedBy: "cacheon release base: filesystem, links and package records"}}
	res.Layers = append(res.Layers, LayerSummary{Digest: fsLayer.Digest, Size: fsLayer.Size, Packages: []string{}})
	for i, w := range written {
		var names []string
		for _, p := range groups[i] {
			names = append(names, p.Name)
		}
		adds = append(adds, image.Added{Layer: image.FileLayer{W: w}, CreatedBy: fmt.Sprintf("cacheon release base: packages %s", strings.Join(names, " "))})
		res.Layers = append(res.Layers, LayerSummary{Digest: w.Digest, Size: w.Size, Packages: names})
	}
	for _, nd := range t.nodes {
		if nd.typ == tar.TypeReg {
			res.Files++
			res.Bytes += nd.size
		}
	}
	scratch, err := image.Scratch(p)
	if err != nil {
		return nil, err
	}
	img, err := image.Assemble(image.Spec{
		Base:     scratch,
		BaseName: "scratch",
		Platform: p,
		Layers:   adds,
		Config:   image.Config{Env: append([]string(nil), l.Env...), Labels: map[string]string{"org.opencontainers.image.title": l.Name}},
		Epoch:    l.Epoch,
	})
	if err != nil {
		return nil, err
	}
	tmpLayout := filepath.Join(work, "layout")
	if res.Digest, err = image.WriteLayout(tmpLayout, img, res.RefName); err != nil {
		return nil, err
	}
	if err := os.Rename(tmpLayout, out); err != nil {
		return nil, fmt.Errorf("base build: %w", err)
	}
	return res, nil
}

// node is what the tree knows about one path, to catch two packages
// disagreeing about it.
type node struct {
	pkg  string
	typ  byte
	link string   // symlink target or hard link source
	sum  [32]byte // sha256 of a regular file
	size int64
	mode int64
}

// tree is the union of every package's entries, shared by the layer
// writers.
type tree struct {
	mu    sync.Mutex
	nodes map[string]node
}

// add records n at name and fails when another package put something
// different there. Directories may be shipped by many packages.
func (t *tree) add(name string, n node) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.nodes[name]
	if !ok {
		t.nodes[name] = n
		return nil
	}
	if old.typ == tar.TypeDir && n.typ == tar.TypeDir {
		return nil
	}
	if old.typ == n.typ && old.link == n.link && old.sum == n.sum && old.mode == n.mode {
		return nil // the same entry twice (a file under /lib and /usr/lib)
	}
	a, b := old.pkg, n.pkg
	if b < a {
		a, b = b, a
	}
	return fmt.Errorf("%w: /%s is shipped differently by %s and %s", ErrTree, name, a, b)
}

// resolve follows the symbolic links of p inside the tree and reports
// whether it names an entry (a link's target is resolved from its
// directory, an absolute one from the image root).
func (t *tree) resolve(p string) bool {
	for hops := 0; hops < 40; hops++ {
		// Resolve each parent first: a path may pass through a link.
		parts := strings.Split(p, "/")
		cur := ""
		moved := false
		for i, part := range parts {
			next := path.Join(cur, part)
			nd, ok := t.nodes[next]
			if !ok {
				return false
			}
			if nd.typ == tar.TypeSymlink {
				target := nd.link
				if !strings.HasPrefix(target, "/") {
					target = path.Join(path.Dir(next), target)
				}
				rest := strings.Join(parts[i+1:], "/")
				p = strings.TrimPrefix(path.Clean("/"+path.Join(target, rest)), "/")
				moved = true
				break
			}
			cur = next
		}
		if !moved {
			return true
		}
	}
	return false
}

// entryName maps a data.tar name to its path in the image ("" for the
// root): no "./", no trailing slash, merged-/usr directories under usr/.
func entryName(name string) (string, error) {
	n := strings.TrimSuffix(strings.TrimPrefix(name, "./"), "/")
	if n == "" || n == "." {
		return "", nil
	}
	if err := cleanRel(n); err != nil {
		return "", fmt.Errorf("%q: %v", name, err)
	}
	top, _, _ := strings.Cut(n, "/")
	for _, m := range mergedUsr {
		if top == m {
			return "usr/" + n, nil
		}
	}
	return n, nil
}

// writePackageLayer writes the data archives of pkgs, in order, into one
// layer, and returns the packages' control files.
func writePackageLayer(ctx context.Context, out string, pkgs []Package, cache Cache, t *tree) (*layer.Written, map[string][]byte, error) {
	s, err := layer.Create(out, layer.Options{Compression: layer.Gzip})
	if err != nil {
		return nil, nil, err
	}
	controls := map[string][]byte{}
	dirs := map[string]bool{}
	files := map[string]bool{}
	for _, p := range pkgs {
		if err := ctx.Err(); err != nil {
			s.Abort()
			return nil, nil, err
		}
		ctl, err := writePackage(s, p, cache, t, dirs, files)
		if err != nil {
			s.Abort()
			return nil, nil, fmt.Errorf("package %s %s: %w", p.Name, p.Version, err)
		}
		controls[p.Name] = ctl
	}
	w, err := s.Close()
	return w, controls, err
}

// writePackage writes one package's data archive into s. dirs and files
// are what s already holds: an entry two packages of one layer ship alike
// is written once.
func writePackage(s *layer.Stream, p Package, cache Cache, t *tree, dirs, files map[string]bool) ([]byte, error) {
	b, err := cache.Read(p)
	if err != nil {
		return nil, err
	}
	deb, err := ParseDeb(p.Name, b)
	if err != nil {
		return nil, err
	}
	if got := deb.Field("Package"); got != p.Name {
		return nil, fmt.Errorf("%w: control file names package %q", ErrDeb, got)
	}
	if got := deb.Field("Version"); got != p.Version {
		return nil, fmt.Errorf("%w: control file names version %q", ErrDeb, got)
	}
	data, err := deb.Data()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDeb, err)
	}
	defer data.Close()
	tr := tar.NewReader(data)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return deb.Control, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: data archive: %v", ErrDeb, err)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: data archive entry %v", ErrDeb, err)
		}
		if name == "" {
			continue
		}
		out := &tar.Header{
			Name:     name,
			Typeflag: hdr.Typeflag,
			// No setuid or setgid bit: a served engine needs no
			// privilege, and a base that grants none cannot leak it.
			Mode:    hdr.Mode & 0o1777,
			Uid:     hdr.Uid,
			Gid:     hdr.Gid,
			ModTime: time.Unix(hdr.ModTime.Unix(), 0).UTC(),
			Format:  tar.FormatPAX,
		}
		n := node{pkg: p.Name, typ: hdr.Typeflag, mode: out.Mode}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if dirs[name] {
				continue
			}
			dirs[name] = true
			out.Name += "/"
			if err := t.add(name, n); err != nil {
				return nil, err
			}
			if err := s.WriteHeader(out); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			h := sha256.New()
			out.Size = hdr.Size
			dst := io.Writer(h)
			if !files[name] {
				if err := s.WriteHeader(out); err != nil {
					return nil, err
				}
				dst = io.MultiWriter(s, h)
			}
			if _, err := io.Copy(dst, tr); err != nil {
				return nil, fmt.Errorf("%w: data archive entry %s: %v", ErrDeb, hdr.Name, err)
			}
			copy(n.sum[:], h.Sum(nil))
			n.size = hdr.Size
			if err := t.add(name, n); err != nil {
				return nil, err
			}
			files[name] = true
		case tar.TypeSymlink, tar.TypeLink:
			link := hdr.Linkname
			if hdr.Typeflag == tar.TypeLink {
				src, err := entryName(hdr.Linkname)
				if err != nil || src == "" || !files[src] {
					return nil, fmt.Errorf("%w: hard link %s to %q, which is not an earlier file of the package", ErrDeb, hdr.Name, hdr.Linkname)
				}
				link = src
			}
			out.Linkname, n.link = link, link
			if err := t.add(name, n); err != nil {
				return nil, err
			}
			if files[name] {
				continue
			}
			files[name] = true
			if err := s.WriteHeader(out); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%w: data archive entry %s has tar type %q (a base holds directories, files and links)", ErrDeb, hdr.Name, hdr.Typeflag)
		}
	}
}

// writeFilesystemLayer writes what no package ships: the merged-/usr
// links, the mount points a runtime fills, the declared links, and one
// dpkg record per package under var/lib/dpkg/status.d (where scanners
// look for the packages of a distroless image).
func writeFilesystemLayer(out string, l *Lock, controls map[string][]byte, t *tree) (*layer.Written, error) {
	epoch := time.Unix(l.Epoch, 0).UTC()
	type entry struct {
		hdr  *tar.Header
		data []byte
	}
	entries := map[string]entry{}
	var addDirs func(p string)
	addDirs = func(p string) {
		if p == "." || p == "" {
			return
		}
		if _, ok := entries[p]; ok {
			return
		}
		addDirs(path.Dir(p))
		// Parents get the same header whichever packages ship them: the
		// package layers that follow set their own.
		entries[p] = entry{hdr: &tar.Header{Name: p + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}}
	}
	newLink := func(p, target string) error {
		if nd, ok := t.nodes[p]; ok {
			return fmt.Errorf("%w: /%s is already shipped by %s", ErrTree, p, nd.pkg)
		}
		addDirs(path.Dir(p))
		h := &tar.Header{Name: p, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX}
		entries[p] = entry{hdr: h}
		t.nodes[p] = node{pkg: "the base", typ: tar.TypeSymlink, link: target}
		return nil
	}
	for _, m := range mergedUsr {
		if _, ok := t.nodes["usr/"+m]; ok {
			if err := newLink(m, "usr/"+m); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"dev", 0o755}, {"proc", 0o555}, {"sys", 0o555}, {"run", 0o755}, {"tmp", 0o1777}, {"root", 0o700}, {"home", 0o755}} {
		if _, ok := t.nodes[d.name]; !ok {
			entries[d.name] = entry{hdr: &tar.Header{Name: d.name + "/", Typeflag: tar.TypeDir, Mode: d.mode, ModTime: epoch, Format: tar.FormatPAX}}
		}
	}
	for i, k := range l.Links {
		if err := newLink(k.Path, k.Target); err != nil {
			return nil, fmt.Errorf("links[%d]: %w", i, err)
		}
	}
	// The directories the base adds (a link's parents, the mount points)
	// are in the tree too, or a link in one would never resolve.
	for name, e := range entries {
		if _, ok := t.nodes[name]; !ok && e.hdr.Typeflag == tar.TypeDir {
			t.nodes[name] = node{pkg: "the base", typ: tar.TypeDir}
		}
	}
	for i, k := range l.Links {
		if !t.resolve(k.Path) {
			return nil, fmt.Errorf("%w: links[%d]: /%s -> %s points to nothing in the base", ErrTree, i, k.Path, k.Target)
		}
	}
	for _, p := range l.Packages {
		name := "var/lib/dpkg/status.d/" + p.Name
		addDirs(path.Dir(name))
		ctl := controls[p.Name]
		if len(ctl) > 0 && ctl[len(ctl)-1] != '\n' {
			ctl = append(ctl, '\n')
		}
		entries[name] = entry{hdr: &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(ctl)), ModTime: epoch, Format: tar.FormatPAX}, data: ctl}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	s, err := layer.Create(out, layer.Options{Compression: layer.Gzip})
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		e := entries[n]
		if err := s.WriteHeader(e.hdr); err != nil {
			s.Abort()
			return nil, err
		}
		if _, err := s.Write(e.data); err != nil {
			s.Abort()
			return nil, err
		}
	}
	return s.Close()
}
