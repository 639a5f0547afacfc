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
// --ledger` process once its proposal is in flight under its lease
// (screening, its qualification started). Meanwhile `ledger check` names
// the proposal as stranded, its lease's holder gone; the next `qualify
// --ledger`, holding the ledger's writer lock the dead run's kernel
// released, reclaims it before anything else: back in the queue with its
// lost attempt counted and a back-off, during which nothing is qualified.
// The ledger checks clean.
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
	lease := func() ledger.Lease {
		t.Helper()
		l, err := ledger.Open(context.Background(), f.Path, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls, err := l.LeaseOf(context.Background(), in.ID)
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	if ls := lease(); !ls.Live || ls.Holder.PID != cmd.Process.Pid || ls.Attempts != 1 {
		t.Fatalf("after the kill the lease is %+v, want the killed run's (pid %d), live", ls, cmd.Process.Pid)
	}
	stranded := fmt.Sprintf("stranded: proposal %d is screening with no run evaluating it (%s pid %d", in.ID, lease().Holder.Host, cmd.Process.Pid)
	if code, out, errOut := run(t, "", "ledger", "check", "--ledger", f.Path); code != 0 || !strings.Contains(out, stranded) || !strings.Contains(out, "is gone: a run died") {
		t.Fatalf("ledger check: exit %d, want 0 naming %q\n%s%s", code, stranded, out, errOut)
	}

	// The next run reclaims it first; the proposal backing off, it then
	// has nothing to qualify.
	code, out, errOut := run(t, "", args...)
	if !strings.Contains(errOut, fmt.Sprintf("proposal %d: published: lease_reclaimed: attempt 1 of 3 ended without a verdict while screening (holder_gone: the run holding it", in.ID)) ||
		!strings.Contains(out+errOut, fmt.Sprintf("no published proposal waits for evaluation (proposal %d backs off until", in.ID)) || code != 1 {
		t.Fatalf("the next qualify --ledger: exit %d\n%s%s", code, out, errOut)
	}
	if p := status(); p.Status != ledger.Published || !strings.Contains(p.Reason, "lease_reclaimed: attempt 1 of 3") {
		t.Fatalf("after the next run the proposal is %s %q, want published (reclaimed)", p.Status, p.Reason)
	}
	if ls := lease(); ls.Live || ls.Lost != 1 || ls.NotBefore.IsZero() {
		t.Fatalf("after the next run the lease is %+v, want reclaimed with a back-off", ls)
	}
	if code, out, errOut := run(t, "", "ledger", "check", "--ledger", f.Path); code != 0 || strings.Contains(out, "stranded") {
		t.Fatalf("ledger check after the recovery: exit %d\n%s%s", code, out, errOut)
	}
}

// TestQualifyLedgerRefusesALiveLease: a proposal in flight under the live
// lease of a run on another host is left alone by the next run on this
// one: `ledger check` names it leased, `qualify --ledger --proposal` on it
// exits 1 naming the holder and the expiry, and plain `qualify --ledger`
// finds nothing queued.
func TestQualifyLedgerRefusesALiveLease(t *testing.T) {
	ctx := context.Background()
	py := verifyPython(t)
	ws := applytest.Workspace(t, "../..")
	reference := filepath.Join(ws, "stacks", "reference.hcl")
	testtree.Copy(t, "../../stacks/reference.hcl", reference)
	f := applytest.New(t, ws, filepath.Join(t.TempDir(), "ledger.db"))
	in := f.Intake(t, "rmsnorm_torch", "5Fminer", 4100200)
	f.L.Close()
	other, err := ledger.Open(ctx, f.Path, ledger.Options{Host: "gpu-7"})
	must(t, err)
	ls, err := other.TakeLease(ctx, in.ID, "", time.Now(), ledger.DefaultLeasePolicy)
	must(t, err)
	other.Close()
	until := ls.ExpiresAt.Format(time.RFC3339)

	leased := fmt.Sprintf("leased: proposal %d is screening, leased by gpu-7 pid %d (run %s) until %s (attempt 1)", in.ID, ls.Holder.PID, ls.Holder.Run, until)
	if code, out, errOut := run(t, "", "ledger", "check", "--ledger", f.Path); code != 0 || !strings.Contains(out, leased) || strings.Contains(out, "stranded") {
		t.Fatalf("ledger check: exit %d, want 0 naming %q\n%s%s", code, leased, out, errOut)
	}
	base := []string{"qualify", "--ledger", f.Path, "--workspace", ws, "--incumbent", filepath.Join(ws, "stacks", "incumbent.hcl"),
		"--reference", reference, "--python", py, "--unsafe-no-isolation", "--out", filepath.Join(t.TempDir(), "q")}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"the leased proposal", []string{"--proposal", fmt.Sprint(in.ID)}, fmt.Sprintf("proposal %d is leased by gpu-7 pid %d (run %s) until %s (attempt 1)", in.ID, ls.Holder.PID, ls.Holder.Run, until)},
		{"the first queued", nil, "no published proposal waits for evaluation"},
		{"a proposal that is not there", []string{"--proposal", "99"}, "no proposal 99"},
	} {
		code, out, errOut := run(t, "", append(append([]string{}, base...), c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, want a refusal naming %q\n%s%s", c.name, code, c.want, out, errOut)
		}
		if c.name == "the leased proposal" && code != 1 {
			t.Errorf("%s: exit %d, want 1: a busy proposal is no rejection", c.name, code)
		}
	}
}
