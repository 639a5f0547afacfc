package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/internal/reject"
)

// ent is one tar entry of a test layer.
type ent struct {
	name string
	typ  byte // tar.TypeReg when zero
	mode int64
	body string
	link string
}

func reg(name, body string) ent     { return ent{name: name, body: body} }
func dirEnt(name string) ent        { return ent{name: name, typ: tar.TypeDir} }
func sym(name, target string) ent   { return ent{name: name, typ: tar.TypeSymlink, link: target} }
func hard(name, source string) ent  { return ent{name: name, typ: tar.TypeLink, link: source} }
func whiteout(dir, name string) ent { return reg(dir+".wh."+name, "") }

// tarGz writes entries as a gzip-compressed tar at the given level.
func tarGz(t *testing.T, level int, entries ...ent) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, ModTime: time.Unix(1700000000, 0)}
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
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzLayer(t *testing.T, entries ...ent) v1.Layer {
	return static.NewLayer(tarGz(t, gzip.DefaultCompression, entries...), types.OCILayer)
}

// imageOf is an image of the layers, in order.
func imageOf(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func readIn(t *testing.T, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		t.Errorf("read %s: %v", p, err)
	}
	return string(b)
}

func TestUnpackRootfsAppliesLayersInOrder(t *testing.T) {
	first := gzLayer(t,
		dirEnt("./"),
		dirEnt("etc/"), reg("etc/conf", "c1"),
		dirEnt("usr/"), dirEnt("usr/bin/"),
		ent{name: "usr/bin/a", mode: 0o755, body: "a1"},
		sym("usr/bin/b", "a"),
		hard("usr/bin/c", "usr/bin/a"),
		ent{name: "usr/bin/su", mode: 0o4755, body: "su"},
		ent{name: "usr/bin/wall", mode: 0o2755, body: "wall"},
		ent{name: "tmp/", typ: tar.TypeDir, mode: 0o1777},
		ent{name: "root/", typ: tar.TypeDir, mode: 0o700},
		reg("w/keep", "k"), reg("w/gone", "g"), dirEnt("w/gonedir/"), reg("w/gonedir/x", "x"),
		reg("o/old", "o"), reg("o/sub/deep", "d"),
		reg("q/old", "o"), reg("q/sub/lower", "l"),
		reg("d/x", "x"),
		reg("f", "file"),
		sym("s", "usr/bin/a"),
		reg("./dotted/name", "dotted"),
		reg("no/parent/entries", "made"),
	)
	second := gzLayer(t,
		reg("etc/conf", "c2"),
		ent{name: "etc/", typ: tar.TypeDir, mode: 0o700},
		whiteout("w/", "gone"),
		whiteout("w/", "gonedir"),
		whiteout("w/", "never-there"),
		reg("o/.wh..wh..opq", ""),
		reg("o/new", "n"),
		// An opaque whiteout hides lower layers only: what this layer
		// wrote before it in the tar stays.
		reg("q/-early", "e"), reg("q/sub/mine", "m"), reg("q/.wh..wh..opq", ""),
		reg("d", "now a file"),
		dirEnt("f/"), reg("f/inside", "i"),
		reg("s", "replaces the link"),
		hard("usr/bin/e", "usr/bin/a"),
	)
	root := t.TempDir()
	if err := UnpackRootfs(imageOf(t, first, second), root); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"etc/conf": "c2", "usr/bin/a": "a1", "usr/bin/b": "a1", "usr/bin/c": "a1", "usr/bin/e": "a1",
		"w/keep": "k", "o/new": "n", "d": "now a file", "f/inside": "i", "s": "replaces the link",
		"dotted/name": "dotted", "no/parent/entries": "made", "q/-early": "e", "q/sub/mine": "m",
	} {
		if got := readIn(t, root, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"w/gone", "w/gonedir", "w/.wh.gone", "w/.wh.never-there", "o/old", "o/sub", "o/.wh..wh..opq", "q/old", "q/sub/lower"} {
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want it gone", p, err)
		}
	}
	if target, err := os.Readlink(filepath.Join(root, "usr/bin/b")); err != nil || target != "a" {
		t.Errorf("usr/bin/b -> %q, %v", target, err)
	}
	a, _ := os.Stat(filepath.Join(root, "usr/bin/a"))
	for _, p := range []string{"usr/bin/c", "usr/bin/e"} {
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || !os.SameFile(a, fi) {
			t.Errorf("%s is not a hard link of usr/bin/a: %v", p, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(root, "s")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("s: %v, %v; want the file that replaced the link", fi, err)
	}
	for p, want := range map[string]os.FileMode{
		"usr/bin/a": 0o755, "usr/bin/su": 0o755, "usr/bin/wall": 0o755, "etc/conf": 0o644,
		"tmp": os.ModeDir | os.ModeSticky | 0o777, "root": os.ModeDir | 0o700, "etc": os.ModeDir | 0o700, "f": os.ModeDir | 0o755,
	} {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got := fi.Mode() & (os.ModeType | os.ModePerm | os.ModeSticky | os.ModeSetuid | os.ModeSetgid); got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
}

func TestUnpackRootfsIgnoresTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	root := t.TempDir()
	if err := UnpackRootfs(imageOf(t, gzLayer(t, dirEnt("etc/"), reg("etc/hosts", "h"), ent{name: "bin/sh", mode: 0o755, body: "sh"})), root); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"etc": 0o755, "etc/hosts": 0o644, "bin/sh": 0o755} {
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want %v", p, fi, err, want)
		}
	}
}

