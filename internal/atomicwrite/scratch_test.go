package atomicwrite

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHelperBlockedWriter is not a test: run by startBlockedWriter, it
// starts WriteTree into $ATOMICWRITE_BLOCKED_DEST, says so on stdout once
// the temporary tree holds a file, and blocks there until it is killed.
func TestHelperBlockedWriter(t *testing.T) {
	dest := os.Getenv("ATOMICWRITE_BLOCKED_DEST")
	if dest == "" {
		t.Skip("helper process only")
	}
	WriteTree(dest, []File{{Path: "a/b.txt", Data: []byte("x")}}, AfterFile(func(int, string) {
		os.Stdout.WriteString("blocked\n")
		time.Sleep(time.Hour)
	}))
}

// startBlockedWriter starts a process that writes a tree into dest and
// stops half-way, its temporary tree beside dest.
func startBlockedWriter(t *testing.T, dest string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBlockedWriter$")
	cmd.Env = append(os.Environ(), "ATOMICWRITE_BLOCKED_DEST="+dest)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "blocked\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	return cmd
}

func scratchEntries(t *testing.T, parent string) []string {
	t.Helper()
	var out []string
	for _, name := range listDir(t, parent) {
		if strings.HasPrefix(name, ".tree.") {
			out = append(out, name)
		}
	}
	return out
}

func backdate(t *testing.T, parent string, names ...string) {
	t.Helper()
	old := time.Now().Add(-time.Hour) // well past staleAfter
	for _, n := range names {
		if err := os.Chtimes(filepath.Join(parent, n), old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// A writer killed half-way leaves its temporary tree beside the
// destination. The next WriteTree there removes it, and keeps the
// temporary tree of a writer that is still running.
func TestWriteTreeRemovesKilledWritersTree(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "tree")

	killed := startBlockedWriter(t, dest)
	leftover := scratchEntries(t, parent)
	killed.Process.Kill()
	killed.Wait()
	live := startBlockedWriter(t, dest)
	running := slices.DeleteFunc(scratchEntries(t, parent), func(n string) bool { return slices.Contains(leftover, n) })
	if len(leftover) != 1 || len(running) != 1 {
		t.Fatalf("scratch entries: killed %v, running %v", leftover, running)
	}
	// Both were made a while ago; only the lock tells them apart.
	backdate(t, parent, leftover[0], running[0])

	// Names that are not exactly a scratch entry of "tree" are not ours.
	decoys := []string{".tree.tmp-12345", ".tree.tmp-abc-1", ".tree.tmp-1-2.bak", "tree.tmp-1-2", ".other.tmp-1-2", ".tree.work-0-1", ".treex.tmp-1-2"}
	for _, d := range decoys {
		if err := os.Mkdir(filepath.Join(parent, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	backdate(t, parent, decoys...)

	if _, err := WriteTree(dest, []File{{Path: "f", Data: []byte("y")}}); err != nil {
		t.Fatal(err)
	}
	names := listDir(t, parent)
	if slices.Contains(names, leftover[0]) {
		t.Errorf("the killed writer's tree %s is still there: %v", leftover[0], names)
	}
	if !slices.Contains(names, running[0]) {
		t.Errorf("the running writer's tree %s was removed: %v", running[0], names)
	}
	for _, d := range decoys {
		if !slices.Contains(names, d) {
			t.Errorf("%s was removed", d)
		}
	}
	live.Process.Kill()
	live.Wait()
}

// An unlocked entry younger than staleAfter may be one whose creator has
// not taken its lock yet: it stays.
func TestRemoveStaleKeepsYoungEntries(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "tree")
	young, old := ".tree.work-1-1", ".tree.tmp-1-2"
	for _, n := range []string{young, old} {
		if err := os.MkdirAll(filepath.Join(parent, n, "ro"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(parent, n, "ro", "f"), []byte("x"), 0o444)
		os.Chmod(filepath.Join(parent, n, "ro"), 0o555) // removal must cope with read-only directories
	}
	backdate(t, parent, old)
	removed, err := RemoveStale(dest)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || filepath.Base(removed[0]) != old {
		t.Fatalf("removed %v, want only %s", removed, old)
	}
	if names := listDir(t, parent); !slices.Equal(names, []string{young}) {
		t.Fatalf("left %v, want %s", names, young)
	}
	os.Chmod(filepath.Join(parent, young, "ro"), 0o755)
}

// WriteFile's temporary files are scratch entries too: locked while in
// use, named so that RemoveStale recognizes a killed writer's.
func TestWriteFileLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	p := filepath.Join(parent, "tree")
	if err := WriteFile(p, []byte("z"), 0o644); err != nil {
		t.Fatal(err)
	}
	if names := listDir(t, parent); !slices.Equal(names, []string{"tree"}) {
		t.Fatalf("left %v", names)
	}
	f, err := createScratchFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !scratchName("tree").MatchString(filepath.Base(f.Name())) {
		t.Fatalf("temporary file %s is not named as a scratch entry", f.Name())
	}
	backdate(t, parent, filepath.Base(f.Name()))
	if removed, _ := RemoveStale(p); len(removed) != 0 {
		t.Fatalf("removed the locked file: %v", removed)
	}
	f.Close()
	if removed, _ := RemoveStale(p); len(removed) != 1 {
		t.Fatalf("removed %v, want the unlocked file", removed)
	}
}
