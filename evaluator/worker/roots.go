package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
)

// A sandbox's root holds only an allow-list of host paths (the system
// trees, see evaluator/sandbox), so an interpreter installed elsewhere
// (a virtual environment, /opt/conda, a locally built Python) would find
// neither its standard library nor its packages. InterpreterRoots asks
// the interpreter where they are, and the worker binds those read-only.

// rootsProgram prints, as a JSON list, every directory the interpreter
// reads its code from: its prefixes, the directory of its real
// executable, the sysconfig install paths and sys.path as an isolated
// worker (-I) has it, .pth additions included.
const rootsProgram = `import json, os, sys, sysconfig
p = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
     os.path.dirname(os.path.realpath(sys.executable))}
for k in ("stdlib", "platstdlib", "purelib", "platlib"):
    try:
        p.add(sysconfig.get_path(k))
    except KeyError:
        pass
p.update(x for x in sys.path if x)
print(json.dumps(sorted(x for x in p if x)))`

// rootsProbeTimeout bounds the probe: the interpreter starts without
// importing torch, a fraction of a second even on a loaded host.
const rootsProbeTimeout = 60 * time.Second

// RootCache remembers each interpreter's roots, so a run that starts
// many workers probes its interpreter once. Share one through
// Isolation.Roots; safe for concurrent use.
type RootCache struct {
	mu    sync.Mutex
	roots map[string][]string
}

// NewRootCache returns an empty cache.
func NewRootCache() *RootCache { return &RootCache{roots: map[string][]string{}} }

// Roots returns python's roots, probing it on first use. A nil cache
// probes nothing and returns none: the sandbox then holds only the
// system trees and the interpreter's own file, enough for a system
// interpreter (/usr/bin/python3) and for stand-ins that are not
// interpreters at all (the supervision tests' shell scripts, which
// would not answer the probe). The commands always pass a cache.
func (c *RootCache) Roots(ctx context.Context, python string) ([]string, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.roots[python]; ok {
		return r, nil
	}
	r, err := InterpreterRoots(ctx, python)
	if err != nil {
		return nil, err
	}
	c.roots[python] = r
	return r, nil
}

// InterpreterRoots are the host directories python reads its code from
// that a sandbox's root does not already hold: existing directories (and
// the directories they resolve to), outermost only, never "/" (an
// interpreter whose prefix is the host root gets nothing from it that
// the system trees lack, and binding it would bring the host tree back).
func InterpreterRoots(ctx context.Context, python string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, rootsProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-I", "-c", rootsProgram)
	cmd.Env, cmd.Dir = sandboxEnv(nil), "/"
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		// The interpreter's own last words say what is wrong with it (a
		// broken installation, a stand-in that is no interpreter).
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if msg := lastLine(strings.TrimSpace(string(ee.Stderr))); msg != "" {
				err = fmt.Errorf("%w: %s", err, bound(msg, 300))
			}
		}
		return nil, fmt.Errorf("worker interpreter %s: asking for its library directories: %w", python, err)
	}
	var listed []string
	if err := json.Unmarshal(out, &listed); err != nil {
		return nil, fmt.Errorf("worker interpreter %s: its library directories: %w", python, err)
	}
	listed = append(listed, filepath.Dir(python))
	return BindDirs(listed...), nil
}

// BindDirs are the directories among paths (and what they resolve to)
// that a sandbox must be given for a program to read them: existing,
// absolute, not "/", not already in every sandbox's root, and only the
// outermost of those inside one another.
func BindDirs(paths ...string) []string {
	var dirs []string
	add := func(p string) {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) || p == "/" || sandbox.Provided(p) {
			return
		}
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			return // a zip on sys.path that is not there, say
		}
		dirs = append(dirs, p)
	}
	for _, p := range paths {
		add(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			add(r)
		}
	}
	sort.Strings(dirs)
	var out []string
	for _, d := range dirs {
		if n := len(out); n > 0 && (out[n-1] == d || strings.HasPrefix(d, out[n-1]+"/")) {
			continue
		}
		out = append(out, d)
	}
	return out
}
