package base

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	_ "time/tzdata" // the child build's TZ must take effect on any machine

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/image"
)

// samplePackages is a small distribution: a tool under /bin with a hard
// link and privileged programs, a library under /usr/lib and /lib, and
// base-files with /tmp and a control file without its last newline.
func samplePackages(t testing.TB) []testPkg {
	tool := newPkg(t, "tool", 300,
		dir("./"), dir("./bin/"), dir("./usr/"), dir("./usr/bin/"), dir("./usr/share/"), dir("./usr/share/doc/"), dir("./usr/share/doc/tool/"),
		debEntry{Name: "./bin/tool", Mode: 0o755, Body: "#!/bin/sh\necho tool\n"},
		debEntry{Name: "./usr/bin/tool-alias", Type: tar.TypeLink, Link: "./bin/tool"},
		debEntry{Name: "./usr/bin/su", Mode: 0o4755, Body: "setuid program"},
		debEntry{Name: "./usr/bin/wall", Mode: 0o2755, Body: "setgid program"},
		file("./usr/share/doc/tool/copyright", "GPL\n"),
	)
	libfoo := newPkg(t, "libfoo1", 200,
		dir("./"), dir("./lib/"), dir("./lib64/"), dir("./usr/"), dir("./usr/lib/"), dir("./usr/lib/foo/"), dir("./usr/share/"), dir("./usr/share/doc/"),
		file("./usr/lib/foo/libfoo.so.1", "\x7fELF foo"),
		// The same file under /lib and /usr/lib is one entry.
		file("./lib/foo.conf", "threads=1\n"),
		file("./usr/lib/foo.conf", "threads=1\n"),
		symlink("./lib64/ld-foo.so.2", "/usr/lib/foo/libfoo.so.1"),
	)
	control := strings.TrimSuffix(controlFor("base-files", "1.0-1"), "\n")
	baseFiles := pkgOf("base-files", 100, makeDeb(t, control, ".gz", []debEntry{
		dir("./"), dir("./etc/"), {Name: "./tmp/", Type: tar.TypeDir, Mode: 0o1777}, dir("./usr/"), dir("./usr/share/"),
		file("./etc/os-release", "ID=debian\n"),
	}))
	return []testPkg{tool, libfoo, baseFiles}
}

var sampleLinks = []Link{
	{Path: "usr/lib/libfoo.so.1", Target: "foo/libfoo.so.1", Why: "libfoo1's postinst: update-alternatives"},
	{Path: "etc/alternatives/tool", Target: "/bin/tool", Why: "tool's postinst: update-alternatives (through the /bin link)"},
}

// layerHeaders reads the tar headers of every layer of img, by layer.
func layerHeaders(t *testing.T, img v1.Image) []map[string]*tar.Header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]*tar.Header
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		hdrs := map[string]*tar.Header{}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := hdrs[hdr.Name]; dup {
				t.Errorf("layer %d holds %s twice", len(out), hdr.Name)
			}
			hdrs[hdr.Name] = hdr
		}
		rc.Close()
		out = append(out, hdrs)
	}
	return out
}

// openBuilt opens the image Build wrote at out and checks the layout.
func openBuilt(t *testing.T, out string, res *Result) v1.Image {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != res.Digest || im.Manifests[0].Annotations[image.AnnotationRefName] != res.RefName {
		t.Fatalf("index.json lists %+v, want %s as %s", im.Manifests, res.Digest, res.RefName)
	}
	img, err := idx.Image(res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("layout image does not validate: %v", err)
	}
	return img
}

// noLeftovers checks that the directory of out holds only want.
func noLeftovers(t *testing.T, parent string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("%s holds %v, want %v", parent, names, want)
	}
}

