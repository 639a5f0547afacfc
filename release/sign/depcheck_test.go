package sign

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sigstore-go is heavy (hundreds of packages): only the release packages,
// and the command line that wires them, may link it.
func TestSigstoreStaysInTheReleasePackages(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command(goBin, "list", "-deps=false", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	allowed := []string{"github.com/cacheon/engine/release/", "github.com/cacheon/engine/tools/cli", "github.com/cacheon/engine/tools/cmd/"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg := fields[0]
		ok := false
		for _, a := range allowed {
			if strings.HasPrefix(pkg, a) {
				ok = true
			}
		}
		if ok {
			continue
		}
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, "github.com/sigstore/sigstore-go") {
				t.Errorf("%s links %s; keep sigstore-go inside release/", pkg, dep)
				break
			}
		}
	}
}
