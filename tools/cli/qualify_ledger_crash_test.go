package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/ledger"
)

// TestAQualifyLedgerKilledMidRunIsRecorded SIGKILLs a real `qualify
// --ledger` process once its proposal is in flight (screening, its
// qualification started). Meanwhile `ledger check` names the proposal as
// stranded; the next `qualify --ledger`, holding the ledger's writer
// lock the dead run's kernel released, records it no_decision as an
// infrastructure outcome before anything else, and the ledger checks
// clean.
func TestAQualifyLedgerKilledMidRunIsRecorded(t *testing.T) {
	py := verifyPython(t)
	// The killed run's work directory stays with the test, not in /tmp.
	t.Setenv("TMPDIR", t.TempDir())
	ws := applytest.Workspace(t, "../..")
	reference := filepath.Join(ws, "stacks", "reference.hcl")
	testtree.Copy(t, "../../stacks/reference.hcl", reference)
	f := applytest.New(t, ws, filepath.Join(t.TempDir(), "ledger.db"))
	in := f.Intake(t, "rmsnorm_torch", "5Fminer", 4100200)
	f.L.Close()

	args := []string{"qualify", "--ledger", f.Path, "--workspace", ws, "--incumbent", filepath.Join(ws, "stacks", "incumbent.hcl"),
		"--reference", reference, "--python", py, "--unsafe-no-isolation", "--out", filepath.Join(t.TempDir(), "q")}
	cmd := subprocess{dir: ws, umask: 0o022, args: args}.command(t)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	// Kill it once it has moved the proposal into flight and started
	// the qualification: the proposal is screening, with no run left to
	// finish it.
	inFlight := fmt.Sprintf("proposal %d: qualifying", in.ID)
	seen := make(chan error, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), inFlight) {
				seen <- nil
				return
			}
		}
		seen <- errors.New("stderr ended")
	}()
	select {
	case err := <-seen:
		if err != nil {
			cmd.Wait()
			t.Fatalf("qualify --ledger ended before %q: %v\n%s", inFlight, err, log.String())
		}
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no %q within 5 minutes\n%s", inFlight, log.String())
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("qualify --ledger ended with %v, want killed", err)
	}
	if st, ok := exit.Sys().(syscall.WaitStatus); !ok || !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Fatalf("qualify --ledger ended with %v, not SIGKILL (it finished first?)\n%s", err, log.String())
	}

	status := func() *ledger.Proposal {
		t.Helper()
		l, err := ledger.Open(context.Background(), f.Path, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		p, err := l.Proposal(context.Background(), in.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := status(); p.Status != ledger.Screening {
		t.Fatalf("after the kill the proposal is %s, want screening", p.Status)
	}
	stranded := fmt.Sprintf("stranded: proposal %d is screening with no run evaluating it", in.ID)
	if code, out, errOut := run(t, "", "ledger", "check", "--ledger", f.Path); code != 0 || !strings.Contains(out, stranded) {
		t.Fatalf("ledger check: exit %d, want 0 naming %q\n%s%s", code, stranded, out, errOut)
	}

	// The next run records it first; with nothing else published it then
	// has nothing to qualify.
	code, out, errOut := run(t, "", args...)
	if !strings.Contains(errOut, fmt.Sprintf("proposal %d: no_decision: the run evaluating it died while it was screening", in.ID)) ||
		!strings.Contains(out+errOut, "no published proposal waits for evaluation") {
		t.Fatalf("the next qualify --ledger: exit %d\n%s%s", code, out, errOut)
	}
	if p := status(); p.Status != ledger.NoDecision || !strings.Contains(p.Reason, "infrastructure: the run evaluating it ended without a verdict (killed while screening)") {
		t.Fatalf("after the next run the proposal is %s %q, want no_decision (infrastructure)", p.Status, p.Reason)
	}
	if code, out, errOut := run(t, "", "ledger", "check", "--ledger", f.Path); code != 0 || strings.Contains(out, "stranded") {
		t.Fatalf("ledger check after the recovery: exit %d\n%s%s", code, out, errOut)
	}
}