func TestBuildWritesAMergedUsrBase(t *testing.T) {
	pkgs := samplePackages(t)
	l := lockOf(t, sampleLinks, pkgs...)
	parent := t.TempDir()
	out := filepath.Join(parent, "base")
	// Progress is called from the layer writers, at once.
	var progress atomic.Int32
	res, err := Build(context.Background(), l, out, BuildOptions{Cache: cacheWith(t, pkgs...), Layers: 2,
		Progress: func(string, ...any) { progress.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	noLeftovers(t, parent, "base")
	if n := progress.Load(); n != 2 {
		t.Errorf("progress told of %d layers, want 2", n)
	}
	if res.RefName != "test-base:linux-amd64" {
		t.Errorf("ref name %q", res.RefName)
	}
	// Regular files: bin/tool, su, wall, copyright, libfoo.so.1,
	// foo.conf (once), os-release.
	if res.Files != 7 {
		t.Errorf("%d files, want 7", res.Files)
	}
	if want := int64(len("#!/bin/sh\necho tool\n") + len("setuid program") + len("setgid program") + len("GPL\n") + len("\x7fELF foo") + len("threads=1\n") + len("ID=debian\n")); res.Bytes != want {
		t.Errorf("%d bytes, want %d", res.Bytes, want)
	}
	// The filesystem layer, then the package layers: each package once.
	if len(res.Layers) != 3 || len(res.Layers[0].Packages) != 0 {
		t.Fatalf("layers %+v, want the filesystem layer and 2 package layers", res.Layers)
	}
	var inLayers []string
	for _, ls := range res.Layers[1:] {
		inLayers = append(inLayers, ls.Packages...)
	}
	sort.Strings(inLayers)
	if strings.Join(inLayers, " ") != "base-files libfoo1 tool" {
		t.Errorf("packages in layers: %v", inLayers)
	}

	img := openBuilt(t, out, res)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || cfg.Created.Unix() != l.Epoch ||
		!reflect.DeepEqual(cfg.Config.Env, l.Env) || cfg.Config.Labels["org.opencontainers.image.title"] != "test-base" ||
		len(cfg.History) != 3 || len(cfg.RootFS.DiffIDs) != 3 {
		t.Errorf("config %+v", cfg)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	for i, ld := range m.Layers {
		if ld.Digest.String() != res.Layers[i].Digest || ld.Size != res.Layers[i].Size {
			t.Errorf("manifest layer %d is %s (%d bytes), result says %s (%d)", i, ld.Digest, ld.Size, res.Layers[i].Digest, res.Layers[i].Size)
		}
	}

	// What the layers hold: no entry under a merged-/usr directory, no
	// setuid or setgid bit, times normalized.
	hdrs := layerHeaders(t, img)
	fsl := hdrs[0]
	for name, want := range map[string]string{"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "usr/lib/libfoo.so.1": "foo/libfoo.so.1", "etc/alternatives/tool": "/bin/tool"} {
		if h := fsl[name]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != want {
			t.Errorf("filesystem layer %s = %+v, want a link to %s", name, h, want)
		}
	}
	if fsl["sbin"] != nil {
		t.Errorf("sbin linked though no package ships usr/sbin")
	}
	for _, name := range []string{"dev/", "proc/", "sys/", "run/", "root/", "home/", "var/lib/dpkg/status.d/tool"} {
		if fsl[name] == nil {
			t.Errorf("filesystem layer lacks %s", name)
		}
	}
	if fsl["tmp/"] != nil {
		t.Errorf("filesystem layer writes tmp/, which base-files ships")
	}
	found := map[string]*tar.Header{}
	for i, layer := range hdrs {
		for name, h := range layer {
			if h.ModTime.Unix() != l.Epoch && i == 0 {
				t.Errorf("filesystem layer %s dated %v", name, h.ModTime)
			}
			if h.Uname != "" || h.Gname != "" {
				t.Errorf("%s carries owner names %q:%q", name, h.Uname, h.Gname)
			}
			if i == 0 {
				continue
			}
			for _, m := range mergedUsr {
				if name == m || strings.HasPrefix(name, m+"/") {
					t.Errorf("package layer %d writes %s, not under usr/", i, name)
				}
			}
			if h.Mode&0o6000 != 0 {
				t.Errorf("%s keeps mode %o", name, h.Mode)
			}
			found[name] = h
		}
	}
	for name, mode := range map[string]int64{"usr/bin/su": 0o755, "usr/bin/wall": 0o755, "usr/bin/tool": 0o755, "tmp/": 0o1777} {
		if h := found[name]; h == nil || h.Mode != mode {
			t.Errorf("%s: %+v, want mode %o", name, h, mode)
		}
	}
	if h := found["usr/bin/tool-alias"]; h == nil || h.Typeflag != tar.TypeLink || h.Linkname != "usr/bin/tool" {
		t.Errorf("hard link %+v, want one to usr/bin/tool", h)
	}
	if h := found["usr/lib64/ld-foo.so.2"]; h == nil || h.Linkname != "/usr/lib/foo/libfoo.so.1" {
		t.Errorf("lib64 link %+v", h)
	}

	// The root filesystem a runtime would see.
	root := t.TempDir()
	if err := image.UnpackRootfs(img, root); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			t.Error(err)
		}
		return string(b)
	}
	if got := read("usr/bin/tool"); got != "#!/bin/sh\necho tool\n" {
		t.Errorf("usr/bin/tool = %q", got)
	}
	if got := read("bin/tool"); got != "#!/bin/sh\necho tool\n" {
		t.Errorf("bin/tool through the /bin link = %q", got)
	}
	if target, err := os.Readlink(filepath.Join(root, "bin")); err != nil || target != "usr/bin" {
		t.Errorf("/bin -> %q, %v", target, err)
	}
	if got := read("usr/lib/libfoo.so.1"); got != "\x7fELF foo" {
		t.Errorf("lock link reads %q", got)
	}
	for link, want := range map[string]string{"etc/alternatives/tool": "usr/bin/tool", "lib64/ld-foo.so.2": "usr/lib/foo/libfoo.so.1", "usr/lib/libfoo.so.1": "usr/lib/foo/libfoo.so.1"} {
		if got, err := resolveIn(root, link); err != nil || got != want {
			t.Errorf("/%s resolves to /%s, %v; want /%s", link, got, err, want)
		}
	}
	if got := read("lib/foo.conf"); got != "threads=1\n" {
		t.Errorf("lib/foo.conf = %q", got)
	}
	a, err1 := os.Stat(filepath.Join(root, "usr/bin/tool"))
	b, err2 := os.Stat(filepath.Join(root, "usr/bin/tool-alias"))
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Errorf("tool-alias is not a hard link of tool: %v %v", err1, err2)
	}
	if fi, err := os.Stat(filepath.Join(root, "usr/bin/su")); err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("su: %v, %v", fi, err)
	}
	for name, mode := range map[string]os.FileMode{"tmp": 0o777 | os.ModeSticky, "proc": 0o555, "sys": 0o555, "root": 0o700, "dev": 0o755, "run": 0o755, "home": 0o755} {
		if fi, err := os.Lstat(filepath.Join(root, name)); err != nil || !fi.IsDir() || fi.Mode()&(os.ModePerm|os.ModeSticky) != mode {
			t.Errorf("/%s: %v, %v; want a directory of mode %v", name, fi, err, mode)
		}
	}
	for _, p := range pkgs {
		want := controlFor(p.Name, p.Version) // base-files' lacks its newline in the package
		if got := read("var/lib/dpkg/status.d/" + p.Name); got != want {
			t.Errorf("status.d/%s = %q, want %q", p.Name, got, want)
		}
	}
}

