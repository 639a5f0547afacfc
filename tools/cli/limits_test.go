package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// An oversized catalog file is refused without being read whole; a
// deeply nested one is refused before HCL parses it, naming its rule.
func TestCatalogCheckRefusesBombs(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.hcl")
	src := append(catalog.DefaultSource(), strings.Repeat("# padding\n", hclload.MaxBytes/10)...)
	if err := os.WriteFile(big, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "catalog", "check", big)
	if code != enginecli.ExitRejected || !strings.Contains(stderr, "size limit") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}

	deep := filepath.Join(dir, "deep.hcl")
	if err := os.WriteFile(deep, append(catalog.DefaultSource(), "\nx = "+strings.Repeat("[", 100_000)+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, "", "catalog", "check", deep, "--json")
	if code != enginecli.ExitRejected || !strings.Contains(out, `"source-limits"`) {
		t.Fatalf("exit %d, out %.500s", code, out)
	}
}

// A deeply nested stack file is refused with its location, without a
// snippet (HCL never parsed it) and without a crash.
func TestStackDigestRefusesBombs(t *testing.T) {
	deep := filepath.Join(t.TempDir(), "deep.hcl")
	if err := os.WriteFile(deep, []byte("stack \"x\" {\n  kind = "+strings.Repeat("[", 100_000)+"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "stack", "digest", deep)
	if code != enginecli.ExitRejected || !strings.Contains(stderr, "Nesting too deep") || !strings.Contains(stderr, "deep.hcl:2:") || strings.Contains(stderr, "[[[[") {
		t.Fatalf("exit %d, stderr %.500q", code, stderr)
	}
}
