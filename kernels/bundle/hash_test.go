package bundle

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var timeZero = time.Unix(0, 0)

var sampleBundle = map[string]string{
	"manifest.toml":              "bundle_id = \"x\"\n",
	"kernels/silu_and_mul.py":    "def silu_and_mul(x, out):\n    pass\n",
	"kernels/a-c.py":             "# a-c\n",
	"kernels/a.b":                "a.b\n",
	"kernels/a/b.py":             "# nested\n",
	"metadata/silu_and_mul.json": "{}\n",
	"README.md":                  "readme\n",
	"é/ünïcode.py":               "# non-ascii path\n",
}

func hashOf(t *testing.T, root string) string {
	t.Helper()
	h, err := ContentHash(root)
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func TestPathLessMatchesPathlib(t *testing.T) {
	paths := []string{"a.b", "a-c", "a/c", "a/b", "a", "b/a", "a/b/c", "ab", "a0"}
	sort.Slice(paths, func(i, j int) bool { return PathLess(paths[i], paths[j]) })
	want := []string{"a", "a/b", "a/b/c", "a/c", "a-c", "a.b", "a0", "ab", "b/a"}
	if strings.Join(paths, " ") != strings.Join(want, " ") {
		t.Fatalf("order = %v, want %v", paths, want)
	}
}

func TestContentHashInvariants(t *testing.T) {
	base := t.TempDir()
	a := filepath.Join(base, "one")
	writeTree(t, a, sampleBundle)
	want := hashOf(t, a)

	t.Run("outer directory name does not matter", func(t *testing.T) {
		b := filepath.Join(base, "other-name")
		writeTree(t, b, sampleBundle)
		if got := hashOf(t, b); got != want {
			t.Fatalf("hash changed with the directory name: %s vs %s", got, want)
		}
	})
	t.Run("modes and mtimes do not matter", func(t *testing.T) {
		p := filepath.Join(a, "README.md")
		os.Chmod(p, 0o600)
		os.Chtimes(p, timeZero, timeZero)
		if got := hashOf(t, a); got != want {
			t.Fatal("hash changed with mode or mtime")
		}
		os.Chmod(p, 0o644)
	})
	t.Run("symlinks are skipped and never followed", func(t *testing.T) {
		outside := filepath.Join(base, "secret")
		writeTree(t, outside, map[string]string{"key": "secret"})
		link := filepath.Join(a, "link")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		fileLink := filepath.Join(a, "kernels", "filelink.py")
		if err := os.Symlink(filepath.Join(outside, "key"), fileLink); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(link)
		defer os.Remove(fileLink)
		if got := hashOf(t, a); got != want {
			t.Fatal("hash changed when symlinks were added")
		}
	})
	t.Run("caches and bytecode are skipped", func(t *testing.T) {
		extra := map[string]string{
			"kernels/__pycache__/x.cpython-311.pyc": "bytecode",
			".git/HEAD":                             "ref",
			"kernels/y.pyc":                         "bytecode",
			"kernels/y.pyo":                         "bytecode",
			"kernels/._silu_and_mul.py":             "appledouble",
		}
		writeTree(t, a, extra)
		defer func() {
			for rel := range extra {
				os.Remove(filepath.Join(a, rel))
			}
		}()
		if got := hashOf(t, a); got != want {
			t.Fatal("hash changed when skipped files were added")
		}
	})
	t.Run("a fifo is skipped", func(t *testing.T) {
		p := filepath.Join(a, "pipe")
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		defer os.Remove(p)
		if got := hashOf(t, a); got != want {
			t.Fatal("hash changed when a fifo was added")
		}
	})
	t.Run("editing any file changes the hash", func(t *testing.T) {
		p := filepath.Join(a, "README.md")
		os.WriteFile(p, []byte("readme!\n"), 0o644)
		defer os.WriteFile(p, []byte(sampleBundle["README.md"]), 0o644)
		if got := hashOf(t, a); got == want {
			t.Fatal("hash did not change when README.md changed")
		}
	})
	t.Run("moving content between files changes the hash", func(t *testing.T) {
		c := filepath.Join(base, "moved")
		moved := map[string]string{}
		for k, v := range sampleBundle {
			moved[k] = v
		}
		moved["README.md"] = "readme\nx"
		moved["manifest.toml"] = "undle_id = \"x\"\n"
		writeTree(t, c, moved)
		if got := hashOf(t, c); got == want {
			t.Fatal("length prefixes do not separate file boundaries")
		}
	})
}

func TestCommittedHashSkipsOnlyTopLevelReceipt(t *testing.T) {
	base := t.TempDir()
	writeTree(t, base, sampleBundle)
	plain := hashOf(t, base)
	writeTree(t, base, map[string]string{CarrierReceiptName: "{}"})
	withReceipt := hashOf(t, base)
	if withReceipt == plain {
		t.Fatal("the content hash must cover the carrier receipt")
	}
	committed, err := CommittedContentHash(base)
	if err != nil {
		t.Fatal(err)
	}
	if committed.String() != plain {
		t.Fatal("the committed hash must leave out the top-level carrier receipt")
	}
	writeTree(t, base, map[string]string{"deep/" + CarrierReceiptName: "{}"})
	deeper, _ := CommittedContentHash(base)
	if deeper == committed {
		t.Fatal("a carrier receipt below the top level must still be hashed")
	}
}

func TestContentHashRejects(t *testing.T) {
	t.Run("empty directory", func(t *testing.T) {
		_, err := ContentHash(t.TempDir())
		if !errors.Is(err, ErrNoFiles) {
			t.Fatalf("err = %v, want ErrNoFiles", err)
		}
	})
	t.Run("only skipped files", func(t *testing.T) {
		d := t.TempDir()
		writeTree(t, d, map[string]string{"__pycache__/a.pyc": "x", "b.pyc": "y"})
		if _, err := ContentHash(d); !errors.Is(err, ErrNoFiles) {
			t.Fatalf("err = %v, want ErrNoFiles", err)
		}
	})
	t.Run("only the receipt, committed", func(t *testing.T) {
		d := t.TempDir()
		writeTree(t, d, map[string]string{CarrierReceiptName: "{}"})
		if _, err := CommittedContentHash(d); !errors.Is(err, ErrNoFiles) {
			t.Fatalf("err = %v, want ErrNoFiles", err)
		}
	})
	t.Run("root is a file", func(t *testing.T) {
		d := t.TempDir()
		p := filepath.Join(d, "f")
		os.WriteFile(p, []byte("x"), 0o644)
		if _, err := ContentHash(p); err == nil {
			t.Fatal("hashing a file as a bundle succeeded")
		}
	})
	t.Run("root is a symlink", func(t *testing.T) {
		d := t.TempDir()
		writeTree(t, filepath.Join(d, "real"), sampleBundle)
		link := filepath.Join(d, "link")
		os.Symlink(filepath.Join(d, "real"), link)
		if _, err := ContentHash(link); err == nil {
			t.Fatal("a symlinked bundle root was followed")
		}
	})
	t.Run("unreadable file", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads files whatever their mode")
		}
		d := t.TempDir()
		writeTree(t, d, map[string]string{"a.py": "x"})
		os.Chmod(filepath.Join(d, "a.py"), 0)
		if _, err := ContentHash(d); err == nil || !strings.Contains(err.Error(), "a.py") {
			t.Fatalf("err = %v, want an error naming a.py", err)
		}
	})
	t.Run("non-UTF-8 path", func(t *testing.T) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "bad\xff.py"), []byte("x"), 0o644); err != nil {
			t.Skipf("filesystem refuses non-UTF-8 names: %v", err)
		}
		if _, err := ContentHash(d); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Fatalf("err = %v, want a UTF-8 error", err)
		}
	})
}