// resolveIn follows the links of the slash path p inside the root
// filesystem at root, an absolute target from root, as a process
// chrooted there would, and returns the path it names.
func resolveIn(root, p string) (string, error) {
	parts := strings.Split(p, "/")
	for hops := 0; hops < 40; hops++ {
		cur := ""
		moved := false
		for i, part := range parts {
			next := path.Join(cur, part)
			fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(next)))
			if err != nil {
				return "", err
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(next)))
				if err != nil {
					return "", err
				}
				if !path.IsAbs(target) {
					target = path.Join("/", cur, target)
				}
				rest := path.Join(append([]string{target}, parts[i+1:]...)...)
				parts = strings.Split(strings.TrimPrefix(path.Clean(rest), "/"), "/")
				moved = true
				break
			}
			cur = next
		}
		if !moved {
			return cur, nil
		}
	}
	return "", fmt.Errorf("%s: too many links", p)
}

// buildDigest builds l into a new directory and returns the result.
func buildDigest(t *testing.T, l *Lock, opts BuildOptions) *Result {
	t.Helper()
	res, err := Build(context.Background(), l, filepath.Join(t.TempDir(), "base"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestBuildIsDeterministic(t *testing.T) {
	pkgs := samplePackages(t)
	l := lockOf(t, sampleLinks, pkgs...)
	cache := cacheWith(t, pkgs...)
	a := buildDigest(t, l, BuildOptions{Cache: cache, Layers: 3, Jobs: 1})
	b := buildDigest(t, l, BuildOptions{Cache: cache, Layers: 3, Jobs: 8})
	if a.Digest != b.Digest || !reflect.DeepEqual(a, b) {
		t.Errorf("two builds differ:\n%+v\n%+v", a, b)
	}
	// The number of layers changes the image, as documented.
	if c := buildDigest(t, l, BuildOptions{Cache: cache, Layers: 1}); c.Digest == a.Digest || len(c.Layers) != 2 {
		t.Errorf("one-layer build: %+v", c)
	}
	// More layers than packages: one per package.
	if c := buildDigest(t, l, BuildOptions{Cache: cache, Layers: 10}); c.Digest != a.Digest {
		t.Errorf("10 layers for 3 packages gives %s, 3 layers %s", c.Digest, a.Digest)
	}
}

const childEnv = "BASE_TEST_BUILD_CHILD"

func TestBuildIsIndependentOfHostState(t *testing.T) {
	if spec := os.Getenv(childEnv); spec != "" {
		// The child: build the lock at spec with the cache and output
		// the parent named, under other host settings, and print the
		// digest.
		syscall.Umask(0o077)
		if _, off := time.Now().Zone(); off != 9*3600 {
			t.Fatalf("TZ=%s did not take effect", os.Getenv("TZ"))
		}
		lockPath, cacheDir, out := spec, os.Getenv(childEnv+"_CACHE"), os.Getenv(childEnv+"_OUT")
		b, err := os.ReadFile(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ParseLock(lockPath, b)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Build(context.Background(), l, out, BuildOptions{Cache: Cache{Dir: cacheDir}, Layers: 3})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("digest=%s\n", res.Digest)
		return
	}
	pkgs := samplePackages(t)
	l := lockOf(t, sampleLinks, pkgs...)
	cache := cacheWith(t, pkgs...)
	want := buildDigest(t, l, BuildOptions{Cache: cache, Layers: 3})

	dir := t.TempDir()
	lockPath := filepath.Join(dir, "test.lock.json")
	b, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lockPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBuildIsIndependentOfHostState$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		childEnv+"="+lockPath, childEnv+"_CACHE="+cache.Dir, childEnv+"_OUT="+filepath.Join(dir, "child-base"),
		"TZ=Asia/Tokyo", "LC_ALL=tr_TR.UTF-8", "LANG=tr_TR.UTF-8", "GOMAXPROCS=1")
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child build: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "digest="+want.Digest.String()+"\n") {
		t.Errorf("child build under TZ=Asia/Tokyo, umask 077, LC_ALL=tr_TR.UTF-8 gives\n%s\nwant digest=%s", got, want.Digest)
	}
}

func TestBuildRejectsConflicts(t *testing.T) {
	usr := []debEntry{dir("./"), dir("./usr/"), dir("./usr/bin/"), dir("./usr/share/")}
	with := func(es ...debEntry) []debEntry { return append(append([]debEntry(nil), usr...), es...) }
	cases := []struct {
		name   string
		a, b   []debEntry
		want   string // "" when the two packages go together
		layers []int
	}{
		{"different bytes", with(file("./usr/share/x", "1")), with(file("./usr/share/x", "2")), "/usr/share/x is shipped differently by liba and libb", nil},
		{"different bytes under /bin and /usr/bin", with(dir("./bin/"), file("./bin/x", "1")), with(file("./usr/bin/x", "2")), "/usr/bin/x is shipped differently by liba and libb", nil},
		{"different mode", with(debEntry{Name: "./usr/bin/x", Mode: 0o755, Body: "1"}), with(file("./usr/bin/x", "1")), "/usr/bin/x is shipped differently", nil},
		{"file and directory", with(file("./usr/share/x", "1")), with(dir("./usr/share/x/")), "/usr/share/x is shipped differently", nil},
		{"file and link", with(file("./usr/share/x", "1")), with(symlink("./usr/share/x", "y")), "/usr/share/x is shipped differently", nil},
		{"links to other targets", with(symlink("./usr/share/x", "y")), with(symlink("./usr/share/x", "z")), "/usr/share/x is shipped differently", nil},
		{"identical bytes", with(file("./usr/share/x", "1")), with(file("./usr/share/x", "1")), "", nil},
		{"identical under /bin and /usr/bin", with(dir("./bin/"), file("./bin/x", "1")), with(file("./usr/bin/x", "1")), "", nil},
		{"identical links", with(symlink("./usr/share/x", "y")), with(symlink("./usr/share/x", "y")), "", nil},
		{"directories of other modes", with(debEntry{Name: "./usr/share/d/", Type: tar.TypeDir, Mode: 0o700}), with(dir("./usr/share/d/")), "", nil},
	}
	for _, c := range cases {
		for _, layers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d layers", c.name, layers), func(t *testing.T) {
				a, b := newPkg(t, "liba", 10, c.a...), newPkg(t, "libb", 10, c.b...)
				l := lockOf(t, nil, a, b)
				parent := t.TempDir()
				out := filepath.Join(parent, "base")
				res, err := Build(context.Background(), l, out, BuildOptions{Cache: cacheWith(t, a, b), Layers: layers})
				if c.want == "" {
					if err != nil {
						t.Fatal(err)
					}
					root := t.TempDir()
					if err := image.UnpackRootfs(openBuilt(t, out, res), root); err != nil {
						t.Fatal(err)
					}
					return
				}
				if !errors.Is(err, ErrTree) || !reject.Is(err) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want ErrTree %q", err, c.want)
				}
				noLeftovers(t, parent)
			})
		}
	}
}

