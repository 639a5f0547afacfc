package apply_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/ledger"
)

// The crash tests re-execute this test binary as the settling process and
// have it SIGKILL itself at one named step (or, for the lock test, stop
// there until told to go on). The variables are read only by
// TestHelperSettler, never by the package.
const (
	envChild     = "APPLY_TEST_CHILD" // "kill" or "pause"
	envLedger    = "APPLY_TEST_LEDGER"
	envWorkspace = "APPLY_TEST_WORKSPACE"
	envOut       = "APPLY_TEST_OUT"
	envStep      = "APPLY_TEST_STEP"
)

// stepExported is after the export that follows a commit.
const stepExported = "exported"

// TestHelperSettler is not a test: run as a child by the tests below, it
// settles the ledger and exports the incumbent, as `cacheon settle` then
// `cacheon stack export` do, stopping at $APPLY_TEST_STEP.
func TestHelperSettler(t *testing.T) {
	kind := os.Getenv(envChild)
	if kind == "" {
		t.Skip("helper process only")
	}
	step := os.Getenv(envStep)
	fault := func(s string) {
		if s != step {
			return
		}
		switch kind {
		case "kill":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		case "pause":
			fmt.Println("paused")
			io.Copy(io.Discard, os.Stdin)
		}
	}
	ctx := context.Background()
	l, err := ledger.Open(ctx, os.Getenv(envLedger), ledger.Options{Fault: fault})
	if err != nil {
		fmt.Println("refused:", err)
		os.Exit(3)
	}
	res, err := apply.Settle(ctx, l, apply.Options{Workspace: os.Getenv(envWorkspace), Payload: applytest.Payload, Fault: fault})
	if err != nil {
		fmt.Println("settle:", err)
		os.Exit(3)
	}
	if _, err := apply.Export(ctx, l, os.Getenv(envOut)); err != nil {
		fmt.Println("export:", err)
		os.Exit(3)
	}
	fault(stepExported)
	fmt.Println("committed", res.Committed)
	l.Close()
}

func child(kind, path, ws, out, step string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSettler$")
	cmd.Env = append(os.Environ(), envChild+"="+kind, envLedger+"="+path, envWorkspace+"="+ws, envOut+"="+out, envStep+"="+step)
	return cmd
}

// settlingSteps are every step a settlement passes, in order.
func settlingSteps() []string {
	steps := append([]string(nil), apply.Steps...)
	steps = append(steps, ledger.CommitSteps...)
	return append(steps, stepExported)
}

func TestSettleKilledAtEachStepIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	ws := applytest.Workspace(t, "../..")
	for _, step := range settlingSteps() {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			path, out := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "incumbent.hcl")
			f := applytest.New(t, ws, path)
			in := f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, nil)
			f.Queue(t, "silu_and_mul_torch", "5Fsilu", 4100300, nil)
			if _, err := apply.Export(ctx, f.L, out); err != nil {
				t.Fatal(err)
			}
			before := check(t, f.L)
			f.L.Close()

			cmd := child("kill", path, ws, out, step)
			output, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the settler was not killed at %s: %v\n%s", step, err, output)
			}
			if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the settler ended with %v, not SIGKILL at %s\n%s", err, step, output)
			}

			l := applytest.OpenLedger(t, path)
			after := check(t, l)
			if after.Integrity != "ok" || len(after.Problems) != 0 || after.CurrentStack == "" {
				t.Fatalf("after a kill at %s: %+v", step, after)
			}
			stacks, err := l.Stacks(ctx)
			if err != nil {
				t.Fatal(err)
			}
			current := 0
			for _, s := range stacks {
				if s.Current {
					current++
				}
			}
			if current != 1 {
				t.Errorf("after a kill at %s: %d current stacks", step, current)
			}
			committed := step == "committed" || step == stepExported
			switch {
			case !committed && !same(before, after):
				t.Errorf("killed at %s, before the commit, yet the ledger changed:\nbefore %+v\nafter  %+v", step, before, after)
			case committed && (after.Head.Sequence != 4 || after.CurrentStack != in.Candidate.CandidateStack ||
				after.Counts.Crowns != 1 || after.Counts.StandingClaims != 1 || after.Counts.Outcomes != 2 || after.Counts.Stacks != 2):
				t.Errorf("killed after the commit, yet the settlement is not whole: %+v", after)
			}
			cur, err := l.CurrentStack(ctx)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			// The export follows the commit: before it the file is the
			// old incumbent (stale once the ledger committed), after it
			// the ledger's.
			switch {
			case step == stepExported && string(data) != cur.HCL:
				t.Errorf("killed after the export, yet the file is not the ledger's incumbent")
			case step != stepExported && string(data) != f.Cur.HCL:
				t.Errorf("killed at %s, before the export, yet the file changed", step)
			}
			// Exporting again repairs a stale file.
			if _, err := apply.Export(ctx, l, out); err != nil {
				t.Fatal(err)
			}
			if data, _ := os.ReadFile(out); string(data) != cur.HCL {
				t.Errorf("the export did not repair the file")
			}
			// And the ledger settles on: what was left queued settles now.
			res, err := apply.Settle(ctx, l, f.Options())
			if err != nil {
				t.Fatalf("settle after a kill at %s: %v", step, err)
			}
			if committed == res.Committed {
				t.Errorf("killed at %s: the second settle committed %v", step, res.Committed)
			}
		})
	}
}

func TestTwoSettlersOneWins(t *testing.T) {
	ctx := context.Background()
	ws := applytest.Workspace(t, "../..")
	dir := t.TempDir()
	path, out := filepath.Join(dir, "ledger.db"), filepath.Join(dir, "incumbent.hcl")
	f := applytest.New(t, ws, path)
	f.Queue(t, "rmsnorm_torch", "5Fminer", 4100200, nil)
	f.L.Close()

	// The first settler stops after planning, holding the ledger.
	cmd := child("pause", path, ws, out, "planned")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "paused" {
		t.Fatalf("the first settler said %q", lines.Text())
	}
	// The second one cannot even open the ledger.
	_, err = ledger.Open(ctx, path, ledger.Options{})
	if !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Errorf("a second settler: %v, want the lock error naming pid %d", err, cmd.Process.Pid)
	}
	stdin.Close()
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "committed true") {
		t.Fatalf("the first settler: %v\n%s", err, rest)
	}
	l := applytest.OpenLedger(t, path)
	if r := check(t, l); r.Counts.Crowns != 1 || r.Head.Sequence != 4 {
		t.Errorf("after the winner: %+v", r)
	}
}
