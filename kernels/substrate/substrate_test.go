// Package substrate_test runs the engine substrate's Python suite, with a
// model written by the Go test-model generator so the Python safetensors
// reader is checked against the Go writer.
package substrate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/testtree"

	"github.com/cacheon/engine/models/testmodel"
)

func TestPythonSuite(t *testing.T) {
	py := os.Getenv("CACHEON_TEST_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if out, err := exec.Command(py, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Skipf("the substrate suite needs torch and numpy in %s (apt-get install python3-torch python3-numpy, or set CACHEON_TEST_PYTHON): %s",
			py, strings.TrimSpace(string(out)))
	}
	model := filepath.Join(t.TempDir(), "model")
	if _, err := testmodel.Write(model, testmodel.DefaultShape(false), 3); err != nil {
		t.Fatal(err)
	}
	// The suite hashes the substrate package's files and imports the
	// reference package beside it: it runs on a copy of both, which under
	// Bazel turns the runfiles' links back into the files they stand for.
	kernels := t.TempDir()
	for _, rel := range []string{"substrate/cacheon_substrate", "substrate/tests", "reference/cacheon_reference"} {
		testtree.Copy(t, filepath.Join("..", filepath.FromSlash(rel)), filepath.Join(kernels, filepath.FromSlash(rel)))
	}
	cmd := exec.Command(py, "-B", "-m", "unittest", "discover", "-s", "tests")
	cmd.Dir = filepath.Join(kernels, "substrate")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "CACHEON_TEST_MODEL_DIR="+model)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python unit tests failed: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