func TestBuildChecksLinks(t *testing.T) {
	lib := newPkg(t, "libblas3", 10, dir("./"), dir("./usr/"), dir("./usr/lib/"), dir("./usr/lib/blas/"),
		file("./usr/lib/blas/libblas.so.3", "blas"), symlink("./usr/lib/blas/libblas.so", "libblas.so.3"))
	link := func(p, target string) Link { return Link{Path: p, Target: target, Why: "a postinst"} }
	cases := []struct {
		name  string
		links []Link
		want  string
	}{
		{"relative", []Link{link("usr/lib/libblas.so.3", "blas/libblas.so.3")}, ""},
		{"absolute", []Link{link("usr/lib/libblas.so.3", "/usr/lib/blas/libblas.so.3")}, ""},
		{"through /lib", []Link{link("usr/lib/libblas.so.3", "/lib/blas/libblas.so.3")}, ""},
		{"to a directory", []Link{link("usr/blas", "lib/blas")}, ""},
		{"to a package's link", []Link{link("usr/lib/libblas.so", "blas/libblas.so")}, ""},
		{"chain of links", []Link{link("usr/lib/a", "b"), link("usr/lib/b", "blas/libblas.so.3")}, ""},
		{"new directory", []Link{link("etc/alternatives/libblas.so.3", "/usr/lib/blas/libblas.so.3")}, ""},
		{"dangling", []Link{link("usr/lib/libblas.so.3", "blas/libblas.so.4")}, "links[0]: /usr/lib/libblas.so.3 -> blas/libblas.so.4 points to nothing"},
		{"dangling second", []Link{link("usr/lib/a", "blas"), link("usr/lib/b", "nothing/here")}, "links[1]: /usr/lib/b -> nothing/here points to nothing"},
		{"relative from the wrong directory", []Link{link("usr/lib/libblas.so.3", "usr/lib/blas/libblas.so.3")}, "points to nothing"},
		{"loop", []Link{link("usr/lib/a", "b"), link("usr/lib/b", "a")}, "points to nothing"},
		{"over a package's file", []Link{link("usr/lib/blas/libblas.so.3", "x")}, "links[0]: base tree is inconsistent: /usr/lib/blas/libblas.so.3 is already shipped by libblas3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := lockOf(t, c.links, lib)
			parent := t.TempDir()
			out := filepath.Join(parent, "base")
			res, err := Build(context.Background(), l, out, BuildOptions{Cache: cacheWith(t, lib)})
			if c.want != "" {
				if !errors.Is(err, ErrTree) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v, want ErrTree %q", err, c.want)
				}
				noLeftovers(t, parent)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if err := image.UnpackRootfs(openBuilt(t, out, res), root); err != nil {
				t.Fatal(err)
			}
			for _, k := range c.links {
				if got, err := resolveIn(root, k.Path); err != nil {
					t.Errorf("/%s does not resolve in the root filesystem: %v", k.Path, err)
				} else if got != "usr/lib/blas/libblas.so.3" && got != "usr/lib/blas" {
					t.Errorf("/%s resolves to /%s", k.Path, got)
				}
			}
		})
	}
}

