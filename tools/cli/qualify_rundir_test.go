package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/internal/atomicwrite"
)

// TestQualificationRunDirSweepsKilledRuns: a qualification's work
// directory is a locked scratch directory; the next qualification removes
// those of killed runs (unlocked, older than a minute) and leaves a live
// run's and a just-made one.
func TestQualificationRunDirSweepsKilledRuns(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	killed := filepath.Join(tmp, ".cacheon-qualify.work-4194305-1")
	young := filepath.Join(tmp, ".cacheon-qualify.work-4194305-2")
	other := filepath.Join(tmp, "cacheon-qualify-3")
	for _, d := range []string{killed, young, other} {
		if err := os.MkdirAll(filepath.Join(d, "arms"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(killed, old, old); err != nil {
		t.Fatal(err)
	}
	live, err := atomicwrite.MkdirScratch(qualificationRunBase(), atomicwrite.KindWork)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	if err := os.Chtimes(live.Path, old, old); err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	dir, err := qualificationRunDir(Streams{Err: &errOut}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Remove()
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed run's directory is still there (%v)", err)
	}
	if !strings.Contains(errOut.String(), "removed "+killed+", the work directory of a qualification that was killed") {
		t.Errorf("stderr %q", errOut.String())
	}
	for _, d := range []string{young, other, live.Path, dir.Path} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}