// snapshot describes every entry under dir, to tell whether anything
// changed there.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st := fi.Sys().(*syscall.Stat_t)
			b.WriteString(" " + strconv.Quote(string(body)) + " links=" + strconv.FormatUint(uint64(st.Nlink), 10))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestUnpackRootfsNeverWritesOutsideTheRoot(t *testing.T) {
	type layers func(outside string) [][]ent
	one := func(es ...ent) layers { return func(string) [][]ent { return [][]ent{es} } }
	etcName := "cacheon-rootfs-test-" + strconv.Itoa(os.Getpid())
	cases := []struct {
		name   string
		layers layers
		ok     bool // the layers apply (without leaving the root)
	}{
		{"file through a relative link", one(sym("up", "../outside"), reg("up/pwned", "x")), false},
		{"file through a deep relative link", one(sym("a/b/up", "../../../../../../../../outside"), reg("a/b/up/pwned", "x")), false},
		{"file through ../../..", one(sym("up", "../../.."), reg("up/pwned", "x")), false},
		{"file through an absolute link", func(outside string) [][]ent {
			return [][]ent{{sym("abs", outside), reg("abs/pwned", "x")}}
		}, false},
		{"file through a link to /", func(outside string) [][]ent {
			return [][]ent{{sym("r", "/"), reg("r/"+strings.TrimPrefix(outside, "/")+"/pwned", "x")}}
		}, false},
		{"file through a link to /etc", one(sym("etc", "/etc"), reg("etc/"+etcName, "x")), false},
		{"link through a link to /etc", one(sym("etc", "/etc"), sym("etc/"+etcName, "x")), false},
		{"file through a link of an earlier layer", func(outside string) [][]ent {
			return [][]ent{{sym("up", "../outside")}, {reg("up/pwned", "x")}}
		}, false},
		{"directory through a link", one(sym("up", "../outside"), dirEnt("up/newdir/")), false},
		{"parent directory through a link", one(sym("up", "../outside"), reg("up/newdir/pwned", "x")), false},
		{"link through a link", one(sym("up", "../outside"), sym("up/evil", "x")), false},
		{"hard link through a link", one(sym("up", "../outside"), hard("h", "up/secret")), false},
		{"hard link into a link", one(sym("up", "../outside"), reg("f", "f"), hard("up/h", "f")), false},
		{"replace through a link", one(sym("up", "../outside"), reg("up/secret", "overwritten")), false},
		{"whiteout through a link", one(sym("up", "../outside"), whiteout("up/", "secret")), false},
		{"opaque whiteout through a link", one(sym("up", "../outside"), reg("up/.wh..wh..opq", "")), false},
		{"chmod through a link", one(sym("up", "../outside"), ent{name: "up/secret", typ: tar.TypeDir, mode: 0o777}), false},
		{"file over a link to a file outside", func(outside string) [][]ent {
			return [][]ent{{sym("x", "../outside/secret")}, {reg("x", "replaced")}}
		}, true},
		{"file over an absolute link to a file outside", func(outside string) [][]ent {
			return [][]ent{{sym("x", filepath.Join(outside, "secret"))}, {reg("x", "replaced")}}
		}, true},
		{"directory over a link outside", func(outside string) [][]ent {
			return [][]ent{{sym("x", "../outside")}, {ent{name: "x/", typ: tar.TypeDir, mode: 0o700}, reg("x/y", "in")}}
		}, true},
		{"whiteout of a link outside", func(outside string) [][]ent {
			return [][]ent{{sym("x", "../outside")}, {whiteout("", "x")}}
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dest, outside := filepath.Join(base, "dest"), filepath.Join(base, "outside")
			for _, d := range []string{dest, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(filepath.Join("/etc", etcName)) })
			before := snapshot(t, base)
			var ls []v1.Layer
			for _, es := range c.layers(outside) {
				ls = append(ls, gzLayer(t, es...))
			}
			err := UnpackRootfs(imageOf(t, ls...), dest)
			if c.ok && err != nil {
				t.Errorf("unpack: %v", err)
			}
			if !c.ok && err == nil {
				t.Errorf("unpack succeeded")
			}
			if _, err := os.Lstat(filepath.Join("/etc", etcName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("/etc/%s was written", etcName)
			}
			// Only dest changed.
			after := snapshot(t, base)
			var changed []string
			bl, al := strings.Split(before, "\n"), strings.Split(after, "\n")
			seen := map[string]bool{}
			for _, line := range bl {
				seen[line] = true
			}
			for _, line := range al {
				if !seen[line] && !strings.HasPrefix(line, "dest") {
					changed = append(changed, line)
				}
				delete(seen, line)
			}
			for line := range seen {
				if !strings.HasPrefix(line, "dest") {
					changed = append(changed, "removed: "+line)
				}
			}
			if len(changed) != 0 {
				t.Errorf("outside the root: %q", changed)
			}
		})
	}
}

