package ledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The crash tests re-execute this test binary as the writer and have it
// SIGKILL itself at one named step. The environment variables below are
// read only by those helper tests, never by the package.
const (
	envChild  = "LEDGER_TEST_CHILD"  // what the helper does: commit, intake, intake-copy, clear-copy or hold
	envLedger = "LEDGER_TEST_LEDGER" // the ledger file
	envStep   = "LEDGER_TEST_KILL_AT"
	envBundle = "LEDGER_TEST_BUNDLE"
)

// TestHelperWriter is not a test: run as a child by the tests below, it
// opens the ledger and does one write, killing itself at $LEDGER_TEST_KILL_AT.
func TestHelperWriter(t *testing.T) {
	kind := os.Getenv(envChild)
	if kind == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	l, err := Open(ctx, os.Getenv(envLedger), Options{Create: true})
	if kind == "hold" {
		// Report the outcome, then (when we won) hold the lock until the
		// parent closes our stdin.
		if err != nil {
			fmt.Printf("refused: %v\n", err)
			return
		}
		fmt.Printf("won\n")
		io.Copy(io.Discard, os.Stdin)
		l.Close()
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	step := os.Getenv(envStep)
	l.fault = func(s string) {
		if s == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	switch kind {
	case "commit":
		h, err := l.Head(ctx)
		if err == nil {
			_, err = l.Commit(ctx, crownSettlement(t, h, int(h.Sequence/3)+1))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	case "intake":
		s, err := bundleSnapshot(os.Getenv(envBundle))
		if err == nil {
			_, err = l.Intake(ctx, s, request("hk", 7))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	case "intake-copy":
		// A copy of what the parent took in: its transaction also writes
		// the copy verdict.
		s, r := inspected(t, os.Getenv(envBundle), "hkB", 7)
		if _, err = l.Intake(ctx, s, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	case "clear-copy":
		if _, _, err = l.ClearCopy(ctx, 2, "crash test"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	// The step was never reached: the parent sees a clean exit.
	l.Close()
}

// runKilled runs the helper and requires that it died of SIGKILL.
func runKilled(t *testing.T, kind, path, step string, extra ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
	cmd.Env = append(os.Environ(), envChild+"="+kind, envLedger+"="+path, envStep+"="+step)
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the writer was not killed at %s: %v\n%s", step, err, out)
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the writer ended with %v, not SIGKILL at %s\n%s", err, step, out)
	}
}

func TestACommitKilledAtEachStepIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	for _, step := range CommitSteps {
		t.Run(step, func(t *testing.T) {
			path := ledgerPath(t)
			l := openNew(t, path)
			settle(t, l, 1)
			before, err := l.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			l.Close()

			runKilled(t, "commit", path, step)

			l, err = Open(ctx, path, Options{})
			if err != nil {
				t.Fatalf("reopen after a kill at %s: %v", step, err)
			}
			defer l.Close()
			after, err := l.Check(ctx)
			if err != nil {
				t.Fatalf("check after a kill at %s: %v", step, err)
			}
			committed := step == "committed"
			switch {
			case !committed && (after.Head != before.Head || after.CurrentStack != before.CurrentStack || after.Counts != before.Counts):
				t.Errorf("killed at %s, before commit, yet the ledger changed:\nbefore %+v\nafter  %+v", step, before, after)
			case committed && (after.Head.Sequence != before.Head.Sequence+3 || after.CurrentStack != stack(2).StackDigest ||
				after.Counts.Stacks != before.Counts.Stacks+1 || after.Counts.Crowns != before.Counts.Crowns+1):
				t.Errorf("killed after commit, yet the settlement is not whole:\nbefore %+v\nafter  %+v", before, after)
			}
			// The ledger goes on: the next settlement extends whatever
			// the head is.
			h, err := l.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Commit(ctx, crownSettlement(t, h, int(h.Sequence/3)+1)); err != nil {
				t.Fatalf("commit after the crash: %v", err)
			}
			if _, err := l.Check(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAnIntakeKilledAtEachStepLeavesNoHalfProposal(t *testing.T) {
	ctx := context.Background()
	for _, step := range []string{"intake-published", "intake-inserted"} {
		t.Run(step, func(t *testing.T) {
			path := ledgerPath(t)
			openNew(t, path).Close()
			dir := writeBundle(t, "crash")
			runKilled(t, "intake", path, step, envBundle+"="+dir)
			l, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			r, err := l.Check(ctx)
			if err != nil || r.Counts.Proposals != 0 {
				t.Fatalf("after a kill at %s: %+v, %v", step, r, err)
			}
			// The retry takes the reveal in, reusing the publication.
			res, err := l.Intake(ctx, snapshot(t, dir), request("hk", 7))
			if err != nil || res.Proposal.Status != Published {
				t.Fatalf("retry: %+v, %v", res, err)
			}
			if _, err := l.Check(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTwoWritersAtOnceOneWinsTheOtherIsToldWhy(t *testing.T) {
	path := ledgerPath(t)
	openNew(t, path).Close()
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		line  chan string
	}
	var kids []child
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
		cmd.Env = append(os.Environ(), envChild+"=hold", envLedger+"="+path)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := child{cmd, in, make(chan string, 1)}
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			c.line <- line
		}()
		kids = append(kids, c)
	}
	var won, refused []string
	for _, c := range kids {
		line := <-c.line
		if line == "won\n" {
			won = append(won, fmt.Sprint(c.cmd.Process.Pid))
		} else {
			refused = append(refused, line)
		}
	}
	for _, c := range kids {
		c.stdin.Close()
		c.cmd.Wait()
	}
	if len(won) != 1 || len(refused) != 1 {
		t.Fatalf("won %v, refused %q: want exactly one of each", won, refused)
	}
	if !strings.Contains(refused[0], "locked by another writer") || !strings.Contains(refused[0], "pid "+won[0]) || !strings.Contains(refused[0], path+".lock") {
		t.Errorf("the loser was told %q; want the lock and the winner's pid %s", refused[0], won[0])
	}
	// The winner is gone, and so is its lock.
	openNew(t, path)
}

// A copy's intake and the clearing of its verdict are each one
// transaction: killed at any step, neither leaves a verdict without its
// proposal nor a cleared verdict without its event, and the retry
// completes.
func TestAntiCopyWritesKilledAtEachStepAreAllOrNothing(t *testing.T) {
	ctx := context.Background()
	// setup takes the original in and, when withCopy, its copy; it
	// returns the ledger path and the copy's bundle.
	setup := func(t *testing.T, withCopy bool) (string, string) {
		path := ledgerPath(t)
		l := openNew(t, path)
		snap, r := inspected(t, kernelBundle(t, rmsKernel, "original\n"), "hkA", 6)
		if _, err := l.Intake(ctx, snap, r); err != nil {
			t.Fatal(err)
		}
		dup := kernelBundle(t, rmsKernel, "copy\n")
		if withCopy {
			snap, r := inspected(t, dup, "hkB", 7)
			if res, err := l.Intake(ctx, snap, r); err != nil || res.Proposal.Status != Failed {
				t.Fatalf("copy: %+v, %v", res, err)
			}
		}
		l.Close()
		return path, dup
	}
	for _, step := range []string{"intake-published", "intake-inserted"} {
		t.Run("intake of a copy killed at "+step, func(t *testing.T) {
			path, dup := setup(t, false)
			runKilled(t, "intake-copy", path, step, envBundle+"="+dup)
			l, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if r, err := l.Check(ctx); err != nil || r.Counts.Proposals != 1 {
				t.Fatalf("after a kill at %s: %+v, %v", step, r, err)
			}
			if v, err := l.CopyVerdict(ctx, 2); err != nil || v != nil {
				t.Fatalf("a verdict without its proposal: %+v, %v", v, err)
			}
			snap, r := inspected(t, dup, "hkB", 7)
			res, err := l.Intake(ctx, snap, r)
			if err != nil || res.Proposal.Status != Failed || res.Proposal.Reason != "copy_of:1:payload" {
				t.Fatalf("retry: %+v, %v", res, err)
			}
		})
	}
	t.Run("clear-copy killed at clear-copy-written", func(t *testing.T) {
		path, _ := setup(t, true)
		runKilled(t, "clear-copy", path, "clear-copy-written")
		l, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		p, err := l.Proposal(ctx, 2)
		if err != nil || p.Status != Failed {
			t.Fatalf("after the kill the copy is %+v, %v", p, err)
		}
		if evs, err := l.IntakeEvents(ctx, 1, 0); err != nil || len(evs) != 0 {
			t.Fatalf("intake events after the kill: %+v, %v", evs, err)
		}
		if p, _, err := l.ClearCopy(ctx, 2, "retry"); err != nil || p.Status != Published {
			t.Fatalf("retry: %+v, %v", p, err)
		}
	})
}
