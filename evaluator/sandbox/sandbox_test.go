package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// need skips the test where sandboxes cannot be made, unless
// CACHEON_REQUIRE_SANDBOX is set (as the test command sets it), where that
// is a failure.
func need(t *testing.T) {
	t.Helper()
	if err := Available(filepath.Join(searchable(t), "probe")); err != nil {
		if os.Getenv("CACHEON_REQUIRE_SANDBOX") != "" {
			t.Fatalf("sandbox required: %v", err)
		}
		t.Skipf("no sandbox here: %v", err)
	}
}

// box is a sandbox with a run directory holding a read-only "code"
// directory, a writable "work" directory and a "secret" sibling that
// stays hidden.
type box struct {
	run, code, work, secret string
}

func newBox(t *testing.T) box {
	t.Helper()
	run := searchable(t)
	b := box{run: run, code: filepath.Join(run, "code"), work: filepath.Join(run, "work"), secret: filepath.Join(run, "secret")}
	for _, d := range []string{b.code, b.secret, filepath.Join(run, "root")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := PrepareWritable(b.work); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(b.code, "judge.py"), filepath.Join(b.secret, "key")} {
		if err := os.WriteFile(f, []byte("original\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b box) spec(script string, extra ...Proc) Spec {
	p := Proc{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin", "WORK=" + b.work},
		Dir: b.work, Stdout: filepath.Join(b.work, "out"), Stderr: filepath.Join(b.work, "err")}
	return Spec{Procs: append([]Proc{p}, extra...), Root: filepath.Join(b.run, "root"), ReadOnly: []string{b.code},
		Writable: []string{b.work}, Hide: []string{b.run}, Timeout: 60 * time.Second, Log: filepath.Join(b.run, "init.log")}
}

func (b box) output(t *testing.T) string {
	t.Helper()
	out, _ := os.ReadFile(filepath.Join(b.work, "out"))
	errOut, _ := os.ReadFile(filepath.Join(b.work, "err"))
	return string(out) + string(errOut)
}

// searchable returns a fresh test directory the sandbox user can pass
// through (t.TempDir makes 0700 directories).
func searchable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := SearchableDir(d); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runSpec(t *testing.T, s Spec) Result {
	t.Helper()
	res, err := Run(context.Background(), s)
	if err != nil {
		log, _ := os.ReadFile(s.Log)
		t.Fatalf("Run: %v (init log: %s)", err, log)
	}
	return res
}

// TestContainment runs one hostile script per attack and checks what it
// could and could not do. Each script prints what it managed; none may
// print a success marker.
func TestContainment(t *testing.T) {
	need(t)
	t.Setenv("CACHEON_CALLER_SECRET", "s3cr3t")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	cases := []struct {
		name   string
		script func(b box) string
		forbid string // printed only if the attack worked
		want   string // printed when the defence held ("" = no check)
	}{
		{"read /etc/shadow", func(b box) string { return "cat /etc/shadow; true" }, "root:", ""},
		{"rewrite the read-only code", func(b box) string {
			return fmt.Sprintf("chmod -R u+w %[1]s; echo pwned > %[1]s/judge.py && echo WROTE-CODE; true", b.code)
		}, "WROTE-CODE", ""},
		{"write the host filesystem", func(b box) string {
			return "echo x > /usr/cacheon-escape && echo WROTE-HOST; echo x > /etc/cacheon-escape && echo WROTE-HOST; true"
		}, "WROTE-HOST", ""},
		{"see a hidden sibling", func(b box) string {
			return fmt.Sprintf("cat %s/key && echo SAW-SECRET; ls %s", b.secret, b.run)
		}, "SAW-SECRET", ""},
		{"reach the host's loopback", func(b box) string {
			return fmt.Sprintf(`python3 -c "import socket; socket.create_connection(('127.0.0.1', %d), timeout=2); print('CONNECTED')"; true`, port)
		}, "CONNECTED", "ConnectionRefusedError"},
		{"see the caller's environment", func(b box) string { return "env; cat /proc/1/environ; true" }, "s3cr3t", ""},
		{"capabilities", func(b box) string { return "grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs|Seccomp):' /proc/self/status" },
			"", "CapEff:\t0000000000000000"},
		{"make a namespace", func(b box) string { return "unshare -r true && echo UNSHARED; true" }, "UNSHARED", ""},
		{"mount", func(b box) string { return "mount -t tmpfs none /tmp && echo MOUNTED; true" }, "MOUNTED", ""},
		{"write the private tmp", func(b box) string { return "echo ok > /tmp/x && cat /tmp/x" }, "", "ok"},
		{"write the work directory", func(b box) string { return "echo ok > $WORK/x && cat $WORK/x" }, "", "ok"},
		{"signal the controller", func(b box) string { return fmt.Sprintf("kill -9 %d && echo KILLED; true", os.Getpid()) }, "KILLED", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBox(t)
			res := runSpec(t, b.spec(tc.script(b)))
			out := b.output(t)
			if !res.Exits[0].Started {
				t.Fatalf("not started: %s", out)
			}
			if tc.forbid != "" && strings.Contains(out, tc.forbid) {
				t.Fatalf("the attack worked:\n%s", out)
			}
			if tc.want != "" && !strings.Contains(out, tc.want) {
				t.Fatalf("want %q in:\n%s", tc.want, out)
			}
			if data, _ := os.ReadFile(filepath.Join(b.code, "judge.py")); string(data) != "original\n" {
				t.Fatalf("read-only code changed: %q", data)
			}
		})
	}
}

// TestNothingOutlivesTheSandbox: a process that leaves its group and
// session is still killed when the sandbox ends, on a clean exit and on a
// timeout alike.
func TestNothingOutlivesTheSandbox(t *testing.T) {
	need(t)
	for _, timeout := range []time.Duration{0, 2 * time.Second} {
		b := newBox(t)
		// sleep's argument is the marker: 600 seconds and a fraction unique
		// to this run.
		marker := fmt.Sprintf("600.%d%d", os.Getpid(), timeout/time.Second)
		script := "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & sleep 0.3; pgrep -f " + marker + " >/dev/null && echo RUNNING"
		if timeout > 0 {
			script += "; sleep 600"
		}
		s := b.spec(script)
		s.Timeout = timeout
		if timeout == 0 {
			s.Timeout = time.Minute
		}
		res := runSpec(t, s)
		if timeout > 0 && !res.TimedOut {
			t.Fatalf("want a timeout, got %+v", res)
		}
		if out := b.output(t); !strings.Contains(out, "RUNNING") {
			t.Fatalf("the detached child never ran: %s", out)
		}
		deadline := time.Now().Add(5 * time.Second)
		for alive(marker) {
			if time.Now().After(deadline) {
				t.Fatalf("%s outlived the sandbox (timeout %s)", marker, timeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func alive(marker string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), marker) {
			return true
		}
	}
	return false
}

func TestLimits(t *testing.T) {
	need(t)
	cases := []struct {
		name   string
		limits Limits
		script string
		forbid string
	}{
		{"memory", Limits{Memory: 1 << 30},
			`python3 -c "b = bytearray(3 << 30); print('ALLOCATED')"; true`, "ALLOCATED"},
		{"processes", Limits{Processes: 48},
			`i=0; while [ $i -lt 200 ]; do sleep 5 & i=$((i+1)); done; echo SPAWNED-200; true`, "SPAWNED-200"},
		{"file size", Limits{FileSize: 1 << 20},
			`head -c 4000000 /dev/zero > $WORK/big; [ $(stat -c %s $WORK/big) -gt 1048576 ] && echo BIG; true`, "BIG"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBox(t)
			s := b.spec(tc.script)
			s.Limits = tc.limits
			runSpec(t, s)
			if out := b.output(t); strings.Contains(out, tc.forbid) {
				t.Fatalf("limit not enforced:\n%s", out)
			}
		})
	}
}

func TestExitsAndStopOnFailure(t *testing.T) {
	need(t)
	b := newBox(t)
	s := b.spec("exit 3", Proc{Path: "/bin/sleep", Args: []string{"sleep", "600"}, Dir: "/"},
		Proc{Path: "/bin/sh", Args: []string{"sh", "-c", "kill -SEGV $$"}, Dir: "/"})
	s.StopOnFailure = true
	start := time.Now()
	res := runSpec(t, s)
	if time.Since(start) > 30*time.Second {
		t.Fatalf("a failed process did not stop the others")
	}
	// Whichever failure came first stopped the rest: "exit 3" either
	// failed by itself or, when the SIGSEGV came first on a loaded host,
	// was stopped with the sleeper.
	if e, segv := res.Exits[0], res.Exits[2]; e.Code != 3 && !(e.Stopped && e.Signal == "SIGKILL" && segv.Signal == "SIGSEGV") {
		t.Fatalf("first exit %+v (the segfaulting process: %+v)", e, segv)
	}
	if e := res.Exits[1]; !e.Stopped || e.Signal != "SIGKILL" {
		t.Fatalf("sleeper %+v, want stopped by SIGKILL", e)
	}

	b = newBox(t)
	s = b.spec("exit 0")
	s.Procs[0].Path = "/nonexistent/python3"
	res = runSpec(t, s)
	if e := res.Exits[0]; e.Started || e.Code != 127 {
		t.Fatalf("missing executable: %+v", e)
	}
}

func TestCancel(t *testing.T) {
	need(t)
	b := newBox(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := Run(ctx, b.spec("sleep 600"))
	if err != nil || !res.Canceled {
		t.Fatalf("res %+v err %v, want canceled", res, err)
	}
}

func TestSetupErrorsAreReported(t *testing.T) {
	need(t)
	b := newBox(t)
	s := b.spec("true")
	s.ReadOnly = append(s.ReadOnly, "/nonexistent/cacheon")
	_, err := Run(context.Background(), s)
	var se *SetupError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "/nonexistent/cacheon") {
		t.Fatalf("err %v, want a set-up error naming the path", err)
	}
}

// TestControlPipe: a process's control pipe carries what it wrote before
// closing it, and no process inherits the init's status pipe or another
// process's control pipe.
func TestControlPipe(t *testing.T) {
	need(t)
	b := newBox(t)
	s := b.spec(`echo loading >&3; exec 3>&-; ls -l /proc/self/fd; echo '{"proc":0,"code":0}' >&4 && echo WROTE-STATUS; true`,
		Proc{Path: "/bin/sh", Args: []string{"sh", "-c", "echo other >&3"}, Dir: "/", Control: true})
	s.Procs[0].Control = true
	res := runSpec(t, s)
	if got := string(res.Exits[0].Control); got != "loading\n" {
		t.Fatalf("control pipe 0 = %q", got)
	}
	if got := string(res.Exits[1].Control); got != "other\n" {
		t.Fatalf("control pipe 1 = %q", got)
	}
	if out := b.output(t); strings.Contains(out, "WROTE-STATUS") {
		t.Fatalf("a process reached the status pipe:\n%s", out)
	}
}

// TestSessionPipes holds a conversation with a process while it runs: it
// reads requests on fd 4 and answers on fd 5, and sees the end of input
// when the controller closes its end.
func TestSessionPipes(t *testing.T) {
	need(t)
	b := newBox(t)
	s := b.spec(`while read -r line <&4; do echo "pong $line" >&5; done; echo done >&5`)
	s.Procs[0].Session = true
	sb, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	ss := sb.Session(0)
	if ss == nil {
		t.Fatal("no session for a Session process")
	}
	frames := bufio.NewScanner(ss.Frames)
	for i := 0; i < 3; i++ {
		if _, err := fmt.Fprintf(ss.Send, "ping %d\n", i); err != nil {
			t.Fatal(err)
		}
		if !frames.Scan() || frames.Text() != fmt.Sprintf("pong ping %d", i) {
			t.Fatalf("reply %d = %q (%v)", i, frames.Text(), frames.Err())
		}
	}
	ss.Send.Close()
	if !frames.Scan() || frames.Text() != "done" {
		t.Fatalf("after end of input: %q", frames.Text())
	}
	res, err := sb.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Exits[0].Code != 0 {
		t.Fatalf("exit %+v: %s", res.Exits[0], b.output(t))
	}
}

// TestFilesArePassed: a process gets its Files as fds 6, 7, ... (here
// without session pipes, whose fds 4 and 5 stay closed), reads what the
// controller's descriptors hold though no path to them is visible inside,
// and a file given to one process is not open in another.
func TestFilesArePassed(t *testing.T) {
	need(t)
	b := newBox(t)
	var files []*os.File
	for _, content := range []string{"first\n", "second\n"} {
		// Outside the sandbox's view: the secret directory is hidden.
		path := filepath.Join(b.secret, strings.TrimSpace(content))
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	s := b.spec(`cat <&6; cat <&7; ls `+b.secret+` 2>/dev/null && echo SAW-SECRET; true`,
		Proc{Path: "/bin/sh", Args: []string{"sh", "-c", "cat <&6 && echo OTHER-HAD-IT; true"}, Dir: "/",
			Stdout: filepath.Join(b.work, "other")})
	s.Procs[0].Files = files
	runSpec(t, s)
	if out := b.output(t); !strings.HasPrefix(out, "first\nsecond\n") || strings.Contains(out, "SAW-SECRET") {
		t.Fatalf("the process's output:\n%s", out)
	}
	if other, _ := os.ReadFile(filepath.Join(b.work, "other")); strings.Contains(string(other), "OTHER-HAD-IT") {
		t.Fatalf("another process had fd 6: %s", other)
	}
}

// TestKillEndsASession: a process that never answers is stopped by Kill,
// and its frames end.
func TestKillEndsASession(t *testing.T) {
	need(t)
	b := newBox(t)
	s := b.spec(`echo ready >&5; sleep 600`)
	s.Procs[0].Session = true
	sb, err := Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	frames := bufio.NewScanner(sb.Session(0).Frames)
	if !frames.Scan() || frames.Text() != "ready" {
		t.Fatalf("first frame %q", frames.Text())
	}
	sb.Kill()
	res, err := sb.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Killed || res.Exits[0].Code != -1 {
		t.Fatalf("exit %+v after Kill", res.Exits[0])
	}
	if n, err := sb.Session(0).Frames.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("frames still open after Kill: %d, %v", n, err)
	}
}

// TestExecutable: the sandbox user (another user when the controller is
// root) runs a program only through directories others may pass, on the
// path as named and as its symlinks resolve, and only a file others may
// execute.
func TestExecutable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox user is the caller itself unless the controller is root")
	}
	open := searchable(t)
	home := filepath.Join(open, "home") // a home directory as root has it
	closed := filepath.Join(home, "shims")
	for _, d := range []string{closed, filepath.Join(open, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(home, 0o755) })
	write := func(path string, mode os.FileMode) string {
		if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write(filepath.Join(open, "bin", "python3"), 0o755)
	private := write(filepath.Join(open, "bin", "private"), 0o750)
	hidden := write(filepath.Join(closed, "python3"), 0o755)
	link := filepath.Join(open, "bin", "shim")
	if err := os.Symlink(hidden, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		want       []string // "" : nil; else the error says each
	}{
		{"a system interpreter", "/bin/sh", nil},
		{"a program in a searchable directory", good, nil},
		{"under a 0700 directory", hidden, []string{home + " (on the way to " + hidden + ")", "is mode 0700"}},
		{"a link to a program under a 0700 directory", link, []string{home, "is mode 0700", link + " (-> " + hidden + ")"}},
		{"a program others may not execute", private, []string{private, "is mode 0750", "cannot execute"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Executable(c.path)
			if c.want == nil {
				if err != nil {
					t.Fatalf("Executable(%s): %v", c.path, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Executable(%s): nil, want a refusal", c.path)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v does not say %q", err, w)
				}
			}
		})
	}
	// Start makes the same check before it makes anything.
	_, err := Run(context.Background(), Spec{Procs: []Proc{{Path: link, Args: []string{"shim"}}}, Root: filepath.Join(open, "root")})
	if err == nil || !strings.Contains(err.Error(), link+" (-> "+hidden+")") {
		t.Errorf("Run of a link to a program under a 0700 directory: %v", err)
	}
}
