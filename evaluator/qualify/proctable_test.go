package qualify

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/evidence"
)

// liveProcess is one process of the host's process table.
type liveProcess struct {
	pid, ppid int
	cmdline   string
}

// processTable reads every live (not zombie) process of the host.
func processTable(t *testing.T) []liveProcess {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []liveProcess
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // it ended while we looked
		}
		// pid (comm) state ppid ...: the command name may hold spaces and
		// parentheses, so the fields are read after its last ')'.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		ppid, _ := strconv.Atoi(fields[1])
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		out = append(out, liveProcess{pid: pid, ppid: ppid, cmdline: strings.ReplaceAll(string(cmd), "\x00", " ")})
	}
	return out
}

// strays are the live processes a finished qualification left: every
// descendant of this test process, and every process anywhere whose
// command line names one of the run's directories (a process that
// double-forked away from its parent still names its tree or run
// directory). A qualification that has returned must leave none.
func strays(t *testing.T, dirs ...string) []liveProcess {
	t.Helper()
	table := processTable(t)
	parent := map[int]int{}
	for _, p := range table {
		parent[p.pid] = p.ppid
	}
	self := os.Getpid()
	var out []liveProcess
	for _, p := range table {
		if p.pid == self {
			continue
		}
		descendant := false
		for q, hops := p.ppid, 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == self {
				descendant = true
				break
			}
		}
		named := false
		for _, d := range dirs {
			if d != "" && strings.Contains(p.cmdline, d) {
				named = true
			}
		}
		if descendant || named {
			out = append(out, p)
		}
	}
	return out
}

// runLeavingNothing runs the qualification o and fails the test if it
// produced no report or if any process of its run outlives it.
func runLeavingNothing(t *testing.T, o Options) *Report {
	t.Helper()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	requireNoStrays(t, o.RunDir)
	return res.Report
}

// requireNoStrays fails the test if processes of the run outlive it. The
// supervisor reaps asynchronously after a kill, so it allows a short
// grace period before it decides.
func requireNoStrays(t *testing.T, dirs ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := strays(t, dirs...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				t.Errorf("process %d (parent %d) outlived the qualification: %s", p.pid, p.ppid, p.cmdline)
			}
			t.FailNow()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCancelledQualificationLeavesNoProcess cancels a qualification (what
// Ctrl-C does through the CLI's context) inside each stage that runs
// workers or engines, half a second after the stage starts: each ends
// NO_DECISION or with the context's error, never a candidate's FAIL, and
// leaves no process in the host's process table.
func TestCancelledQualificationLeavesNoProcess(t *testing.T) {
	f := newFixture(t)
	for _, stage := range []string{ScreenABI, ScreenServing, StageSpeed} {
		t.Run(stage, func(t *testing.T) {
			o := qualifyOptions(t, f, "kernels/contributions/rmsnorm_torch")
			o.RunDir = filepath.Join(f.Run, "cancel-"+stage)
			if err := os.Mkdir(o.RunDir, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			logf := o.Progress
			o.Progress = func(format string, args ...any) {
				logf(format, args...)
				if format == "%s …" && len(args) == 1 && args[0] == stage {
					time.AfterFunc(500*time.Millisecond, cancel)
				}
			}
			res, err := Run(ctx, o)
			switch {
			case err != nil:
				t.Logf("cancelled in %s: %v", stage, err)
			case res.Report.Decision == NoDecision:
				t.Logf("cancelled in %s: %s %s", stage, res.Report.Decision, res.Report.Reason)
			default:
				t.Fatalf("a qualification cancelled in %s decided %s: %s", stage, res.Report.Decision, res.Report.Reason)
			}
			requireNoStrays(t, o.RunDir, o.Plan.CandidateDir)
		})
	}
}

// TestStraysSeesLeftoverProcesses: the process-table check finds a live
// child of the test, and a process that left the family but names a run
// directory, and stops seeing them once they are gone.
func TestStraysSeesLeftoverProcesses(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// A double fork: the shell exits at once, its sleep is reparented
	// away from this process and only its command line names dir.
	// The inner shell stays (two commands, no exec of the last) and names
	// dir as its $0.
	if out, err := exec.Command("sh", "-c", `sh -c 'sleep 20; true' `+dir+` >/dev/null 2>&1 &`).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	found := map[string]bool{}
	for _, p := range strays(t, dir) {
		if p.pid == child.Process.Pid {
			found["child"] = true
		}
		if strings.Contains(p.cmdline, dir) {
			found["named"] = true
			if proc, err := os.FindProcess(p.pid); err == nil {
				defer proc.Kill()
			}
		}
	}
	if !found["child"] || !found["named"] {
		t.Fatalf("strays missed a leftover process: %v", found)
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	for _, p := range strays(t, dir) {
		if p.pid == child.Process.Pid {
			t.Fatal("a reaped child is still reported")
		}
	}
}

// TestEvidenceWriteFailureIsAnError breaks the evidence store while the
// speed stage runs (its root becomes a regular file, so no write can
// land): the qualification ends with an error naming the evidence write,
// an infrastructure failure and never a verdict, and no process outlives
// it.
func TestEvidenceWriteFailureIsAnError(t *testing.T) {
	f := newFixture(t)
	o := qualifyOptions(t, f, "kernels/contributions/rmsnorm_torch")
	o.RunDir = filepath.Join(f.Run, "broken-store")
	if err := os.Mkdir(o.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "evidence")
	store, err := evidence.Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	o.Store = store
	logf := o.Progress
	o.Progress = func(format string, args ...any) {
		logf(format, args...)
		if format == "%s …" && len(args) == 1 && args[0] == StageSpeed {
			if err := os.RemoveAll(root); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(root, []byte("not a directory\n"), 0o444); err != nil {
				t.Error(err)
			}
		}
	}
	res, err := Run(context.Background(), o)
	if err == nil {
		t.Fatalf("a qualification whose evidence could not be written decided %s: %s", res.Report.Decision, res.Report.Reason)
	}
	if !strings.Contains(err.Error(), "evidence") {
		t.Fatalf("the error does not name the evidence write: %v", err)
	}
	t.Logf("ended with: %v", err)
	requireNoStrays(t, o.RunDir)
}
