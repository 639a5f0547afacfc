package worker

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakePython writes an executable shell script standing in for the
// interpreter: it ignores the harness arguments and runs body. Process
// supervision does not depend on what the worker is.
func fakePython(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func runFake(t *testing.T, body string, timeout time.Duration) Outcome {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "w")
	out, err := Run(context.Background(), Spec{Python: fakePython(t, body), ValidatorRoot: "/unused", WorkDir: dir,
		Request: map[string]string{"protocol": Protocol}, Timeout: timeout})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

func TestRunOutcomes(t *testing.T) {
	cases := []struct {
		name     string
		body     string
		clean    bool
		describe string
	}{
		{"exit 0", "exit 0", true, "exited with code 0"},
		{"exit 7", "exit 7", false, "exited with code 7"},
		{"segfault", "kill -SEGV $$", false, "killed by SIGSEGV"},
		{"abort", "kill -ABRT $$", false, "killed by SIGABRT"},
		{"hang", "sleep 600", false, "timed out after"},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := runFake(t, tc.body, 2*time.Second)
			if out.Clean() != tc.clean || !strings.HasPrefix(out.Describe(), tc.describe) {
				t.Fatalf("clean=%v describe=%q, want clean=%v %q", out.Clean(), out.Describe(), tc.clean, tc.describe)
			}
		})
	}
}

func TestRunKillsTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The child ignores SIGTERM and outlives its parent; only a group
	// SIGKILL ends it.
	body := "(trap '' TERM; sleep 600) & echo $! > " + pidFile + "; sleep 600"
	start := time.Now()
	out := runFake(t, body, time.Second)
	if !out.TimedOut {
		t.Fatalf("outcome %s, want a timeout", out.Describe())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Run returned after %s", d)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid <= 0 {
		t.Fatalf("bad pid %q", data)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if !processAlive(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d survived the group kill", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunKillsLeftoversAfterACleanExit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	out := runFake(t, "sleep 600 & echo $! > "+pidFile+"; exit 0", 10*time.Second)
	if !out.Clean() {
		t.Fatalf("outcome %s", out.Describe())
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("background process %d outlived its worker", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	out, err := Run(ctx, Spec{Python: fakePython(t, "sleep 600"), ValidatorRoot: "/unused",
		WorkDir: filepath.Join(t.TempDir(), "w"), Request: map[string]int{}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Canceled || out.Clean() {
		t.Fatalf("outcome %+v, want canceled", out)
	}
}

func TestRunFeedsTheRequestAndCapturesStreams(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "w")
	body := `cat > got.json; echo to-stdout; echo to-stderr >&2; printf '%s\n' '{"stage":"start"}' '{"stage":"call","case":2,"phase":"repeat"}' 'garbage' > progress.jsonl`
	out, err := Run(context.Background(), Spec{Python: fakePython(t, body), ValidatorRoot: "/unused", WorkDir: dir,
		Request: map[string]any{"protocol": Protocol, "role": "plan"}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "got.json"))
	if err != nil || !strings.Contains(string(got), `"role":"plan"`) {
		t.Fatalf("request on stdin = %q, %v", got, err)
	}
	if Tail(dir, StdoutFile, 100) != "to-stdout" || Tail(dir, StderrFile, 100) != "to-stderr" {
		t.Fatalf("streams: %q %q", Tail(dir, StdoutFile, 100), Tail(dir, StderrFile, 100))
	}
	if w := out.Progress.Where(); w != "case 2, repeat call" {
		t.Fatalf("progress %q", w)
	}
}

func TestRunStartFailure(t *testing.T) {
	_, err := Run(context.Background(), Spec{Python: "/nonexistent/python3", ValidatorRoot: "/unused",
		WorkDir: filepath.Join(t.TempDir(), "w"), Request: 1})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidatorRootIsReadOnlyAndComplete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = RemoveAll(dir) })
	root, err := ValidatorRoot(filepath.Join(dir, "validator"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		"cacheon_reference/__init__.py", "cacheon_reference/slots/__init__.py", "cacheon_reference/compare.py",
		"cacheon_worker/__main__.py", "cacheon_worker/candidate.py", "cacheon_worker/reference.py",
	} {
		info, err := os.Stat(filepath.Join(root, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if info.Mode().Perm()&0o222 != 0 {
			t.Errorf("%s is writable: %v", f, info.Mode())
		}
	}
	if _, err := ValidatorRoot(root); err == nil {
		t.Fatal("ValidatorRoot over an existing directory succeeded")
	}
}

func TestResolvePython(t *testing.T) {
	fake := fakePython(t, "exit 0")
	got, err := ResolvePython(fake)
	if err != nil || got != fake {
		t.Fatalf("ResolvePython(%q) = %q, %v", fake, got, err)
	}
	t.Setenv(PythonEnv, fake)
	if got, err := ResolvePython(""); err != nil || got != fake {
		t.Fatalf("from $%s: %q, %v", PythonEnv, got, err)
	}
	if _, err := ResolvePython(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing interpreter resolved")
	}
}

func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
		return false // a zombie waiting for its reaper is dead
	}
	return syscall.Kill(pid, 0) == nil
}
