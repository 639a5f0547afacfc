package catalog

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/cacheon/engine/internal/hclload"
)

// forBomb is a valid-looking target whose allowed_features is levels
// nested for expressions over ten features: evaluating it builds
// 10^levels values from a few hundred bytes.
func forBomb(levels int) string {
	list := `["entry", "variants", "setup", "cuda_sources", "entry", "variants", "setup", "cuda_sources", "entry", "variants"]`
	expr := "v0"
	for i := levels - 1; i >= 0; i-- {
		expr = fmt.Sprintf("[for v%d in %s : %s]", i, list, expr)
	}
	return ruleBase + `
target "a.one" {
  kind             = "slot"
  members          = ["a.one"]
  contract         = "a.one"
  allowed_features = ` + expr + `
}
`
}

func refusedBy(t *testing.T, src []byte, rule Rule) {
	t.Helper()
	c, diags := Parse(src, "bomb.hcl")
	if c != nil || len(diags) != 1 {
		t.Fatalf("want one %s error, got:\n%s", rule, renderDiags(diags))
	}
	if got, _ := RuleOf(diags[0]); got != rule {
		t.Fatalf("rule = %q, want %q:\n%s", got, rule, renderDiags(diags))
	}
	if !strings.HasPrefix(diags.Error(), "bomb.hcl:") {
		t.Errorf("error %q does not name the file", diags.Error())
	}
}

// Six nested for expressions build a million values when evaluated; the
// catalog refuses them before evaluation, allocating no more than parsing
// the file takes.
func TestForBombRefusedBeforeEvaluation(t *testing.T) {
	src := []byte(forBomb(6))
	refusedBy(t, src, RuleStaticExpressions)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Parse(src, "bomb.hcl")
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Fatalf("refusing the for bomb allocated %d bytes, want under 8 MiB", n)
	}
}

// BenchmarkParseForBomb shows the cost of a for bomb does not grow with
// its nesting: go test -run '^$' -bench ParseForBomb -benchmem ./catalog
func BenchmarkParseForBomb(b *testing.B) {
	for _, levels := range []int{3, 4, 5} {
		src := []byte(forBomb(levels))
		b.Run(fmt.Sprintf("levels=%d", levels), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Parse(src, "bomb.hcl")
			}
		})
	}
}

func TestOversizedCatalogRefused(t *testing.T) {
	src := []byte(ruleBase + strings.Repeat("# padding to push the file over the limit\n", hclload.MaxBytes/40))
	refusedBy(t, src, RuleSourceLimits)
	_, diags := Load(fstest.MapFS{"big.hcl": {Data: src}}, "big.hcl")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), hclload.ErrTooLarge.Error()) {
		t.Fatalf("Load of an oversized file: %v", diags)
	}
}

// The default catalog is far inside every limit.
func TestDefaultCatalogWithinLimits(t *testing.T) {
	if len(defaultSource) > hclload.MaxBytes/16 {
		t.Errorf("default catalog is %d bytes, close to the %d-byte limit", len(defaultSource), hclload.MaxBytes)
	}
	if diags := hclload.Check(defaultSource, DefaultFile); diags.HasErrors() {
		t.Fatal(diags)
	}
}
