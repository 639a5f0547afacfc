package base

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/cacheon/engine/internal/reject"
)

// ErrDeb is wrapped by every problem with a package archive's bytes.
var ErrDeb = reject.New("invalid Debian package")

// Deb is a parsed Debian binary package: an ar archive holding
// debian-binary, control.tar[.gz|.xz|.zst] and data.tar[.gz|.xz|.zst].
type Deb struct {
	Control  []byte // the control file (one RFC 822 paragraph)
	dataName string
	data     []byte // the data member, still compressed
}

const (
	arMagic     = "!<arch>\n"
	arHeaderLen = 60
)

// ParseDeb parses the .deb bytes b (name is used in errors). It reads the
// control file; the data archive is decompressed later, by Data.
func ParseDeb(name string, b []byte) (*Deb, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrDeb, name, fmt.Sprintf(format, args...))
	}
	if !bytes.HasPrefix(b, []byte(arMagic)) {
		return nil, bad("not an ar archive")
	}
	members := map[string][]byte{}
	var order []string
	for off := len(arMagic); off < len(b); {
		if len(b)-off < arHeaderLen {
			return nil, bad("truncated ar header at byte %d", off)
		}
		h := b[off : off+arHeaderLen]
		if string(h[58:60]) != "`\n" {
			return nil, bad("bad ar header at byte %d", off)
		}
		mname := strings.TrimSuffix(strings.TrimRight(string(h[0:16]), " "), "/")
		size, err := strconv.ParseInt(strings.TrimRight(string(h[48:58]), " "), 10, 64)
		if err != nil || size < 0 || size > int64(len(b)-off-arHeaderLen) {
			return nil, bad("ar member %q: bad size %q", mname, strings.TrimRight(string(h[48:58]), " "))
		}
		start := off + arHeaderLen
		if _, dup := members[mname]; dup {
			return nil, bad("ar member %q twice", mname)
		}
		members[mname] = b[start : start+int(size)]
		order = append(order, mname)
		off = start + int(size)
		if size%2 == 1 {
			off++ // members are padded to an even offset
		}
	}
	if len(order) < 3 || order[0] != "debian-binary" || !strings.HasPrefix(string(members["debian-binary"]), "2.") {
		return nil, bad("want debian-binary (format 2.x) first, then control.tar and data.tar; have %v", order)
	}
	d := &Deb{}
	var controlName string
	for _, m := range order[1:] {
		switch {
		case strings.HasPrefix(m, "control.tar"):
			controlName = m
		case strings.HasPrefix(m, "data.tar"):
			d.dataName, d.data = m, members[m]
		}
	}
	if controlName == "" || d.dataName == "" {
		return nil, bad("no control.tar or data.tar member (have %v)", order)
	}
	ctl, err := decompress(controlName, bytes.NewReader(members[controlName]))
	if err != nil {
		return nil, bad("%v", err)
	}
	defer ctl.Close()
	tr := tar.NewReader(ctl)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad("%s: %v", controlName, err)
		}
		if hdr.Typeflag == tar.TypeReg && strings.TrimPrefix(hdr.Name, "./") == "control" {
			if hdr.Size > 1<<20 {
				return nil, bad("%s: control file of %d bytes", controlName, hdr.Size)
			}
			if d.Control, err = io.ReadAll(tr); err != nil {
				return nil, bad("%s: %v", controlName, err)
			}
		}
	}
	if d.Control == nil {
		return nil, bad("%s holds no control file", controlName)
	}
	return d, nil
}

// Field returns the first line of a field of the control paragraph
// (field names are case-insensitive); "" when absent.
func (d *Deb) Field(key string) string {
	for k, v := range controlFields(string(d.Control)) {
		if strings.EqualFold(k, key) {
			first, _, _ := strings.Cut(v, "\n")
			return first
		}
	}
	return ""
}

// Data returns the uncompressed data archive (a tar stream).
func (d *Deb) Data() (io.ReadCloser, error) {
	return decompress(d.dataName, bytes.NewReader(d.data))
}

// decompress opens a member named control.tar* or data.tar* by its suffix.
func decompress(member string, r io.Reader) (io.ReadCloser, error) {
	switch {
	case strings.HasSuffix(member, ".tar"):
		return io.NopCloser(r), nil
	case strings.HasSuffix(member, ".tar.gz"):
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", member, err)
		}
		return zr, nil
	case strings.HasSuffix(member, ".tar.xz"):
		zr, err := xz.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", member, err)
		}
		return io.NopCloser(zr), nil
	case strings.HasSuffix(member, ".tar.zst"):
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", member, err)
		}
		return zr.IOReadCloser(), nil
	}
	return nil, fmt.Errorf("%s: unknown compression", member)
}