func TestUnpackRootfsRejects(t *testing.T) {
	cases := []struct {
		name    string
		entries []ent
		want    string
	}{
		{"character device", []ent{{name: "dev/null", typ: tar.TypeChar}}, "tar type"},
		{"block device", []ent{{name: "dev/sda", typ: tar.TypeBlock}}, "tar type"},
		{"fifo", []ent{{name: "run/fifo", typ: tar.TypeFifo}}, "tar type"},
		{"parent name", []ent{reg("../x", "x")}, "clean relative path"},
		{"deep parent name", []ent{reg("a/../../x", "x")}, "clean relative path"},
		{"absolute name", []ent{reg("/etc/passwd", "x")}, "clean relative path"},
		{"unclean name", []ent{reg("a/./b", "x")}, "clean relative path"},
		{"double slash", []ent{reg("a//b", "x")}, "clean relative path"},
		{"backslash", []ent{reg(`a\b`, "x")}, "clean relative path"},
		{"dotdot", []ent{dirEnt("../")}, "clean relative path"},
		{"hard link out", []ent{hard("h", "../outside/secret")}, "hard link"},
		{"hard link absolute", []ent{hard("h", "/etc/passwd")}, "hard link"},
		{"hard link to the root", []ent{hard("h", "./")}, "hard link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			dest := filepath.Join(base, "dest")
			os.Mkdir(dest, 0o755)
			img := imageOf(t, gzLayer(t, reg("ok", "ok")), gzLayer(t, c.entries...))
			err := UnpackRootfs(img, dest)
			if !errors.Is(err, ErrRootfs) || !reject.Is(err) {
				t.Fatalf("err = %v, want ErrRootfs", err)
			}
			if !strings.HasPrefix(err.Error(), "layer 1: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want layer 1 and %q", err, c.want)
			}
			if entries, _ := os.ReadDir(base); len(entries) != 1 {
				t.Errorf("%s holds %v, want only dest", base, entries)
			}
		})
	}
}

// servedLayer serves other compressed bytes than its digest names.
type servedLayer struct {
	v1.Layer
	served []byte
}

func (l servedLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.served)), nil
}

func TestUnpackRootfsChecksTheLayerBytes(t *testing.T) {
	entries := []ent{dirEnt("etc/"), reg("etc/passwd", "root:x:0:0::/root:/bin/sh\n")}
	pinned := tarGz(t, gzip.BestSpeed, entries...)
	cases := []struct {
		name   string
		served []byte
	}{
		{"other contents", tarGz(t, gzip.BestSpeed, dirEnt("etc/"), reg("etc/passwd", "root::0:0::/root:/bin/sh\n"))},
		{"same contents, other compression", tarGz(t, gzip.BestCompression, entries...)},
		{"extra entry", tarGz(t, gzip.BestSpeed, append(entries, reg("etc/shadow", "x"))...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if bytes.Equal(c.served, pinned) {
				t.Fatal("served bytes are the pinned ones")
			}
			l := servedLayer{Layer: static.NewLayer(pinned, types.OCILayer), served: c.served}
			err := UnpackRootfs(imageOf(t, l), t.TempDir())
			if !errors.Is(err, ErrRootfs) || !strings.Contains(err.Error(), "hash to") {
				t.Fatalf("err = %v, want ErrRootfs naming the hashes", err)
			}
			want, _ := l.Digest()
			if !strings.Contains(err.Error(), want.String()) {
				t.Errorf("err = %v does not name %s", err, want)
			}
		})
	}
	// The pinned bytes themselves apply.
	l := servedLayer{Layer: static.NewLayer(pinned, types.OCILayer), served: pinned}
	root := t.TempDir()
	if err := UnpackRootfs(imageOf(t, l), root); err != nil {
		t.Fatal(err)
	}
	if got := readIn(t, root, "etc/passwd"); got != "root:x:0:0::/root:/bin/sh\n" {
		t.Errorf("etc/passwd = %q", got)
	}
}

func TestUnpackRootfsNeedsTheRoot(t *testing.T) {
	if err := UnpackRootfs(imageOf(t, gzLayer(t, reg("a", "a"))), filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("unpacked into a missing directory")
	}
}
