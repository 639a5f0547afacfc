package base

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// debEntry is one entry of a synthetic package's data archive.
type debEntry struct {
	Name string // as in the archive, e.g. "./usr/bin/tool"
	Type byte   // tar.TypeReg when zero
	Mode int64  // 0o644 for files, 0o755 for directories when zero
	Body string
	Link string // symlink target or hard link source
}

func dir(name string) debEntry        { return debEntry{Name: name, Type: tar.TypeDir} }
func file(name, body string) debEntry { return debEntry{Name: name, Body: body} }
func symlink(name, target string) debEntry {
	return debEntry{Name: name, Type: tar.TypeSymlink, Link: target}
}

// arMember is one member of an ar archive.
type arMember struct {
	Name string
	Data []byte
}

// arArchive writes members as a Debian package's ar archive: the magic,
// then per member a 60-byte header and the data, padded to even length.
func arArchive(members ...arMember) []byte {
	var b bytes.Buffer
	b.WriteString(arMagic)
	for _, m := range members {
		fmt.Fprintf(&b, "%-16s%-12d%-6d%-6d%-8s%-10d`\n", m.Name, 1700000000, 0, 0, "100644", len(m.Data))
		b.Write(m.Data)
		if len(m.Data)%2 == 1 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// tarOf writes entries as a tar stream with fixed owners and times.
func tarOf(t testing.TB, entries []debEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Linkname: e.Link,
			Uname: "root", Gname: "root", ModTime: time.Unix(1690000000, 0), Format: tar.FormatGNU}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
			if hdr.Typeflag == tar.TypeDir {
				hdr.Mode = 0o755
			}
		}
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.Body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// compress compresses b for a member named with suffix ("", ".gz",
// ".xz" or ".zst").
func compress(t testing.TB, suffix string, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	switch suffix {
	case "":
		return b
	case ".gz":
		zw := gzip.NewWriter(&out)
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case ".xz":
		zw, err := xz.NewWriter(&out)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case ".zst":
		zw, err := zstd.NewWriter(&out, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(b)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("compression %q", suffix)
	}
	return out.Bytes()
}

// controlFor is a control paragraph naming name and version.
func controlFor(name, version string) string {
	return fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: Test <test@example.org>\nInstalled-Size: 12\nDescription: %s for tests\n a longer description\n .\n over lines\n", name, version, name)
}

// controlTar is control.tar.gz holding ./control (and ./md5sums).
func controlTar(t testing.TB, control string) []byte {
	return compress(t, ".gz", tarOf(t, []debEntry{dir("./"), file("./control", control), file("./md5sums", "")}))
}

// makeDeb builds a .deb with the control paragraph control and a data
// archive of entries, its member named data.tar+dataSuffix.
func makeDeb(t testing.TB, control, dataSuffix string, entries []debEntry) []byte {
	t.Helper()
	return arArchive(
		arMember{"debian-binary", []byte("2.0\n")},
		arMember{"control.tar.gz", controlTar(t, control)},
		arMember{"data.tar" + dataSuffix, compress(t, dataSuffix, tarOf(t, entries))},
	)
}

// testPkg is a synthetic package and its .deb.
type testPkg struct {
	Package
	Deb []byte
}

// newPkg builds the .deb of package name (version 1.0-1) with entries
// and the lock entry pinning it.
func newPkg(t testing.TB, name string, installedKiB int64, entries ...debEntry) testPkg {
	t.Helper()
	return pkgOf(name, installedKiB, makeDeb(t, controlFor(name, "1.0-1"), ".xz", entries))
}

// pkgOf is the package name, version 1.0-1, with the .deb bytes deb.
func pkgOf(name string, installedKiB int64, deb []byte) testPkg {
	const version = "1.0-1"
	sum := sha256.Sum256(deb)
	return testPkg{
		Package: Package{
			Name: name, Version: version, Architecture: "amd64", Source: name,
			URL:    "http://deb.example/pool/main/" + name + "_" + version + "_amd64.deb",
			SHA256: hex.EncodeToString(sum[:]), Size: int64(len(deb)), InstalledSize: installedKiB,
		},
		Deb: deb,
	}
}

// cacheWith stores the packages' .debs in a new cache.
func cacheWith(t testing.TB, pkgs ...testPkg) Cache {
	t.Helper()
	c := Cache{Dir: t.TempDir()}
	for _, p := range pkgs {
		if err := os.MkdirAll(filepath.Dir(c.Path(p.SHA256)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.Path(p.SHA256), p.Deb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// lockOf is a lock of the packages (in any order) that passes Check.
func lockOf(t testing.TB, links []Link, pkgs ...testPkg) *Lock {
	t.Helper()
	l := &Lock{
		FormatVersion: LockFormatVersion, Name: "test-base", Distribution: "debian bookworm", Architecture: "amd64",
		Epoch: 1767225600, Env: []string{"PATH=/usr/bin:/bin"}, Links: links,
	}
	for _, p := range pkgs {
		l.Packages = append(l.Packages, p.Package)
	}
	sort.Slice(l.Packages, func(i, j int) bool { return l.Packages[i].Name < l.Packages[j].Name })
	l.Requested = []string{l.Packages[0].Name}
	if err := l.Check("test.lock.json"); err != nil {
		t.Fatal(err)
	}
	return l
}
