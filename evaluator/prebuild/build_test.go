package prebuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/tools/testtree"
)

// testPython is the interpreter whose torch the tests build against.
func testPython(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CACHEON_TEST_PYTHON")
	if p == "" {
		p = "/usr/bin/python3"
	}
	return p
}

// searchable returns a fresh directory the sandbox user can pass through.
func searchable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := sandbox.SearchableDir(d); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var (
	toolchainOnce sync.Once
	toolchainErr  error
)

// needToolchain skips the test where the host cannot build torch
// extensions for the CPU (no sandbox, no torch, no C++ headers, no
// compiler), unless CACHEON_REQUIRE_CXX_TORCH is set (tools/test.sh sets
// it, since tools/bootstrap.sh installs libtorch-dev), where that is a
// failure.
func needToolchain(t *testing.T, python string) {
	t.Helper()
	toolchainOnce.Do(func() { toolchainErr = Available(context.Background(), python, "cpu", false) })
	if toolchainErr != nil {
		if os.Getenv("CACHEON_REQUIRE_CXX_TORCH") != "" {
			t.Fatalf("a C++ toolchain for torch extensions is required here: %v", toolchainErr)
		}
		t.Skipf("no C++ toolchain for torch extensions here (apt-get install libtorch-dev g++): %v", toolchainErr)
	}
}

// fixture copies a testdata bundle and makes it readable by the sandbox user.
func fixture(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(searchable(t), name)
	testtree.Copy(t, filepath.Join("testdata", name), dir)
	return dir
}

func TestBuildSealsACPULibrary(t *testing.T) {
	needToolchain(t, testPython(t))
	dir := fixture(t, "rmsnorm_cpp")
	store := filepath.Join(searchable(t), "store")
	res, err := Build(context.Background(), Options{Bundle: dir, Store: store, WorkDir: searchable(t), Target: "cpu", Python: testPython(t), Progress: os.Stderr})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Logf("receipt: %+v", res.Receipt)
}

var _ = errors.Is
var _ = strings.Contains
