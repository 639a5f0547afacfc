package layer

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// hostileTar builds a tar from raw headers, as an attacker would: nothing
// about the names or types is normalized.
func hostileTar(t testing.TB, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		body := []byte{}
		if h.Typeflag == tar.TypeReg {
			body = []byte("owned\n")
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func reg(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeReg} }

func TestReadersRefuseHostileEntries(t *testing.T) {
	cases := []struct {
		name string
		hdrs []*tar.Header
		want error
	}{
		{"climbing name", []*tar.Header{reg("cacheon/substrate/../../../escaped.txt")}, ErrUnsafePath},
		{"leading dot-dot", []*tar.Header{reg("../escaped.txt")}, ErrUnsafePath},
		{"absolute name", []*tar.Header{reg("/tmp/escaped.txt")}, ErrUnsafePath},
		{"unclean name", []*tar.Header{reg("a//b")}, ErrUnsafePath},
		{"backslash", []*tar.Header{reg(`a\..\..\b`)}, ErrUnsafePath},
		{"climbing directory", []*tar.Header{{Name: "../d/", Typeflag: tar.TypeDir, Mode: 0o755}}, ErrUnsafePath},
		{"symlink out", []*tar.Header{{Name: "a/link", Typeflag: tar.TypeSymlink, Linkname: "/etc"}, reg("a/link/passwd")}, ErrNotRegular},
		{"hard link", []*tar.Header{reg("a/x"), {Name: "a/y", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}}, ErrNotRegular},
		{"fifo", []*tar.Header{{Name: "a/pipe", Typeflag: tar.TypeFifo}}, ErrNotRegular},
		{"char device", []*tar.Header{{Name: "a/zero", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 5}}, ErrNotRegular},
		{"block device", []*tar.Header{{Name: "a/sda", Typeflag: tar.TypeBlock, Devmajor: 8}}, ErrNotRegular},
		{"listed twice", []*tar.Header{reg("a/x"), reg("./a/x")}, ErrDuplicateEntry},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := hostileTar(t, c.hdrs...)
			err := Walk(bytes.NewReader(data), func(string, bool, io.Reader) error { return nil })
			if !errors.Is(err, c.want) || !IsRejection(err) {
				t.Errorf("Walk: err = %v, want %v", err, c.want)
			}
			// The scratch root is a directory inside a parent we watch:
			// nothing may appear beside it.
			parent := t.TempDir()
			dest := filepath.Join(parent, "scratch")
			os.Mkdir(dest, 0o700)
			err = Extract(bytes.NewReader(data), dest)
			if !errors.Is(err, c.want) || !IsRejection(err) {
				t.Errorf("Extract: err = %v, want %v", err, c.want)
			}
			entries, _ := os.ReadDir(parent)
			if len(entries) != 1 {
				t.Errorf("Extract wrote beside its root: %v", entries)
			}
			if _, err := os.Lstat(filepath.Join(os.TempDir(), "escaped.txt")); err == nil {
				t.Errorf("Extract wrote %s", filepath.Join(os.TempDir(), "escaped.txt"))
			}
		})
	}
}

// sparseTar is a PAX sparse (format 1.0) entry of 1 TiB held in a few
// hundred bytes: archive/tar expands its holes, so no limit on the
// stream bounds it. archive/tar will not write one, so its PAX header is
// patched in by hand.
func sparseTar(t testing.TB) []byte {
	records := ""
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"}, {"GNU.sparse.name", "a/holes"}, {"GNU.sparse.realsize", "1099511627776"}} {
		line := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(line) + 1
		for len(strconv.Itoa(n))+len(line) != n {
			n++
		}
		records += strconv.Itoa(n) + line
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "pax", Typeflag: tar.TypeReg, Size: int64(len(records)), Mode: 0o644})
	tw.Write([]byte(records))
	tw.WriteHeader(&tar.Header{Name: "a/holes", Typeflag: tar.TypeReg, Size: 512, Mode: 0o644})
	tw.Write(append([]byte("1\n0\n0\n"), make([]byte, 506)...)) // the sparse map: one empty region
	tw.Close()
	b := buf.Bytes()
	b[156] = tar.TypeXHeader
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b[:512] {
		sum += int(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

func TestReadersRefuseSparseFiles(t *testing.T) {
	data := sparseTar(t)
	err := Walk(bytes.NewReader(data), func(string, bool, io.Reader) error { return nil })
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("Walk: err = %v, want ErrNotRegular", err)
	}
	if err := Extract(bytes.NewReader(data), t.TempDir()); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Extract: err = %v, want ErrNotRegular", err)
	}
}

