package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/registrytest"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// The consumer guide's mirroring commands: release mirror copies a
// published release to a second registry with its signature and
// attestations, and the mirror verifies; a plain image copy by crane
// (built from the go-containerregistry module the project already
// requires) drops the referrers, and its copy fails the attestations
// check with exit 2, as does mirroring from it.
func TestReleaseMirrorKeepsAttestationsWhereCraneCopyDropsThem(t *testing.T) {
	regA, regB := registrytest.Start(t), registrytest.Start(t)
	r := fixture.New(t)
	dir := r.Signed(t)
	src, mirror := regA.Host+"/cacheon/engine:1.0", regB.Host+"/cacheon/engine:1.0"
	if code, out, errOut := run(t, "", "release", "publish", dir, src); code != enginecli.ExitOK {
		t.Fatalf("publish: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := run(t, "", "release", "mirror", "--json", "--key", r.PublicKey, src, mirror)
	if code != enginecli.ExitOK {
		t.Fatalf("mirror: %d\n%s%s", code, out, errOut)
	}
	var res struct {
		Verified  bool     `json:"verified"`
		Source    string   `json:"source"`
		Artifacts []string `json:"artifacts"`
		Base      string   `json:"base"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("mirror --json: %v\n%s", err, out)
	}
	if !res.Verified || res.Source != src || len(res.Artifacts) != 4 || res.Base == "" {
		t.Errorf("mirror result %s", out)
	}
	code, out, errOut = run(t, "", "release", "verify", "--json", "--key", r.PublicKey, mirror)
	if rep := oneReport(t, out); code != enginecli.ExitOK || !rep.Verified {
		t.Fatalf("verify the mirror: exit %d\n%s%s", code, out, errOut)
	}

	crane := buildCrane(t)
	copied := regB.Host + "/crane/engine:1.0"
	cmd := exec.Command(crane, "copy", "--insecure", src, copied)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("crane copy: %v\n%s", err, b)
	}
	code, out, _ = run(t, "", "release", "verify", "--json", "--key", r.PublicKey, copied)
	rep := oneReport(t, out)
	last := rep.Checks[len(rep.Checks)-1]
	if code != enginecli.ExitRejected || rep.Verified || last.Name != verify.CheckAttestations || last.OK || !strings.Contains(last.Detail, "no signature bundle") {
		t.Fatalf("verify the crane copy: exit %d, want %d failing %s\n%s", code, enginecli.ExitRejected, verify.CheckAttestations, out)
	}
	if code, out, errOut := run(t, "", "release", "mirror", copied, regB.Host+"/again/engine:1.0"); code != enginecli.ExitRejected || !strings.Contains(errOut, "refusing to mirror") {
		t.Fatalf("mirror from the crane copy: exit %d, want %d\n%s%s", code, enginecli.ExitRejected, out, errOut)
	}
}

// buildCrane builds crane from the go-containerregistry module in go.mod
// (a few seconds with a warm build cache). It skips where the go command
// is missing (a hermetic test sandbox) or cannot build it offline.
func buildCrane(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go is not on PATH, crane cannot be built: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "crane")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/google/go-containerregistry/cmd/crane")
	cmd.Dir = fixture.RepoRoot(t)
	cmd.Env = append(os.Environ(), "GOPROXY=off") // the module cache only: a test never downloads
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("build crane from the module cache: %v\n%s", err, b)
	}
	return bin
}
