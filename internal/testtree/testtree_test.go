package testtree

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCopyKeepsOrDereferencesLinks(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "pkg", "__pycache__"), 0o755)
	os.WriteFile(filepath.Join(src, "pkg", "a.py"), []byte("a = 1\n"), 0o644)
	os.WriteFile(filepath.Join(src, "pkg", "__pycache__", "a.pyc"), []byte("x"), 0o644)
	os.Symlink("a.py", filepath.Join(src, "pkg", "link.py"))

	for _, deref := range []bool{false, true} {
		dst := filepath.Join(t.TempDir(), "copy")
		if err := copyTree(src, dst, deref); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "pkg", "a.py")); err != nil || string(b) != "a = 1\n" {
			t.Fatalf("a.py = %q, %v", b, err)
		}
		if _, err := os.Stat(filepath.Join(dst, "pkg", "__pycache__")); !os.IsNotExist(err) {
			t.Fatalf("bytecode cache copied (err %v)", err)
		}
		info, err := os.Lstat(filepath.Join(dst, "pkg", "link.py"))
		if err != nil {
			t.Fatal(err)
		}
		if isLink := info.Mode()&os.ModeSymlink != 0; isLink == deref {
			t.Fatalf("dereference=%v: link.py is a link: %v", deref, isLink)
		}
	}
}

func TestCopyRefusesSpecialFiles(t *testing.T) {
	src := t.TempDir()
	os.Symlink("/dev/null", filepath.Join(src, "dev"))
	if err := copyTree(src, filepath.Join(t.TempDir(), "copy"), true); err == nil {
		t.Fatal("a link to a device was copied")
	}
}

func TestDeclareTokenBound(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "metadata"), 0o755)
	doc := filepath.Join(dir, "metadata", "k.json")
	os.WriteFile(doc, []byte(`{"op": "norm.rmsnorm", "max_last_dim": 9007199254740993, "max_num_tokens": 4096}`), 0o644)
	DeclareTokenBound(t, dir, 512)
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	// The other fields keep their values, integers past float64's exact
	// range too.
	if len(got) != 3 || got["op"] != "norm.rmsnorm" || got["max_num_tokens"] != 512.0 || !strings.Contains(string(data), "9007199254740993") {
		t.Fatalf("metadata after the bound: %s", data)
	}
}
