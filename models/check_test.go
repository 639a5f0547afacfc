package models

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCheckFindsEveryDifference(t *testing.T) {
	files := map[string]string{"config.json": "{}", "model.safetensors": "weights", "tok/vocab.json": "[]"}
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
		want   []Difference // paths and kinds only
	}{
		{"unchanged", func(*testing.T, string) {}, nil},
		{"changed bytes, same size", func(t *testing.T, root string) {
			must(t, os.WriteFile(filepath.Join(root, "model.safetensors"), []byte("WEIGHTS"), 0o644))
		}, []Difference{{Path: "model.safetensors", Change: Changed}}},
		{"truncated", func(t *testing.T, root string) {
			must(t, os.Truncate(filepath.Join(root, "config.json"), 0))
		}, []Difference{{Path: "config.json", Change: Changed}}},
		{"file added", func(t *testing.T, root string) {
			must(t, os.WriteFile(filepath.Join(root, "tok/merges.txt"), []byte("x"), 0o644))
		}, []Difference{{Path: "tok/merges.txt", Change: Added}}},
		{"file removed", func(t *testing.T, root string) {
			must(t, os.Remove(filepath.Join(root, "tok/vocab.json")))
		}, []Difference{{Path: "tok/vocab.json", Change: Removed}}},
		{"renamed", func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, "config.json"), filepath.Join(root, "config2.json")))
		}, []Difference{{Path: "config.json", Change: Removed}, {Path: "config2.json", Change: Added}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := makeTree(t, files)
			want := provision(t, root)
			tt.change(t, root)
			got, err := Check(root, want, Options{Workers: 2})
			if tt.want == nil {
				if err != nil || got.ContentDigest != want.ContentDigest {
					t.Fatalf("Check = %v, content digest %s vs %s", err, got.ContentDigest, want.ContentDigest)
				}
				return
			}
			var mm *MismatchError
			if !errors.As(err, &mm) || !errors.Is(err, ErrTreeMismatch) || !IsRejection(err) {
				t.Fatalf("err = %v, want a MismatchError", err)
			}
			var kinds []Difference
			for _, d := range mm.Differences {
				kinds = append(kinds, Difference{Path: d.Path, Change: d.Change})
				if !strings.Contains(d.String(), d.Path) {
					t.Errorf("difference %q does not name its path", d)
				}
			}
			if !reflect.DeepEqual(kinds, tt.want) {
				t.Errorf("differences %v, want %v", kinds, tt.want)
			}
			if !strings.Contains(err.Error(), mm.Differences[0].Path) {
				t.Errorf("message %q does not name %s", err, mm.Differences[0].Path)
			}
		})
	}
}

func TestCheckRejectsATreeThatBreaksASealingRule(t *testing.T) {
	root := makeTree(t, map[string]string{"config.json": "{}", "model.safetensors": "weights"})
	want := provision(t, root)
	target := filepath.Join(filepath.Dir(root), "outside.safetensors")
	must(t, os.WriteFile(target, []byte("weights"), 0o644))
	must(t, os.Remove(filepath.Join(root, "model.safetensors")))
	must(t, os.Symlink(target, filepath.Join(root, "model.safetensors")))
	_, err := Check(root, want, Options{})
	if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), filepath.Join(root, "model.safetensors")) {
		t.Fatalf("err = %v, want ErrSymlink naming model.safetensors", err)
	}
}

func TestCompareCarriesBothSides(t *testing.T) {
	a := &Receipt{Files: []File{{"x", 1, sha("1")}}}
	b := &Receipt{Files: []File{{"x", 2, sha("22")}}}
	d := Compare(a, b)
	if len(d) != 1 || d[0].Want.Size != 1 || d[0].Got.Size != 2 || d[0].Got.SHA256 != sha("22") {
		t.Fatalf("Compare = %+v", d)
	}
	if Compare(a, a) != nil {
		t.Error("a receipt differs from itself")
	}
}