// referenceHasher is an independent implementation of the bundle content
// hash written from the specification in Python with pathlib, as upstream
// computes it. The Go implementation must agree with it byte for byte.
const referenceHasher = `
import hashlib, sys
from pathlib import Path
root = Path(sys.argv[1])
committed = len(sys.argv) > 2
h = hashlib.sha256()
for p in sorted(root.rglob("*")):
    if p.is_symlink() or not p.is_file():
        continue
    rel = p.relative_to(root)
    if any(part in ("__pycache__", ".git") for part in rel.parts):
        continue
    if p.suffix in (".pyc", ".pyo") or p.name.startswith("._"):
        continue
    if committed and rel.as_posix() == ".cacheon-native-artifact.json":
        continue
    data = p.read_bytes()
    path = rel.as_posix().encode("utf-8")
    h.update(len(path).to_bytes(4, "big")); h.update(path)
    h.update(len(data).to_bytes(8, "big")); h.update(data)
print(h.hexdigest())
`

func TestMatchesPathlibReference(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH; the cross-check needs pathlib")
	}
	d := t.TempDir()
	tree := map[string]string{CarrierReceiptName: "{}", "z/" + CarrierReceiptName: "{}", "__pycache__/q.pyc": "b"}
	for k, v := range sampleBundle {
		tree[k] = v
	}
	writeTree(t, d, tree)
	os.Symlink(filepath.Join(d, "README.md"), filepath.Join(d, "alias.md"))
	for _, committed := range []bool{false, true} {
		args := []string{"-c", referenceHasher, d}
		hash := ContentHash
		if committed {
			args = append(args, "committed")
			hash = CommittedContentHash
		}
		out, err := exec.Command(python, args...).Output()
		if err != nil {
			t.Fatalf("reference hasher: %v", err)
		}
		got, err := hash(d)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSpace(string(out)); got.String() != want {
			t.Fatalf("committed=%v: Go %s, pathlib reference %s", committed, got, want)
		}
	}
}

// A tree held in memory hashes as the same tree on disk: skipped paths
// left out, paths in PathLess order (not byte order), the same framing.
func TestContentHashOfEqualsTheDirectoryHash(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
	}{
		{"snapshot fixture", snapshotTree},
		{"order differs from byte order", map[string]string{"a/b.py": "1", "a.b": "2", "a-b/c": "3", "a/b/c.py": "4", "ä.py": "5"}},
		{"skipped files stay out", map[string]string{"k.py": "x", "__pycache__/k.cpython-312.pyc": "junk", "pkg/.git/HEAD": "ref", "pkg/m.pyc": "junk", "._k.py": "apple", "pkg/m.py": "y"}},
		{"empty files", map[string]string{"a": "", "b/c": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			writeTree(t, d, tt.files)
			want, err := ContentHash(d)
			if err != nil {
				t.Fatal(err)
			}
			var mem []MemFile
			for p, b := range tt.files {
				mem = append(mem, MemFile{Path: p, Data: []byte(b)})
			}
			got, err := ContentHashOf(mem)
			if err != nil || got != want {
				t.Fatalf("ContentHashOf = %s, %v; ContentHash of the directory = %s", got, err, want)
			}
		})
	}
	for _, bad := range []struct {
		name  string
		files []MemFile
	}{
		{"only skipped files", []MemFile{{Path: "x.pyc"}}},
		{"a path twice", []MemFile{{Path: "a", Data: []byte("1")}, {Path: "a", Data: []byte("2")}}},
		{"invalid UTF-8", []MemFile{{Path: "\xff"}}},
	} {
		if _, err := ContentHashOf(bad.files); err == nil {
			t.Errorf("%s: ContentHashOf accepted it", bad.name)
		}
	}
}