func TestBuildRejectsBadPackages(t *testing.T) {
	good := newPkg(t, "liba", 10, dir("./"), file("./a", "a"))
	cases := []struct {
		name  string
		deb   []byte // stored in the cache at the lock's sha256
		gone  bool   // nothing in the cache
		pkg   testPkg
		is    error
		want  string
		setup func(out string)
	}{
		{"cached bytes differ", []byte("other bytes"), false, good, ErrMismatch, "liba 1.0-1", nil},
		{"not cached", nil, true, good, os.ErrNotExist, "liba", nil},
		{"not a deb", nil, false, pkgOf("liba", 1, []byte("not a deb")), ErrDeb, "not an ar archive", nil},
		{"control names another package", nil, false, pkgOf("liba", 1, makeDeb(t, controlFor("libz", "1.0-1"), ".xz", nil)), ErrDeb, `names package "libz"`, nil},
		{"control names another version", nil, false, pkgOf("liba", 1, makeDeb(t, controlFor("liba", "2.0-1"), ".xz", nil)), ErrDeb, `names version "2.0-1"`, nil},
		{"device", nil, false, newPkg(t, "liba", 1, debEntry{Name: "./dev/null", Type: tar.TypeChar}), ErrDeb, "tar type", nil},
		{"fifo", nil, false, newPkg(t, "liba", 1, debEntry{Name: "./run/fifo", Type: tar.TypeFifo}), ErrDeb, "tar type", nil},
		{"entry leaving the root", nil, false, newPkg(t, "liba", 1, file("./../etc/passwd", "x")), ErrDeb, "clean slash path", nil},
		{"absolute entry", nil, false, newPkg(t, "liba", 1, file("/etc/passwd", "x")), ErrDeb, "clean slash path", nil},
		{"hard link to nothing", nil, false, newPkg(t, "liba", 1, debEntry{Name: "./b", Type: tar.TypeLink, Link: "./a"}), ErrDeb, "hard link", nil},
		{"hard link to a later file", nil, false, newPkg(t, "liba", 1, debEntry{Name: "./b", Type: tar.TypeLink, Link: "./a"}, file("./a", "a")), ErrDeb, "hard link", nil},
		{"corrupt data", nil, false, pkgOf("liba", 1, arArchive(arMember{"debian-binary", []byte("2.0\n")}, arMember{"control.tar.gz", controlTar(t, controlFor("liba", "1.0-1"))},
			arMember{"data.tar.gz", []byte("not gzip")})), ErrDeb, "data.tar.gz", nil},
		{"output exists", nil, false, good, nil, "already exists", func(out string) { os.Mkdir(out, 0o755) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache := cacheWith(t, c.pkg)
			if c.deb != nil {
				if err := os.WriteFile(cache.Path(c.pkg.SHA256), c.deb, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if c.gone {
				os.Remove(cache.Path(c.pkg.SHA256))
			}
			parent := t.TempDir()
			out := filepath.Join(parent, "base")
			if c.setup != nil {
				c.setup(out)
			}
			_, err := Build(context.Background(), lockOf(t, nil, c.pkg), out, BuildOptions{Cache: cache})
			if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %v %q", err, c.is, c.want)
			}
			if c.setup == nil {
				noLeftovers(t, parent)
			}
		})
	}
}

func TestBuildStopsWhenCancelled(t *testing.T) {
	pkgs := samplePackages(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parent := t.TempDir()
	_, err := Build(ctx, lockOf(t, nil, pkgs...), filepath.Join(parent, "base"), BuildOptions{Cache: cacheWith(t, pkgs...)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	noLeftovers(t, parent)
}

func TestGroups(t *testing.T) {
	pkgs := func(sizes ...int64) *Lock {
		l := &Lock{}
		for i, s := range sizes {
			l.Packages = append(l.Packages, Package{Name: fmt.Sprintf("p%02d", i), InstalledSize: s})
		}
		return l
	}
	cases := []struct {
		name string
		lock *Lock
		n    int
		want [][]string // nil: check only the properties
	}{
		{"largest first into the lightest", pkgs(10, 7, 5, 3, 1), 2, [][]string{{"p00", "p03"}, {"p01", "p02", "p04"}}},
		{"sizes 0 count as 1", pkgs(0, 0, 0, 0, 0), 3, [][]string{{"p00", "p03"}, {"p01", "p04"}, {"p02"}}},
		{"ties go to the first", pkgs(5, 5, 5, 5), 2, [][]string{{"p00", "p02"}, {"p01", "p03"}}},
		{"more layers than packages", pkgs(3, 2, 1), 8, [][]string{{"p00"}, {"p01"}, {"p02"}}},
		{"one layer", pkgs(1, 9, 4), 1, [][]string{{"p00", "p01", "p02"}}},
		{"one huge package", pkgs(1000, 1, 1, 1, 1), 2, [][]string{{"p00"}, {"p01", "p02", "p03", "p04"}}},
		{"many", pkgs(903, 12, 5, 77, 0, 3000, 45, 45, 45, 1, 800, 2, 64, 64, 5000, 9, 130, 130, 1, 7), 4, nil},
		{"many into more", pkgs(903, 12, 5, 77, 0, 3000, 45, 45, 45, 1, 800, 2, 64, 64, 5000, 9, 130, 130, 1, 7), 8, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Groups(c.lock, c.n)
			if again := Groups(c.lock, c.n); !reflect.DeepEqual(g, again) {
				t.Errorf("two calls differ: %v vs %v", g, again)
			}
			if want := min(c.n, len(c.lock.Packages)); len(g) != want {
				t.Fatalf("%d groups, want %d", len(g), want)
			}
			var names [][]string
			seen := map[string]int{}
			var weights []int64
			var heaviest int64
			for _, grp := range g {
				var ns []string
				var w int64
				for _, p := range grp {
					ns = append(ns, p.Name)
					seen[p.Name]++
					w += max(p.InstalledSize, 1)
					heaviest = max(heaviest, max(p.InstalledSize, 1))
				}
				if !sort.StringsAreSorted(ns) {
					t.Errorf("group %v not in name order", ns)
				}
				if len(ns) == 0 {
					t.Errorf("empty group")
				}
				names = append(names, ns)
				weights = append(weights, w)
			}
			for _, p := range c.lock.Packages {
				if seen[p.Name] != 1 {
					t.Errorf("%s is in %d groups", p.Name, seen[p.Name])
				}
			}
			// Greedy balance: no two groups differ by more than the
			// heaviest package.
			lo, hi := weights[0], weights[0]
			for _, w := range weights {
				lo, hi = min(lo, w), max(hi, w)
			}
			if hi-lo > heaviest {
				t.Errorf("weights %v differ by more than the heaviest package (%d)", weights, heaviest)
			}
			if c.want != nil && !reflect.DeepEqual(names, c.want) {
				t.Errorf("groups %v, want %v", names, c.want)
			}
		})
	}
}
