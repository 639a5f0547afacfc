package stack

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/hclload"
)

func validStack(t *testing.T) []byte {
	t.Helper()
	src, err := os.ReadFile("testdata/valid/evaluation.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// 100k nested brackets used to crash hclsyntax with an unrecoverable
// stack overflow; the pre-scan refuses them before it runs.
func TestParseRefusesDeepNesting(t *testing.T) {
	for name, bomb := range map[string]string{
		"brackets":       strings.Repeat("[", 100_000),
		"interpolations": `"` + strings.Repeat(`${"`, 100_000),
		"blocks":         strings.Repeat("b {\n", 100_000),
	} {
		t.Run(name, func(t *testing.T) {
			src := append(validStack(t), []byte("\nx = "+bomb+"\n")...)
			f, diags := Parse("bomb.hcl", src)
			if f != nil || len(diags) != 1 {
				t.Fatalf("want one refusal, got %v", diags)
			}
			if l, ok := hclload.LimitOf(diags[0]); !ok || l != hclload.LimitDepth {
				t.Fatalf("limit = %q, %v: %v", l, ok, diags)
			}
			if !strings.HasPrefix(diags.Error(), "bomb.hcl:") {
				t.Errorf("error %q does not name the file", diags.Error())
			}
		})
	}
}

// Evaluating nested for expressions multiplies their collections; a stack
// file is data and refuses them before anything is evaluated.
func TestParseRefusesForBomb(t *testing.T) {
	list := `["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]`
	expr := `"x"`
	for i := 0; i < 8; i++ {
		expr = "[for v in " + list + " : " + expr + "]"
	}
	src := strings.Replace(string(validStack(t)), "stack ", "junk = "+expr+"\nstack ", 1)
	f, diags := Parse("bomb.hcl", []byte(src))
	if f != nil || len(diags) != 1 || diags[0].Summary != "For expression not allowed" {
		t.Fatalf("want one for-expression refusal, got %v", diags)
	}
}

func TestLoadRefusesOversizedFile(t *testing.T) {
	src := append(validStack(t), []byte(strings.Repeat("# padding\n", hclload.MaxBytes/10))...)
	path := filepath.Join(t.TempDir(), "big.hcl")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, diags := Load(path)
	if f != nil || !diags.HasErrors() || !strings.Contains(diags.Error(), hclload.ErrTooLarge.Error()) {
		t.Fatalf("Load of an oversized file: %v", diags)
	}
	if f, diags := Parse("big.hcl", src); f != nil || !diags.HasErrors() {
		t.Fatalf("Parse of an oversized file: %v", diags)
	}
}

// A manifest's catalog snapshot is bounded before it is hashed or decoded.
func TestManifestRefusesOversizedSnapshot(t *testing.T) {
	snapshot := append([]byte(`{"targets":[`), bytes.Repeat([]byte(" "), MaxCatalogSnapshotBytes)...)
	snapshot = append(snapshot, "]}"...)
	_, err := NewEvaluationStackManifest(dg("1"), dg("2"), dg("3"), dg("4"), snapshot, nil)
	if !errors.Is(err, canonjson.ErrTooLarge) {
		t.Fatalf("err = %v, want canonjson.ErrTooLarge", err)
	}
}
