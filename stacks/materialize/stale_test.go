package materialize

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/tools/atomicwrite"
)

// TestHelperBlockedMaterialize is not a test: run by startBlocked, it
// materializes the pristine stack into $MATERIALIZE_BLOCKED_DEST, says so
// on stdout once the temporary tree holds a file, and blocks there until
// it is killed.
func TestHelperBlockedMaterialize(t *testing.T) {
	dest := os.Getenv("MATERIALIZE_BLOCKED_DEST")
	if dest == "" {
		t.Skip("helper process only")
	}
	opts := testOptions(t)
	opts.AfterFile = func(int, string) {
		os.Stdout.WriteString("blocked\n")
		time.Sleep(time.Hour)
	}
	b := evaluationStack(t, opts)
	Materialize(b.manifest, b.resolve, dest, opts)
}

func startBlocked(t *testing.T, dest string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBlockedMaterialize$")
	cmd.Env = append(os.Environ(), "MATERIALIZE_BLOCKED_DEST="+dest)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "blocked\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	return cmd
}

func hidden(t *testing.T, parent string) []string {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".engine.") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A materialize killed while writing leaves its work directory and its
// temporary tree beside the destination. The next run removes both, and
// keeps those of a run that is still going.
func TestMaterializeRemovesKilledRunsLeftovers(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "engine")

	killed := startBlocked(t, dest)
	leftovers := hidden(t, parent)
	killed.Process.Kill()
	killed.Wait()
	startBlocked(t, dest)
	running := slices.DeleteFunc(hidden(t, parent), func(n string) bool { return slices.Contains(leftovers, n) })
	if len(leftovers) != 2 || len(running) != 2 {
		t.Fatalf("killed run left %v, running run has %v; want a work directory and a temporary tree each", leftovers, running)
	}
	old := time.Now().Add(-time.Hour)
	for _, n := range append(slices.Clone(leftovers), running...) {
		if err := os.Chtimes(filepath.Join(parent, n), old, old); err != nil {
			t.Fatal(err)
		}
	}

	opts := testOptions(t)
	b := evaluationStack(t, opts)
	if _, err := Materialize(b.manifest, b.resolve, dest, opts); err != nil {
		t.Fatal(err)
	}
	left := hidden(t, parent)
	for _, n := range leftovers {
		if slices.Contains(left, n) {
			t.Errorf("the killed run's %s is still there", n)
		}
	}
	for _, n := range running {
		if !slices.Contains(left, n) {
			t.Errorf("the running run's %s was removed", n)
		}
	}
}

// Verify bounds the tree metadata it decodes.
func TestVerifyRefusesOversizedMetadata(t *testing.T) {
	root := filepath.Join(t.TempDir(), "engine")
	big := make([]byte, MaxTreeMetadataBytes+1)
	if _, err := atomicwrite.WriteTree(root, []atomicwrite.File{{Path: TreeMetadataName, Data: big}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(root); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}
