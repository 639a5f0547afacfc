package models

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// makeTree writes files (path → content) under a new directory.
func makeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "model")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestProvisionReceiptMatchesHandWrittenCanonicalJSON checks the receipt
// against digests computed from canonical JSON spelled out by hand, so the
// identity does not rest on this package's own encoding.
func TestProvisionReceiptMatchesHandWrittenCanonicalJSON(t *testing.T) {
	root := makeTree(t, map[string]string{
		"a/b":   "one",
		"a-b/x": "two",
		"a.c":   "",
	})
	r, err := Provision(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Code-point order: '-' < '.' < '/'.
	wantFiles := []File{
		{"a-b/x", 3, sha("two")},
		{"a.c", 0, sha("")},
		{"a/b", 3, sha("one")},
	}
	if !reflect.DeepEqual(r.Files, wantFiles) {
		t.Fatalf("files\n got %+v\nwant %+v", r.Files, wantFiles)
	}
	files := fmt.Sprintf(`[{"path":"a-b/x","sha256":"%s","size":3},{"path":"a.c","sha256":"%s","size":0},{"path":"a/b","sha256":"%s","size":3}]`,
		sha("two"), sha(""), sha("one"))
	content := sha(`{"domain":"cacheon.model-content","payload":{"files":` + files + `},"schema_version":1}`)
	if r.ContentDigest != content {
		t.Errorf("content digest %s, want %s", r.ContentDigest, content)
	}
	receiptJSON := `{"content_digest":"` + content + `","files":` + files + `,"schema_version":1,"type":"cacheon.model-provision"}`
	rd, err := r.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := sha(`{"domain":"cacheon.model-provision-receipt","payload":` + receiptJSON + `,"schema_version":1}`); rd != want {
		t.Errorf("receipt digest %s, want %s", rd, want)
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != receiptJSON+"\n" {
		t.Errorf("receipt bytes\n got %s\nwant %s", b, receiptJSON)
	}
}

func TestProvisionIsIndependentOfWorkerCount(t *testing.T) {
	files := make(map[string]string)
	for i := 0; i < 40; i++ {
		files[fmt.Sprintf("shard-%02d/part-%d.bin", i%7, i)] = strings.Repeat(fmt.Sprint(i), i*997)
	}
	root := makeTree(t, files)
	var first []byte
	for _, workers := range []int{1, 2, 3, 8, 64} {
		r, err := Provision(root, Options{Workers: workers})
		if err != nil {
			t.Fatalf("workers %d: %v", workers, err)
		}
		b, _ := r.Marshal()
		if first == nil {
			first = b
		} else if string(b) != string(first) {
			t.Errorf("workers %d gives another receipt", workers)
		}
	}
	for _, workers := range []int{-1, MaxWorkers + 1} {
		if _, err := Provision(root, Options{Workers: workers}); err == nil || IsRejection(err) {
			t.Errorf("workers %d: err = %v, want a usage error", workers, err)
		}
	}
}

func TestProvisionReportsProgressForEveryFile(t *testing.T) {
	root := makeTree(t, map[string]string{"a": "1", "b": "22", "c/d": "333"})
	var seen []string
	_, err := Provision(root, Options{Workers: 3, Progress: func(done, total int, f File) {
		if total != 3 || done != len(seen)+1 {
			t.Errorf("progress %d/%d after %d calls", done, total, len(seen))
		}
		seen = append(seen, f.Path)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Errorf("progress reported %v, want 3 files", seen)
	}
}

func TestProvisionRejectsUnsealableTrees(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		setup    func(t *testing.T, root string) string // returns the root to provision
		want     error
		wantPath string // relative to the root
	}{
		{
			name:  "symlink to a file",
			files: map[string]string{"config.json": "{}"},
			setup: func(t *testing.T, root string) string {
				must(t, os.Symlink("config.json", filepath.Join(root, "weights.safetensors")))
				return root
			},
			want: ErrSymlink, wantPath: "weights.safetensors",
		},
		{
			name:  "dangling symlink in a subdirectory",
			files: map[string]string{"config.json": "{}", "tok/vocab.json": "{}"},
			setup: func(t *testing.T, root string) string {
				must(t, os.Symlink("/nonexistent/blob", filepath.Join(root, "tok", "merges.txt")))
				return root
			},
			want: ErrSymlink, wantPath: "tok/merges.txt",
		},
		{
			name:  "symlink to a directory",
			files: map[string]string{"config.json": "{}"},
			setup: func(t *testing.T, root string) string {
				must(t, os.Symlink(t.TempDir(), filepath.Join(root, "shards")))
				return root
			},
			want: ErrSymlink, wantPath: "shards",
		},
		{
			name:  "hard link",
			files: map[string]string{"model.safetensors": "weights"},
			setup: func(t *testing.T, root string) string {
				must(t, os.Link(filepath.Join(root, "model.safetensors"), filepath.Join(filepath.Dir(root), "elsewhere")))
				return root
			},
			want: ErrHardlink, wantPath: "model.safetensors",
		},
		{
			name:  "FIFO",
			files: map[string]string{"config.json": "{}"},
			setup: func(t *testing.T, root string) string {
				must(t, syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644))
				return root
			},
			want: ErrSpecialFile, wantPath: "pipe",
		},
		{
			name:  ".cache directory",
			files: map[string]string{"config.json": "{}", ".cache/huggingface/download/config.json.lock": ""},
			want:  ErrCachePath, wantPath: ".cache",
		},
		{
			name:  ".cache file deep in the tree",
			files: map[string]string{"config.json": "{}", "sub/.cache": "x"},
			want:  ErrCachePath, wantPath: "sub/.cache",
		},
		{
			name:  "case-fold collision",
			files: map[string]string{"Config.json": "{}", "config.json": "{}"},
			want:  ErrCaseCollision, wantPath: "config.json",
		},
		{
			name:  "full case folding (ß folds to ss)",
			files: map[string]string{"STRASSE.txt": "a", "straße.txt": "b"},
			want:  ErrCaseCollision, wantPath: "straße.txt",
		},
		{
			name:  "NFC and NFD spellings of one name",
			files: map[string]string{"caf\u00e9.json": "a", "cafe\u0301.json": "b"},
			want:  ErrUnicodeCollision, wantPath: "caf\u00e9.json",
		},
		{
			name:  "NFC and NFD spellings of a directory",
			files: map[string]string{"caf\u00e9/a.json": "a", "cafe\u0301/b.json": "b"},
			want:  ErrUnicodeCollision, wantPath: "caf\u00e9",
		},
		{
			name:  "directory and file collide when folded",
			files: map[string]string{"Tok": "file", "tok/vocab.json": "{}"},
			want:  ErrCaseCollision, wantPath: "tok",
		},
		{
			name:  "empty tree",
			files: map[string]string{},
			setup: func(t *testing.T, root string) string {
				must(t, os.Mkdir(filepath.Join(root, "empty-dir"), 0o755))
				return root
			},
			want: ErrNoFiles, wantPath: ".",
		},
		{
			name:  "root is a symlink",
			files: map[string]string{"config.json": "{}"},
			setup: func(t *testing.T, root string) string {
				link := root + "-link"
				must(t, os.Symlink(root, link))
				return link
			},
			want: ErrSymlink, wantPath: ".",
		},
		{
			name:  "root is a file",
			files: map[string]string{"config.json": "{}"},
			setup: func(t *testing.T, root string) string { return filepath.Join(root, "config.json") },
			want:  ErrNotDirectory, wantPath: ".",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := makeTree(t, tt.files)
			if tt.setup != nil {
				root = tt.setup(t, root)
			}
			_, err := Provision(root, Options{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !IsRejection(err) {
				t.Errorf("err = %v is not a rejection", err)
			}
			var te *TreeError
			if !errors.As(err, &te) || te.Path != tt.wantPath {
				t.Fatalf("err = %#v, want a TreeError at %q", err, tt.wantPath)
			}
			if full := filepath.Join(root, filepath.FromSlash(tt.wantPath)); !strings.Contains(err.Error(), full) {
				t.Errorf("message %q does not name %s", err, full)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestProvisionDetectsMutation changes the tree in the window between
// reading a file's bytes and the closing checks, as a concurrent writer
// would, and expects a rejection naming the changed path.
func TestProvisionDetectsMutation(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(t *testing.T, root, rel string)
		wantPath string
		detail   string
	}{
		{
			name: "appended to",
			mutate: func(t *testing.T, root, rel string) {
				f, err := os.OpenFile(filepath.Join(root, rel), os.O_WRONLY|os.O_APPEND, 0)
				must(t, err)
				f.Write([]byte("more"))
				f.Close()
			},
			wantPath: "b.bin", detail: "changed while it was read",
		},
		{
			name: "rewritten in place with the same size",
			mutate: func(t *testing.T, root, rel string) {
				p := filepath.Join(root, rel)
				must(t, os.WriteFile(p, []byte("BBBBBBBB"), 0o644))
				// A writer landing on a later clock tick; tests must not
				// depend on the file system's timestamp granularity.
				later := time.Now().Add(time.Second)
				must(t, os.Chtimes(p, later, later))
			},
			wantPath: "b.bin", detail: "changed while it was read",
		},
		{
			name: "replaced by rename",
			mutate: func(t *testing.T, root, rel string) {
				p := filepath.Join(root, rel)
				must(t, os.WriteFile(p+".new", []byte("bbbbbbbb"), 0o644))
				must(t, os.Rename(p+".new", p))
			},
			wantPath: "b.bin", detail: "changed while it was read",
		},
		{
			name: "linked from elsewhere",
			mutate: func(t *testing.T, root, rel string) {
				must(t, os.Link(filepath.Join(root, rel), filepath.Join(filepath.Dir(root), "second-name")))
			},
			wantPath: "b.bin", detail: "changed while it was read",
		},
		{
			name: "made writable",
			mutate: func(t *testing.T, root, rel string) {
				must(t, os.Chmod(filepath.Join(root, rel), 0o666))
			},
			wantPath: "b.bin", detail: "changed while it was read",
		},
		{
			name: "file added elsewhere",
			mutate: func(t *testing.T, root, rel string) {
				must(t, os.WriteFile(filepath.Join(root, "c", "late.bin"), []byte("late"), 0o644))
			},
			wantPath: "c/late.bin", detail: "added while the tree was being hashed",
		},
		{
			name: "hashed file removed afterwards",
			mutate: func(t *testing.T, root, rel string) {
				must(t, os.Remove(filepath.Join(root, "a.bin")))
			},
			wantPath: "a.bin", detail: "removed while the tree was being hashed",
		},
		{
			name: "unhashed file removed",
			mutate: func(t *testing.T, root, rel string) {
				must(t, os.Remove(filepath.Join(root, "c", "d.bin")))
			},
			wantPath: "c/d.bin", detail: "removed before it was read",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := makeTree(t, map[string]string{"a.bin": "aaaaaaaa", "b.bin": "bbbbbbbb", "c/d.bin": "dddddddd"})
			fired := false
			p := &provisioner{root: root, opts: Options{Workers: 1}, afterRead: func(rel string) {
				// Files of equal size are hashed in path order with one
				// worker: a.bin, b.bin, c/d.bin. Strike once, at b.bin.
				if rel == "b.bin" && !fired {
					fired = true
					tt.mutate(t, root, rel)
				}
			}}
			_, err := p.run()
			if !fired {
				t.Fatal("the mutation never ran")
			}
			var te *TreeError
			if !errors.Is(err, ErrMutated) || !errors.As(err, &te) {
				t.Fatalf("err = %v, want ErrMutated", err)
			}
			if te.Path != tt.wantPath || !strings.Contains(te.Detail, tt.detail) {
				t.Errorf("rejected %s (%s), want %s (%s)", te.Path, te.Detail, tt.wantPath, tt.detail)
			}
			if !strings.Contains(err.Error(), filepath.Join(root, filepath.FromSlash(tt.wantPath))) {
				t.Errorf("message %q does not name the path", err)
			}
		})
	}
}

func TestProvisionUnmutatedTreePassesTheSameChecks(t *testing.T) {
	root := makeTree(t, map[string]string{"a.bin": "aaaaaaaa", "b.bin": "bbbbbbbb", "c/d.bin": "dddddddd"})
	calls := 0
	p := &provisioner{root: root, opts: Options{Workers: 1}, afterRead: func(string) { calls++ }}
	if _, err := p.run(); err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Errorf("afterRead ran %d times, want 3", calls)
	}
}

func TestExpectedContentDigestIsAHardPrecondition(t *testing.T) {
	root := makeTree(t, map[string]string{"config.json": "{}"})
	r, err := Provision(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Provision(root, Options{ExpectedContentDigest: r.ContentDigest}); err != nil {
		t.Errorf("matching expectation: %v", err)
	}
	other := sha("another tree")
	_, err = Provision(root, Options{ExpectedContentDigest: other})
	var dm *DigestMismatchError
	if !errors.As(err, &dm) || dm.Want != other || dm.Got != r.ContentDigest || !IsRejection(err) {
		t.Errorf("err = %v, want a digest mismatch rejection want %s got %s", err, other, r.ContentDigest)
	}
	for _, bad := range []string{"abc", strings.Repeat("A", 64), strings.Repeat("0", 64)} {
		if _, err := Provision(root, Options{ExpectedContentDigest: bad}); err == nil || IsRejection(err) {
			t.Errorf("expected digest %q: err = %v, want a usage error", bad, err)
		}
	}
}
