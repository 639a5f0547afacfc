package reference

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPythonSuite runs the package's Python unit tests (comparators,
// generators, truths, plans) with the test interpreter.
func TestPythonSuite(t *testing.T) {
	py := os.Getenv("CACHEON_TEST_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if out, err := exec.Command(py, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Skipf("the reference suite needs torch and numpy in %s (apt-get install python3-torch python3-numpy, or set CACHEON_TEST_PYTHON): %s",
			py, strings.TrimSpace(string(out)))
	}
	// go test caches a result by the files the test binary itself opened;
	// reading the Python sources here makes an edit to them re-run the suite.
	for _, dir := range []string{Package, "tests"} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
				return err
			}
			_, err = os.ReadFile(p)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(py, "-B", "-m", "unittest", "discover", "-s", "tests")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python unit tests failed: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
