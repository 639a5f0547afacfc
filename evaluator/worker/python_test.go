package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fake interpreters: shell scripts that answer the probe as an
// interpreter with torch does, or as one without it does.
const (
	withTorch    = "#!/bin/sh\nexit 0\n"
	withoutTorch = "#!/bin/sh\ncase \"$*\" in *'import torch'*) echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1;; esac\nexit 0\n"
)

// interpreters writes the fake interpreters of TestChoosePython: good
// and notorch in a directory every user may pass, shim (with torch)
// under a 0700 home, as a user-level manager's shims are.
func interpreters(t *testing.T) (good, notorch, shim string) {
	t.Helper()
	dir := searchableDir(t)
	home := filepath.Join(dir, "home")
	for _, d := range []string{filepath.Join(dir, "bin"), filepath.Join(home, "shims")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, body string) string {
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good = write(filepath.Join(dir, "bin", "python3"), withTorch)
	notorch = write(filepath.Join(dir, "bin", "python3-notorch"), withoutTorch)
	shim = write(filepath.Join(home, "shims", "python3"), withTorch)
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(home, 0o755) })
	return good, notorch, shim
}

// TestChoosePython: the commands' interpreter is the configured one when
// it passes, else the first candidate the sandbox user can reach and that
// imports torch; a configured one that fails, or no candidate passing, is
// an error naming each interpreter tried, why, and the fix. The probe
// runs once per candidate reached, and never after the choice.
func TestChoosePython(t *testing.T) {
	good, notorch, shim := interpreters(t)
	const missing = "/nonexistent/bin/python3"
	root := os.Geteuid() == 0
	cases := []struct {
		name       string
		configured string
		env        string // $CACHEON_PYTHON
		candidates []string
		sandboxed  bool
		asRoot     bool     // the sandbox user is another user only under a root controller
		want       string   // the interpreter chosen; "" for an error
		probed     []string // the interpreters probed, in order
		errHas     []string
	}{
		{name: "the first candidate that passes", candidates: []string{shim, missing, notorch, good}, sandboxed: true, asRoot: true,
			want: good, probed: []string{notorch, good}},
		{name: "no candidate passes", candidates: []string{shim, missing, notorch}, sandboxed: true, asRoot: true,
			probed: []string{notorch}, errHas: []string{"no worker interpreter found; tried:",
				shim + ": the sandbox user cannot reach it: sandbox: " + filepath.Dir(filepath.Dir(shim)) + " (on the way to " + shim + ") is mode 0700",
				missing + ": not found", notorch + ": it cannot import torch: ModuleNotFoundError: No module named 'torch'",
				"set CACHEON_PYTHON (or pass --python)", "CACHEON_PYTHON=/usr/bin/python3", "apt-get install python3-torch"}},
		{name: "unisolated workers run as the caller, who reaches the shim", candidates: []string{shim, good}, want: shim, probed: []string{shim}},
		{name: "--python without torch is refused, the candidates untried", configured: notorch, candidates: []string{good}, sandboxed: true,
			probed: []string{notorch}, errHas: []string{"worker interpreter from --python refused:", notorch + ": it cannot import torch", "set CACHEON_PYTHON"}},
		{name: "$CACHEON_PYTHON under a 0700 home is refused", env: shim, candidates: []string{good}, sandboxed: true, asRoot: true,
			errHas: []string{"worker interpreter from $CACHEON_PYTHON refused:", shim + ": the sandbox user cannot reach it", "is mode 0700"}},
		{name: "--python over $CACHEON_PYTHON", configured: good, env: notorch, sandboxed: true, want: good, probed: []string{good}},
		{name: "$CACHEON_PYTHON that passes", env: good, candidates: []string{notorch}, sandboxed: true, want: good, probed: []string{good}},
		{name: "a missing --python", configured: missing, sandboxed: true, errHas: []string{missing + ": not found"}},
		{name: "one interpreter listed twice is probed once", candidates: []string{notorch, notorch}, sandboxed: true,
			probed: []string{notorch}, errHas: []string{notorch + ": it cannot import torch"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.asRoot && !root {
				t.Skip("the sandbox user is the caller itself unless the controller is root")
			}
			t.Setenv(PythonEnv, c.env)
			var probed []string
			probe := func(ctx context.Context, python string) error {
				probed = append(probed, python)
				return ProbeTorch(ctx, python)
			}
			got, err := ChoosePython(context.Background(), PythonChoice{Configured: c.configured, Candidates: c.candidates, Sandboxed: c.sandboxed, Probe: probe})
			if strings.Join(probed, " ") != strings.Join(c.probed, " ") {
				t.Errorf("probed %v, want %v", probed, c.probed)
			}
			if c.want != "" {
				if err != nil || got != c.want {
					t.Fatalf("chose %q (%v), want %s", got, err, c.want)
				}
				return
			}
			var perr *PythonError
			if !errors.As(err, &perr) {
				t.Fatalf("chose %q (%v), want a *PythonError", got, err)
			}
			for _, want := range c.errHas {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestChoosePythonDefaults: without candidates the fixed list is tried,
// python3 on PATH first.
func TestChoosePythonDefaults(t *testing.T) {
	good, _, _ := interpreters(t)
	t.Setenv(PythonEnv, "")
	t.Setenv("PATH", filepath.Dir(good))
	var probed []string
	got, err := ChoosePython(context.Background(), PythonChoice{Sandboxed: true, Probe: func(ctx context.Context, python string) error {
		probed = append(probed, python)
		return nil
	}})
	if err != nil || got != good || len(probed) != 1 {
		t.Fatalf("chose %q (%v) after probing %v, want python3 on PATH (%s)", got, err, probed, good)
	}
	if PythonCandidates[0] != DefaultPython || PythonCandidates[1] != "/usr/bin/python3" || PythonCandidates[2] != "/usr/local/bin/python3" {
		t.Errorf("candidates %v", PythonCandidates)
	}
}
