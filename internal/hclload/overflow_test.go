package hclload

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var bracketBomb = []byte("x = " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n")

// TestHelperParseBomb is not a test: run by TestBombCrashesHCLParser, it
// hands the bomb straight to hclsyntax, with a small stack so the crash
// comes quickly.
func TestHelperParseBomb(t *testing.T) {
	if os.Getenv("HCLLOAD_PARSE_BOMB") == "" {
		t.Skip("helper process only")
	}
	debug.SetMaxStack(32 << 20)
	hclsyntax.ParseConfig(bracketBomb, "bomb.hcl", hcl.InitialPos)
}

// hclsyntax alone dies on the bomb with a fatal stack overflow, which no
// recover can catch; Check refuses the same bytes before they reach it.
func TestBombCrashesHCLParser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperParseBomb$")
	cmd.Env = append(os.Environ(), "HCLLOAD_PARSE_BOMB=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "stack overflow") {
		t.Fatalf("hclsyntax on the bomb: %v, output %.300s", err, out)
	}
	if l, ok := LimitOf(Check(bracketBomb, "bomb.hcl")[0]); !ok || l != LimitDepth {
		t.Fatal("Check does not refuse the bomb")
	}
}