func TestUnpackWritesOnlyUnderItsRoot(t *testing.T) {
	data := hostileTar(t, &tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}, reg("./a/b/c.txt"), &tar.Header{Name: "a/run", Typeflag: tar.TypeReg, Mode: 0o700})
	dest := t.TempDir()
	var seen []string
	err := Unpack(bytes.NewReader(data), dest, func(name string, exec bool, r io.Reader) error {
		seen = append(seen, name)
		_, err := io.CopyN(io.Discard, r, 2) // a reader that stops early still gets the whole file written
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "a/b/c.txt,a/run" {
		t.Errorf("visited %v", seen)
	}
	b, err := os.ReadFile(filepath.Join(dest, "a", "b", "c.txt"))
	if err != nil || string(b) != "owned\n" {
		t.Errorf("a/b/c.txt = %q, %v", b, err)
	}
	if info, err := os.Stat(filepath.Join(dest, "a", "run")); err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("a/run: %v %v, want mode 0755", info, err)
	}
}

// bomb is a gzip stream of n zero bytes: about n/1000 bytes compressed.
func bomb(t testing.TB, n int64) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := io.CopyN(zw, zeros{}, n); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestDecompressLimitedRefusesBombs(t *testing.T) {
	data := bomb(t, 256<<20) // 256 MiB of zeros in about 256 KiB
	rc, err := DecompressLimited(io.NopCloser(bytes.NewReader(data)), "application/vnd.oci.image.layer.v1.tar+gzip", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rc)
	if !errors.Is(err, ErrTooLarge) || !IsRejection(err) {
		t.Fatalf("read %d bytes, err = %v, want ErrTooLarge", n, err)
	}
	if want := ExpansionLimit(int64(len(data))); n != want {
		t.Errorf("read %d bytes before refusing, want exactly the limit %d", n, want)
	}
	// A stream that is not gzip at all is refused as such.
	_, err = DecompressLimited(io.NopCloser(strings.NewReader("not gzip")), "application/vnd.oci.image.layer.v1.tar+gzip", 8)
	if !errors.Is(err, ErrCompression) {
		t.Errorf("garbage: err = %v, want ErrCompression", err)
	}
	// A zstd frame asking for a huge window is refused, not allocated.
	var zbuf bytes.Buffer
	zw, _ := zstd.NewWriter(&zbuf, zstd.WithWindowSize(256<<20), zstd.WithEncoderConcurrency(1))
	io.CopyN(zw, zeros{}, 1<<20)
	zw.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rc, err = DecompressLimited(io.NopCloser(&zbuf), "application/vnd.oci.image.layer.v1.tar+zstd", int64(zbuf.Len()))
	if err == nil {
		_, err = io.Copy(io.Discard, rc)
	}
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Errorf("a zstd frame with a 256 MiB window was decoded")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 128<<20 {
		t.Errorf("decoding allocated %d bytes", grew)
	}
}

func TestWriteRefusesALayerReadersWouldRefuse(t *testing.T) {
	entries := []Entry{{Path: "zeros.bin", Data: make([]byte, MinExpansionAllowance+1)}}
	out := filepath.Join(t.TempDir(), "layer")
	if _, err := Write(out, entries, Options{Compression: Gzip}); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("err = %v, want the expansion limit", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused layer was left at %s", out)
	}
}

func TestExpansionLimit(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{
		{-1, MinExpansionAllowance},
		{0, MinExpansionAllowance},
		{1 << 20, 100 << 20},
		{1 << 40, MaxUncompressedSize},
		{1<<63 - 1, MaxUncompressedSize},
	} {
		if got := ExpansionLimit(c.in); got != c.want {
			t.Errorf("ExpansionLimit(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

// FuzzUnpack feeds arbitrary (optionally gzip-compressed) bytes to the
// layer reader and the safe unpacker: they must refuse or extract, never
// panic or write outside their root.
func FuzzUnpack(f *testing.F) {
	f.Add(hostileTar(f, reg("a/b.txt"), &tar.Header{Name: "a/", Typeflag: tar.TypeDir}), false)
	f.Add(hostileTar(f, reg("../escaped.txt")), false)
	f.Add(hostileTar(f, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/"}), false)
	f.Add(hostileTar(f, reg("a"), reg("a")), false)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(hostileTar(f, reg("x/y")))
	zw.Close()
	f.Add(gz.Bytes(), true)
	f.Add(bomb(f, 1<<20), true)
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		mt := "application/vnd.oci.image.layer.v1.tar"
		if compressed {
			mt += "+gzip"
		}
		parent, err := os.MkdirTemp(base, "")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(parent)
		dest := filepath.Join(parent, "root")
		if err := os.Mkdir(dest, 0o700); err != nil {
			t.Fatal(err)
		}
		// A smaller limit than a real layer's keeps every exec fast.
		rc, err := decompressLimited(io.NopCloser(bytes.NewReader(data)), mt, 256<<10)
		if err != nil {
			return
		}
		Unpack(rc, dest, nil)
		entries, _ := os.ReadDir(parent)
		if len(entries) != 1 || entries[0].Name() != "root" {
			t.Fatalf("unpack wrote beside its root: %v", entries)
		}
		filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.Type().IsRegular() && !d.IsDir() {
				t.Errorf("unpack made %s, a %s", p, d.Type())
			}
			return nil
		})
	})
}
