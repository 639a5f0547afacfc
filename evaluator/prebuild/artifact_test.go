package prebuild

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sealed seals two made-up output files (no compiler needed) and returns
// the artifact.
func sealed(t *testing.T) *Sealed {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(filepath.Join(out, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"00-norm_rmsnorm-default.so": "ELF library bytes", "sub/notes.txt": "build notes"} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := inventory(out)
	if err != nil {
		t.Fatal(err)
	}
	a := Artifact{Schema: ArtifactSchema, Target: "cpu", Torch: "2.0", Files: files,
		Libraries: []Library{{Slot: "norm.rmsnorm", Variant: "default", Path: "00-norm_rmsnorm-default.so",
			Sources: []File{{Path: "csrc/k.cu", SHA256: strings.Repeat("a", 64), Size: 1}}}}}
	store := filepath.Join(t.TempDir(), "store")
	t.Cleanup(func() { makeWritableAndRemove(store) }) // read-only directories
	s, err := seal(store, out, &a)
	if err != nil {
		t.Fatalf("seal: %v", err)
	}
	return s
}

// writable lets the test change a sealed file, as an attacker with the
// store's owner's rights could.
func writable(t *testing.T, s *Sealed, rel string) string {
	t.Helper()
	p := s.Path(rel)
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
		if d == s.Dir {
			break
		}
	}
	t.Cleanup(func() { makeWritableAndRemove(s.Dir) })
	return p
}

func TestSealIsContentAddressedAndReadOnly(t *testing.T) {
	s := sealed(t)
	again, err := Open(s.Dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if again.Digest != s.Digest || filepath.Base(s.Dir) != s.Digest.Hex {
		t.Fatalf("reopened %v at %s, sealed %v", again.Digest, s.Dir, s.Digest)
	}
	if d, err := s.Artifact.Digest(); err != nil || d != s.Digest {
		t.Fatalf("the digest is not the artifact's: %v %v", d, err)
	}
	for _, f := range s.Artifact.Files {
		if fi, err := os.Stat(s.Path(f.Path)); err != nil || fi.Mode().Perm()&0o222 != 0 {
			t.Fatalf("%s: %v, mode %v: want read-only", f.Path, err, fi.Mode())
		}
	}
	if _, ok := s.Library("norm.rmsnorm", "default"); !ok {
		t.Fatal("no library for the row")
	}
	if _, err := s.Bind(t.TempDir(), "activation.silu_and_mul", "default", nil); err == nil {
		t.Fatal("Bind found a library for a slot that has none")
	}
}

func TestOpenRefusesATamperedArtifact(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, s *Sealed) string // returns the directory to open
		want   string
	}{
		{"library rewritten", func(t *testing.T, s *Sealed) string {
			p := writable(t, s, "00-norm_rmsnorm-default.so")
			_ = os.Chmod(p, 0o644)
			_ = os.WriteFile(p, []byte("ELF other bytes!!"), 0o644)
			_ = os.Chmod(p, 0o444)
			_ = os.Chmod(s.Dir, 0o555)
			return s.Dir
		}, "sha256"},
		{"file added", func(t *testing.T, s *Sealed) string {
			writable(t, s, "x")
			_ = os.WriteFile(s.Path("extra.so"), []byte("x"), 0o444)
			_ = os.Chmod(s.Dir, 0o555)
			return s.Dir
		}, "extra.so is not in the inventory"},
		{"file removed", func(t *testing.T, s *Sealed) string {
			writable(t, s, "sub/notes.txt")
			_ = os.Remove(s.Path("sub/notes.txt"))
			_ = os.Chmod(filepath.Join(s.Dir, "sub"), 0o555)
			_ = os.Chmod(s.Dir, 0o555)
			return s.Dir
		}, "sub/notes.txt is missing"},
		{"made writable", func(t *testing.T, s *Sealed) string {
			writable(t, s, "x")
			_ = os.Chmod(s.Path("sub/notes.txt"), 0o644)
			return s.Dir
		}, "writable"},
		{"renamed", func(t *testing.T, s *Sealed) string {
			other := filepath.Join(filepath.Dir(s.Dir), strings.Repeat("0", 64))
			if err := os.Rename(s.Dir, other); err != nil {
				t.Fatal(err)
			}
			return other
		}, "is named"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := sealed(t)
			dir := tc.tamper(t, s)
			_, err := Open(dir)
			if !errors.Is(err, ErrSeal) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want a seal error mentioning %q", err, tc.want)
			}
		})
	}
}
