package evidence

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "evidence"), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPutGetRoundTrip(t *testing.T) {
	s := openStore(t)
	ref, err := s.Put("cacheon.qualification.speed-reads", "application/json", "speed-reads.v1", []byte(`{"reads":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if ref.Size != 12 || len(ref.SHA256) != 64 {
		t.Fatalf("ref %+v", ref)
	}
	got, err := s.Get(ref)
	if err != nil || string(got) != `{"reads":[]}` {
		t.Fatalf("get = %q, %v", got, err)
	}
	info, _ := os.Stat(s.Path(ref.SHA256))
	if info.Mode().Perm() != 0o444 {
		t.Fatalf("stored mode %v, want read-only", info.Mode().Perm())
	}
	if !strings.HasPrefix(s.Path(ref.SHA256), filepath.Join(s.Root(), "sha256", ref.SHA256[:2])) {
		t.Fatalf("path %s is not sharded", s.Path(ref.SHA256))
	}
	// The same bytes again are accepted.
	if again, err := s.Put(ref.Domain, ref.MediaType, ref.Schema, []byte(`{"reads":[]}`)); err != nil || again != ref {
		t.Fatalf("second put = %+v, %v", again, err)
	}
}

func TestTamperedStoreIsAConflict(t *testing.T) {
	data := []byte("evidence bytes")
	cases := []struct {
		name   string
		tamper func(t *testing.T, path string)
		getErr error
	}{
		{"different bytes", func(t *testing.T, path string) {
			os.Chmod(path, 0o644)
			os.WriteFile(path, []byte("forged bytes!!"), 0o444)
			os.Chmod(path, 0o444)
		}, ErrCorrupt},
		{"made writable", func(t *testing.T, path string) { os.Chmod(path, 0o644) }, ErrCorrupt},
		{"second hard link", func(t *testing.T, path string) { os.Link(path, path+".extra") }, ErrCorrupt},
		{"replaced by a symlink", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "x")
			os.WriteFile(other, data, 0o444)
			os.Remove(path)
			os.Symlink(other, path)
		}, ErrCorrupt},
		{"removed", func(t *testing.T, path string) { os.Remove(path) }, ErrMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t)
			ref, err := s.Put("cacheon.test", "text/plain", "t.v1", data)
			if err != nil {
				t.Fatal(err)
			}
			c.tamper(t, s.Path(ref.SHA256))
			if _, err := s.Get(ref); !errors.Is(err, c.getErr) {
				t.Fatalf("get after tamper: %v, want %v", err, c.getErr)
			}
			if c.getErr == ErrMissing {
				return
			}
			if _, err := s.Put(ref.Domain, ref.MediaType, ref.Schema, data); !errors.Is(err, ErrConflict) {
				t.Fatalf("put over tampered address: %v, want ErrConflict", err)
			}
		})
	}
}

func TestOpenAndPutRefuse(t *testing.T) {
	if _, err := Open("relative/dir", 0); err == nil {
		t.Error("relative root accepted")
	}
	if _, err := Open(t.TempDir(), HardLimit+1); err == nil {
		t.Error("limit over the hard limit accepted")
	}
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if _, err := Open(open, 0); err == nil || !strings.Contains(err.Error(), "lets others write") {
		t.Errorf("world-writable root: %v", err)
	}
	s, err := Open(filepath.Join(t.TempDir(), "small"), 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put("cacheon.test", "text/plain", "t.v1", []byte("nine byte")); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := s.Put("Not A Domain", "text/plain", "t.v1", []byte("x")); err == nil {
		t.Error("invalid domain accepted")
	}
	entries, _ := os.ReadDir(s.Root())
	if len(entries) != 0 {
		t.Errorf("refused puts left %d entries", len(entries))
	}
}
