package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/cacheon/engine/evaluator/worker"
)

// How a report's workers were contained.
const (
	IsolationSandbox = "sandbox" // namespaces, read-only host, seccomp, limits (see package sandbox)
	IsolationNone    = "none"    // --unsafe-no-isolation
)

// runDirPrefix starts every run directory's name; the creating process's
// pid follows, then a random part.
const runDirPrefix = "cacheon-verify-"

// removeStaleRunDirs deletes run directories under parent left by verify
// runs that were killed: ones whose creating process no longer exists. A
// live run's directory (its pid still running) is kept.
func removeStaleRunDirs(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, runDirPrefix) {
			continue
		}
		pidText, _, ok := strings.Cut(strings.TrimPrefix(name, runDirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue // not one of ours, or from before pids were recorded
		}
		if _, err := os.Stat(filepath.Join("/proc", pidText)); err == nil {
			continue
		}
		_ = worker.RemoveAll(filepath.Join(parent, name))
	}
}

// Printable makes worker-derived text safe to print on one line: control
// characters (newlines, ANSI escapes) and Unicode format characters (bidi
// overrides) are written as Go escapes, so nothing a kernel prints can
// start a line of its own or repaint one.
func Printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteRune(' ')
		case r == unicode.ReplacementChar || unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
