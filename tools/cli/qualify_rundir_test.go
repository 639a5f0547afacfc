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
	makeOld(t, killed)
	live, err := atomicwrite.MkdirScratch(qualificationRunBase(), atomicwrite.KindWork)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	makeOld(t, live.Path)
	dir, errOut := sweep(t)
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed run's directory is still there (%v)", err)
	}
	if !strings.Contains(errOut, "removed "+killed+", the work directory of a qualification that was killed") {
		t.Errorf("stderr %q", errOut)
	}
	for _, d := range []string{young, other, live.Path, dir} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// makeOld dates each of paths an hour back, past the minute a scratch
// entry must be left alone.
func makeOld(t *testing.T, paths ...string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	for _, p := range paths {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// sweep makes a qualification's work directory as a qualification does,
// after its sweep of killed runs' directories. It returns the directory,
// removed when the test ends, and what the sweep said on stderr.
func sweep(t *testing.T) (dir, stderr string) {
	t.Helper()
	var errOut bytes.Buffer
	d, err := qualificationRunDir(Streams{Err: &errOut}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Remove() })
	return d.Path, errOut.String()
}
