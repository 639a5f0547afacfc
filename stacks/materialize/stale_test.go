package materialize

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/kernels/bundle"
)

// TestHelperBlockedMaterialize is not a test: run by startBlocked, it
// materializes the pristine stack into $MATERIALIZE_BLOCKED_DEST, says so
// on stdout once the temporary tree holds a file, and blocks there until
// it is killed.
func TestHelperBlockedMaterialize(t *testing.T) {
	dest := os.Getenv("MATERIALIZE_BLOCKED_DEST")
	if dest == "" {
		t.Skip("helper process only")
	}
	opts := testOptions(t)
	opts.AfterFile = func(int, string) {
		os.Stdout.WriteString("blocked\n")
		time.Sleep(time.Hour)
	}
	b := evaluationStack(t, opts)
	Materialize(b.manifest, b.resolve, dest, opts)
}

func startBlocked(t *testing.T, dest string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBlockedMaterialize$")
	cmd.Env = append(os.Environ(), "MATERIALIZE_BLOCKED_DEST="+dest)
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

func hidden(t *testing.T, parent string) []string {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".engine.") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A materialize killed while writing leaves its work directory and its
// temporary tree beside the destination. The next run removes both, and
// keeps those of a run that is still going.
func TestMaterializeRemovesKilledRunsLeftovers(t *testing.T) {
	parent := t.TempDir()
	dest := filepath.Join(parent, "engine")

	killed := startBlocked(t, dest)
	leftovers := hidden(t, parent)
	killed.Process.Kill()
	killed.Wait()
	startBlocked(t, dest)
	running := slices.DeleteFunc(hidden(t, parent), func(n string) bool { return slices.Contains(leftovers, n) })
	if len(leftovers) != 2 || len(running) != 2 {
		t.Fatalf("killed run left %v, running run has %v; want a work directory and a temporary tree each", leftovers, running)
	}
	old := time.Now().Add(-time.Hour)
	for _, n := range append(slices.Clone(leftovers), running...) {
		if err := os.Chtimes(filepath.Join(parent, n), old, old); err != nil {
			t.Fatal(err)
		}
	}

	opts := testOptions(t)
	b := evaluationStack(t, opts)
	if _, err := Materialize(b.manifest, b.resolve, dest, opts); err != nil {
		t.Fatal(err)
	}
	left := hidden(t, parent)
	for _, n := range leftovers {
		if slices.Contains(left, n) {
			t.Errorf("the killed run's %s is still there", n)
		}
	}
	for _, n := range running {
		if !slices.Contains(left, n) {
			t.Errorf("the running run's %s was removed", n)
		}
	}
}

// Verify bounds the tree metadata it decodes.
func TestVerifyRefusesOversizedMetadata(t *testing.T) {
	root := filepath.Join(t.TempDir(), "engine")
	big := make([]byte, MaxTreeMetadataBytes+1)
	if _, err := atomicwrite.WriteTree(root, []atomicwrite.File{{Path: TreeMetadataName, Data: big}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(root); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// A tree held in memory verifies exactly as the same tree on disk; any
// change to its bytes, a missing metadata file or a path listed twice is
// refused.
func TestVerifyHeldEqualsVerifyOnDisk(t *testing.T) {
	opts := testOptions(t)
	b := evaluationStack(t, opts, copyBundle(t, "silu_and_mul_triton"), copyBundle(t, "rmsnorm_triton"))
	root := filepath.Join(t.TempDir(), "engine")
	if _, err := Materialize(b.manifest, b.resolve, root, opts); err != nil {
		t.Fatal(err)
	}
	wantRes, wantFiles, err := VerifyInventory(root)
	if err != nil {
		t.Fatal(err)
	}
	held := func() []bundle.MemFile {
		var out []bundle.MemFile
		for p, data := range readTree(t, root) {
			out = append(out, bundle.MemFile{Path: p, Data: []byte(data)})
		}
		return out
	}
	res, files, err := VerifyHeld(held())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, wantRes) || !reflect.DeepEqual(files, wantFiles) {
		t.Fatalf("VerifyHeld differs from VerifyInventory:\n%+v\n%+v", res, wantRes)
	}
	if len(files) < 5 {
		t.Fatalf("the fixture tree has %d files; want a stack with contributions", len(files))
	}
	tests := []struct {
		name string
		edit func([]bundle.MemFile) []bundle.MemFile
	}{
		{"a byte changed", func(fs []bundle.MemFile) []bundle.MemFile {
			for i := range fs {
				if fs[i].Path != TreeMetadataName && len(fs[i].Data) > 0 {
					fs[i].Data = append([]byte{fs[i].Data[0] ^ 1}, fs[i].Data[1:]...)
					break
				}
			}
			return fs
		}},
		{"metadata missing", func(fs []bundle.MemFile) []bundle.MemFile {
			return slices.DeleteFunc(fs, func(f bundle.MemFile) bool { return f.Path == TreeMetadataName })
		}},
		{"a file added", func(fs []bundle.MemFile) []bundle.MemFile { return append(fs, bundle.MemFile{Path: "extra.py"}) }},
		{"a path twice", func(fs []bundle.MemFile) []bundle.MemFile { return append(fs, fs[0]) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := VerifyHeld(tt.edit(held())); err == nil {
				t.Fatal("VerifyHeld accepted the changed tree")
			}
		})
	}
}
