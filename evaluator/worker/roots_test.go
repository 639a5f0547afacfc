package worker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// venv makes a virtual environment of the system interpreter under a
// directory the sandbox user can reach, with one module of its own in
// its site-packages: an interpreter whose packages the sandbox's system
// trees do not hold.
func venv(t *testing.T) (python, site string) {
	t.Helper()
	base := "/usr/bin/python3"
	if _, err := os.Stat(base); err != nil {
		t.Skip("no /usr/bin/python3 to make a virtual environment of")
	}
	dir := filepath.Join(searchableDir(t), "venv")
	if out, err := exec.Command(base, "-m", "venv", "--without-pip", dir).CombinedOutput(); err != nil {
		t.Skipf("python3 -m venv: %v: %s", err, out)
	}
	sites, _ := filepath.Glob(filepath.Join(dir, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		t.Fatalf("site-packages of %s: %v", dir, sites)
	}
	if err := os.WriteFile(filepath.Join(sites[0], "cacheon_roots_probe.py"), []byte("MARK = 'VENV-MODULE'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "bin", "python3"), sites[0]
}

// TestInterpreterRoots: a virtual environment's directory is a root; the
// system interpreter's are all under /usr, which every sandbox holds.
func TestInterpreterRoots(t *testing.T) {
	t.Parallel()
	python, site := venv(t)
	roots, err := InterpreterRoots(context.Background(), python)
	if err != nil {
		t.Fatal(err)
	}
	env := filepath.Dir(filepath.Dir(python))
	if !slices.Contains(roots, env) {
		t.Fatalf("roots %v do not hold the environment %s", roots, env)
	}
	for _, r := range roots {
		if strings.HasPrefix(site, r+"/") && r != env {
			t.Fatalf("roots %v list %s inside %s", roots, r, env)
		}
		if r == "/" || strings.HasPrefix(r, "/usr") {
			t.Fatalf("roots %v list %s, which the sandbox holds already", roots, r)
		}
	}
	system, err := InterpreterRoots(context.Background(), "/usr/bin/python3")
	if err != nil {
		t.Fatal(err)
	}
	if len(system) != 0 {
		t.Fatalf("the system interpreter's roots are %v, want none beyond /usr", system)
	}
}

// TestSandboxBindsTheInterpreterRoots: a worker on a virtual
// environment's interpreter imports the environment's packages in the
// allow-list sandbox once its roots are bound (Isolation.Roots), and not
// without them: the root holds nothing the allow-list does not name.
func TestSandboxBindsTheInterpreterRoots(t *testing.T) {
	t.Parallel()
	isos := isolations(t)
	if _, ok := isos["sandbox"]; !ok {
		t.Skip("no sandbox here")
	}
	python, _ := venv(t)
	for _, tc := range []struct {
		name  string
		roots *RootCache
		want  string
	}{
		{"with the roots", NewRootCache(), "VENV-MODULE"},
		{"without them", nil, "No module named 'cacheon_roots_probe'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := searchableDir(t)
			validator := filepath.Join(run, "validator", "cacheon_worker")
			if err := os.MkdirAll(validator, 0o755); err != nil {
				t.Fatal(err)
			}
			// A harness of its own: the test is about what the
			// interpreter can import, not about the real harness.
			main := "import cacheon_roots_probe\nprint(cacheon_roots_probe.MARK)\n"
			for name, src := range map[string]string{"__init__.py": "", "__main__.py": main} {
				if err := os.WriteFile(filepath.Join(validator, name), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			iso := Isolation{Hide: []string{run}, Roots: tc.roots}
			work := filepath.Join(run, "w")
			_, err := Run(context.Background(), iso, Spec{Python: python, ValidatorRoot: filepath.Dir(validator), WorkDir: work,
				Request: map[string]string{}, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			got := Tail(work, StdoutFile, 2000) + Tail(work, StderrFile, 2000)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("want %q in the worker's output:\n%s", tc.want, got)
			}
		})
	}
}

// TestInterpreterRootsSaysWhyAnInterpreterFailed: an interpreter that
// cannot answer the probe is refused with its own last words.
func TestInterpreterRootsSaysWhyAnInterpreterFailed(t *testing.T) {
	t.Parallel()
	broken := fakePython(t, "echo 'ModuleNotFoundError: No module named encodings' >&2; exit 1")
	_, err := InterpreterRoots(context.Background(), broken)
	if err == nil || !strings.Contains(err.Error(), "No module named encodings") || !strings.Contains(err.Error(), broken) {
		t.Fatalf("err = %v, want the interpreter named with its error", err)
	}
}
