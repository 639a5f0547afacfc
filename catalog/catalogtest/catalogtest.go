// Package catalogtest gives tests the default target catalog with its two
// largest case shapes cut down.
//
// The default catalog's largest cases, [4096, 4096] for
// activation.silu_and_mul and norm.rmsnorm (jittered up to about 5,500
// tokens), are 16 to 20 times the bytes of every other case of their slot:
// on the CPU lane one verify of a norm.rmsnorm bundle spends about 25 s of
// CPU and 1 GB of memory on them, against 9 s and 0.3 GB with them at
// [256, 4096]. A test whose subject is a defence, a fixture or a verdict,
// not the catalog's largest shapes, runs the same slots, contracts,
// tolerances and policies under Small; the tests of the catalog's shapes
// themselves, the main job and every command a user runs keep the default.
package catalogtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/catalog"
)

// The shape Small replaces, and what it puts in its place: the same hidden
// size, 1/16 of the tokens (still larger than every other case of the two
// slots but one, so a kernel's large-tensor path still runs).
var (
	largest = []byte("[4096, 4096]")
	smaller = []byte("[256, 4096]")
)

// largestCount is how many slots carry the largest shape; Source refuses a
// default catalog where that changed, so a new large shape is a decision,
// not a silent slowdown of every test.
const largestCount = 2

// Source returns the default catalog's HCL with its largest shapes cut
// down.
func Source() ([]byte, error) {
	src := catalog.DefaultSource()
	if n := bytes.Count(src, largest); n != largestCount {
		return nil, fmt.Errorf("%s has %d slots with shape %s, catalogtest expects %d: update catalogtest", catalog.DefaultFile, n, largest, largestCount)
	}
	return bytes.ReplaceAll(src, largest, smaller), nil
}

// Small returns the parsed small catalog.
func Small(t testing.TB) *catalog.Catalog {
	t.Helper()
	src, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	c, diags := catalog.Parse(src, "small-targets.hcl")
	if diags.HasErrors() {
		t.Fatalf("small catalog: %v", diags)
	}
	return c
}

// SmallFile writes the small catalog into a test temporary directory and
// returns its path, for commands that take --catalog.
func SmallFile(t testing.TB) string {
	t.Helper()
	src, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "small-targets.hcl")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
