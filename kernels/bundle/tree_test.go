package bundle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadTreeBoundsWhatTheWalkMeets: directories and ignored files count
// against limits too, so a tree of empty directories or of bytecode is
// refused before it is walked whole.
func TestReadTreeBoundsWhatTheWalkMeets(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(dir string)
		wantMsg string
	}{
		{"empty directories", func(dir string) {
			for i := 0; i <= MaxDirs; i++ {
				must(t, os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%04d", i)), 0o755))
			}
		}, "more than 1024 directories"},
		{"nested empty directories", func(dir string) {
			p := dir
			for i := 0; i <= MaxDirs; i++ {
				p = filepath.Join(p, "d")
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Skipf("mkdir at depth %d: %v", i, err)
				}
			}
		}, "directories"},
		{"ignored bytecode flood", func(dir string) {
			for i := 0; i <= MaxFiles+MaxDirs; i++ {
				must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%05d.pyc", i)), nil, 0o644))
			}
		}, "entries"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := hostileBundle(t, tc.mutate)
			_, err := ReadTree(dir)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("got %v, want an intake-limit error containing %q", err, tc.wantMsg)
			}
		})
	}
}

// TestReadTreeRefusesCollidingAndNonCanonicalNames: two paths a normalizing
// or case-insensitive file system would merge, and names that are not
// canonical UTF-8 POSIX, are refused with the paths named.
func TestReadTreeRefusesCollidingAndNonCanonicalNames(t *testing.T) {
	const nfc, nfd = "caf\u00e9.py", "cafe\u0301.py"
	tests := []struct {
		name  string
		files []string
		want  []string // substrings of the error
	}{
		{"case pair", []string{"kernels/Silu.py", "kernels/silu.py"}, []string{`"kernels/Silu.py" and "kernels/silu.py" are equal after case folding`}},
		{"full case folding", []string{"STRASSE.py", "straße.py"}, []string{`"STRASSE.py" and "straße.py"`, "case folding"}},
		{"NFC and NFD spellings", []string{nfc, nfd}, []string{"NFC normalization", nfc, nfd}},
		{"NFC and NFD directories", []string{"d/" + nfc + "/a.py", "d/" + nfd + "/b.py"}, []string{"NFC normalization"}},
		{"case pair of directories", []string{"Kernels/a.py", "kernels/b.py"}, []string{`"Kernels" and "kernels"`}},
		{"file and directory", []string{"Tok", "tok/vocab.json"}, []string{`"Tok" and "tok" are a file and a directory`}},
		{"backslash in a name", []string{`kernels\evil.py`}, []string{"not canonical POSIX"}},
		{"non-UTF-8 name", []string{"bad\xff.py"}, []string{"not valid UTF-8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := hostileBundle(t, func(dir string) {
				for _, rel := range tc.files {
					p := filepath.Join(dir, filepath.FromSlash(rel))
					must(t, os.MkdirAll(filepath.Dir(p), 0o755))
					if err := os.WriteFile(p, []byte("x = 1\n"), 0o644); err != nil {
						t.Skipf("file system refuses %q: %v", rel, err)
					}
				}
			})
			for _, rel := range tc.files {
				if !hasExactName(filepath.Join(dir, filepath.FromSlash(rel))) {
					t.Skipf("file system merged or rewrote the name %q", rel)
				}
			}
			for _, check := range []func(string) error{
				func(d string) error { _, err := ReadTree(d); return err },
				func(d string) error { _, err := Load(d); return err },
				CheckBundlePaths,
			} {
				err := check(dir)
				if !errors.Is(err, ErrPath) {
					t.Fatalf("got %v, want a path rejection", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
			}
		})
	}
}

// hasExactName reports whether the last component of p is listed, byte
// for byte, in its directory (a normalizing or case-insensitive file
// system may store another spelling).
func hasExactName(p string) bool {
	entries, err := os.ReadDir(filepath.Dir(p))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() == filepath.Base(p) {
			return true
		}
	}
	return false
}

func TestCheckBundlePathsRefusesNonCanonicalDeclaredPaths(t *testing.T) {
	dir := writeBundle(t, map[string]string{
		"manifest.toml":   header + strings.Replace(siluOp, `"kernels/silu.py"`, `"./kernels//silu.py"`, 1),
		"kernels/silu.py": "def silu_and_mul(x, out):\n    pass\n",
	})
	if _, err := Load(dir); err != nil {
		t.Fatalf("Load accepts a contained spelling: %v", err)
	}
	err := CheckBundlePaths(dir)
	if !errors.Is(err, ErrPath) || !strings.Contains(err.Error(), "ops[0].source") {
		t.Fatalf("got %v, want ops[0].source refused as non-canonical", err)
	}
	ok := writeBundle(t, map[string]string{"manifest.toml": header + siluOp, "kernels/silu.py": "x = 1\n"})
	if err := CheckBundlePaths(ok); err != nil {
		t.Fatalf("canonical bundle refused: %v", err)
	}
}

// TestTreeContentHashIsTheBundleHash: hashing the inventory the intake
// walk took gives the content hash of the directory, byte for byte.
func TestTreeContentHashIsTheBundleHash(t *testing.T) {
	// A bundle built here (the test must not depend on repository files
	// Bazel does not stage), with entries both hashes leave out.
	dir := t.TempDir()
	for rel, data := range map[string]string{
		"manifest.toml":    "bundle_id = \"x\"\n",
		"kernels/silu.py":  "def f():\n    return 1\n",
		"kernels/sub/b.py": "x = 2\n",
		"kernels/__pycache__/silu.cpython-311.pyc": "bytecode",
		"metadata/a.json":                          "{}",
		".cacheon-native-artifact.json":            "{}",
		"z/.cacheon-native-artifact.json":          "{}",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := ReadTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, committed := range []bool{false, true} {
		want, err := ContentHash(dir)
		if committed {
			want, err = CommittedContentHash(dir)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := tree.ContentHash(committed)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("committed=%v: tree hash %s, bundle hash %s", committed, got, want)
		}
	}
}

// BenchmarkReadTree walks trees of 256, 512 and 1024 directories holding
// one file each: cost grows with the tree.
func BenchmarkReadTree(b *testing.B) {
	for _, n := range []int{256, 512, 1024} {
		dir := b.TempDir()
		for i := 0; i < n; i++ {
			p := filepath.Join(dir, fmt.Sprintf("d%04d", i))
			if err := os.Mkdir(p, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "k.py"), []byte("x = 1\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("dirs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := ReadTree(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
