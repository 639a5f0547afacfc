package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
)

// fakePython writes an executable shell script standing in for the
// interpreter: it ignores the harness arguments and runs body. Process
// supervision does not depend on what the worker is.
func fakePython(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(searchableDir(t), "python3")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// searchableDir is a t.TempDir the sandbox user can pass through.
func searchableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := sandbox.SearchableDir(d); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// isolations are the two ways workers run; supervision must hold in both.
func isolations(t *testing.T) map[string]Isolation {
	t.Helper()
	modes := map[string]Isolation{"unsafe": {Unsafe: true}}
	probe := filepath.Join(searchableDir(t), "probe")
	if err := sandbox.Available(probe); err != nil {
		if os.Getenv("CACHEON_REQUIRE_SANDBOX") != "" {
			t.Fatalf("sandbox required: %v", err)
		}
		t.Logf("no sandbox here, testing the unsafe mode only: %v", err)
		return modes
	}
	modes["sandbox"] = Isolation{}
	return modes
}

func runFake(t *testing.T, iso Isolation, body string, timeout time.Duration) Outcome {
	t.Helper()
	run := searchableDir(t)
	iso.Hide = []string{run}
	out, err := Run(context.Background(), iso, Spec{Python: fakePython(t, body), ValidatorRoot: run, WorkDir: filepath.Join(run, "w"),
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
	for mode, iso := range isolations(t) {
		for _, tc := range cases {
			tc, iso := tc, iso
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				out := runFake(t, iso, tc.body, 2*time.Second)
				if out.Clean() != tc.clean || !strings.HasPrefix(out.Describe(), tc.describe) {
					t.Fatalf("clean=%v describe=%q, want clean=%v %q", out.Clean(), out.Describe(), tc.clean, tc.describe)
				}
			})
		}
	}
}

// TestRunLeavesNothingBehind: a child that ignores SIGTERM, or leaves the
// worker's process group and session, dies with the worker, on a timeout
// and after a clean exit alike.
func TestRunLeavesNothingBehind(t *testing.T) {
	for mode, iso := range isolations(t) {
		for _, tc := range []struct {
			name, body string
			timeout    bool
		}{
			{"timeout", "(trap '' TERM; sleep MARKER) & sleep 600", true},
			{"clean exit", "setsid sleep MARKER </dev/null >/dev/null 2>&1 & sleep 0.2; exit 0", false},
		} {
			// sleep's argument is the marker: 600 seconds and a fraction
			// unique to this run.
			marker := fmt.Sprintf("600.%d%d%d", os.Getpid(), len(mode), len(tc.name))
			if mode == "unsafe" && !tc.timeout {
				// A child that leaves the session escapes a process-group
				// kill: only the sandbox's PID namespace ends it.
				tc.body = "sleep MARKER & sleep 0.2; exit 0"
			}
			out := runFake(t, iso, strings.ReplaceAll(tc.body, "MARKER", marker), 2*time.Second)
			if out.TimedOut != tc.timeout {
				t.Fatalf("%s/%s: outcome %s", mode, tc.name, out.Describe())
			}
			deadline := time.Now().Add(5 * time.Second)
			for markerAlive(marker) {
				if time.Now().After(deadline) {
					t.Fatalf("%s/%s: a child outlived its worker", mode, tc.name)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

func markerAlive(marker string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), marker) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if processAlive(pid) {
				return true
			}
		}
	}
	return false
}

func TestRunCancel(t *testing.T) {
	for mode, iso := range isolations(t) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(300 * time.Millisecond); cancel() }()
		run := searchableDir(t)
		iso.Hide = []string{run}
		out, err := Run(ctx, iso, Spec{Python: fakePython(t, "sleep 600"), ValidatorRoot: run,
			WorkDir: filepath.Join(run, "w"), Request: map[string]int{}, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if !out.Canceled || out.Clean() {
			t.Fatalf("%s: outcome %+v, want canceled", mode, out)
		}
	}
}

func TestRunFeedsTheRequestAndCapturesStreams(t *testing.T) {
	for mode, iso := range isolations(t) {
		run := searchableDir(t)
		iso.Hide = []string{run}
		dir := filepath.Join(run, "w")
		body := `cat > got.json; echo to-stdout; echo to-stderr >&2; printf '%s\n' '{"stage":"start"}' '{"stage":"call","case":2,"phase":"repeat"}' 'garbage' > progress.jsonl`
		out, err := Run(context.Background(), iso, Spec{Python: fakePython(t, body), ValidatorRoot: run, WorkDir: dir,
			Request: map[string]any{"protocol": Protocol, "role": "plan"}, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "got.json"))
		if err != nil || !strings.Contains(string(got), `"role":"plan"`) {
			t.Fatalf("%s: request on stdin = %q, %v", mode, got, err)
		}
		if Tail(dir, StdoutFile, 100) != "to-stdout" || Tail(dir, StderrFile, 100) != "to-stderr" {
			t.Fatalf("%s: streams: %q %q", mode, Tail(dir, StdoutFile, 100), Tail(dir, StderrFile, 100))
		}
		if w := out.Progress.Where(); w != "case 2, repeat call" {
			t.Fatalf("%s: progress %q", mode, w)
		}
	}
}

// TestControlPipeIsTheHarnessWord: only what the harness writes on fd 3
// before closing it marks candidate code as started; progress lines a
// kernel writes afterwards change nothing.
func TestControlPipeIsTheHarnessWord(t *testing.T) {
	for mode, iso := range isolations(t) {
		for _, tc := range []struct {
			body string
			want bool
		}{
			{`[ "$CACHEON_CONTROL_FD" = 3 ] && echo candidate_code >&3; exec 3>&-; echo '{"stage":"start"}' > progress.jsonl; exit 9`, true},
			{`echo '{"stage":"call","case":1,"phase":"first"}' > progress.jsonl; exit 9`, false},
		} {
			out := runFake(t, iso, tc.body, 10*time.Second)
			if out.CandidateCode != tc.want {
				t.Fatalf("%s: CandidateCode = %v, want %v (%s)", mode, out.CandidateCode, tc.want, tc.body)
			}
		}
	}
}

// TestReadsAreBounded: the controller reads a worker's files with limits
// and refuses FIFOs and links instead of blocking on or following them.
func TestReadsAreBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, StderrFile)
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil { // sparse: 3 GiB of log
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("last line"), 3<<30-9); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := Tail(dir, StderrFile, 100); len(got) != 100 || !strings.HasSuffix(got, "last line") {
		t.Fatalf("Tail = %q", got)
	}
	capLogs(dir)
	if fi, _ := os.Stat(big); fi.Size() != MaxLogBytes {
		t.Fatalf("log not capped: %d bytes", fi.Size())
	}
	if err := os.WriteFile(filepath.Join(dir, ResultFile), make([]byte, MaxResultBytes+10), 0o644); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := ReadResult(dir, &v); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized result: %v", err)
	}
	fifoDir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoDir, ResultFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ReadResult(fifoDir, &v); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("FIFO result: %v", err)
	}
	linkDir := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(linkDir, StderrFile)); err != nil {
		t.Fatal(err)
	}
	if got := Tail(linkDir, StderrFile, 100); got != "" {
		t.Fatalf("Tail followed a link: %q", got)
	}
}

func TestRunStartFailure(t *testing.T) {
	for mode, iso := range isolations(t) {
		run := searchableDir(t)
		iso.Hide = []string{run}
		_, err := Run(context.Background(), iso, Spec{Python: "/nonexistent/python3", ValidatorRoot: run,
			WorkDir: filepath.Join(run, "w"), Request: 1})
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") {
			t.Fatalf("%s: err = %v", mode, err)
		}
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

// FuzzReadResult: a worker writes its result file itself, so any bytes
// there must decode or be refused, never crash the controller.
func FuzzReadResult(f *testing.F) {
	f.Add([]byte(`{"protocol":"x","role":"candidate","complete":true,"cases":[{"index":0}]}`))
	f.Add([]byte(`{"passed":true,"cases":[{"index":1,"passed":true,"phases":[{"phase":"eager"}]}]}`))
	f.Add([]byte(`{"load":{"ok":false,"missing_module":"triton"}}`))
	f.Add([]byte(`[[[[[[[[[[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ResultFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		var rec CandidateRecord
		_ = ReadResult(dir, &rec)
		var v Verdict
		_ = ReadResult(dir, &v)
	})
}
