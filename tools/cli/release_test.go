package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/image"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

func mustHash(t *testing.T, s string) v1.Hash {
	t.Helper()
	h, err := v1.NewHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// The release pipeline end to end through the command line: build, sign,
// verify (text and JSON), a failed verification exiting 2.
func TestReleaseCommandsEndToEnd(t *testing.T) {
	r := fixture.New(t)
	dir := t.TempDir()
	base := filepath.Join(dir, "base")
	code, out, errOut := run(t, "", "release", "base", "--out", base)
	if code != 0 {
		t.Fatalf("release base: %d %s", code, errOut)
	}
	baseDigest := strings.TrimSpace(out)
	layout_ := filepath.Join(dir, "release")
	code, out, errOut = run(t, "", "release", "build", "--json",
		"--engine-tree", r.EngineTree, "--release-manifest", r.ReleaseManifest, "--review", r.ReviewFile,
		"--substrate", r.Substrate, "--model-receipt", r.ModelReceipt, "--entrypoint", r.Entrypoint,
		"--base-layout", base, "--base-digest", baseDigest, "--base-name", "scratch",
		"--name", "cacheon-engine:1.0", "--source-date-epoch", "1767225600", "--out", layout_)
	if code != 0 {
		t.Fatalf("release build: %d %s", code, errOut)
	}
	var built struct {
		FormatVersion int    `json:"format_version"`
		ImageDigest   string `json:"image_digest"`
		BaseDigest    string `json:"base_image_digest"`
	}
	if err := json.Unmarshal([]byte(out), &built); err != nil || built.FormatVersion != 1 || built.BaseDigest != baseDigest {
		t.Fatalf("build JSON %s (%v)", out, err)
	}
	keyPrefix := filepath.Join(dir, "release")
	if code, _, errOut = run(t, "", "release", "keygen", "--out", keyPrefix+"-key"); code != 0 {
		t.Fatalf("keygen: %s", errOut)
	}
	if code, out, errOut = run(t, "", "release", "sign", "--key", keyPrefix+"-key.key", layout_); code != 0 {
		t.Fatalf("sign: %d %s", code, errOut)
	}
	code, out, errOut = run(t, "", "release", "verify", "--key", keyPrefix+"-key.pub", layout_)
	if code != 0 || !strings.Contains(out, "verified cacheon-engine:1.0@"+built.ImageDigest) {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "", "release", "verify", "--json", "--key", r.PublicKey, layout_)
	var rep struct {
		FormatVersion int  `json:"format_version"`
		Verified      bool `json:"verified"`
		Checks        []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("verify JSON: %v\n%s", err, out)
	}
	last := rep.Checks[len(rep.Checks)-1]
	if code != enginecli.ExitRejected || rep.Verified || last.Name != "key-policy" || last.OK {
		t.Fatalf("verify with another key: exit %d, report %s", code, out)
	}
	code, out, errOut = run(t, "", "release", "rebuild", "--key", keyPrefix+"-key.pub", "--source-repo", r.Repo, layout_)
	if code != 0 || !strings.Contains(out, "reproduced "+built.ImageDigest) || !strings.Contains(out, "re-materialized") {
		t.Fatalf("rebuild: %d\n%s\n%s", code, out, errOut)
	}

	// The entrypoint's checks on the unpacked image, without exec.
	root := filepath.Join(dir, "rootfs")
	os.Mkdir(root, 0o755)
	lp, _ := layout.FromPath(layout_)
	img, err := lp.Image(mustHash(t, built.ImageDigest))
	if err != nil {
		t.Fatal(err)
	}
	if err := image.Unpack(img, 0, root); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "release.sigstore.json")
	if code, _, errOut = run(t, "", "release", "verify", "--key", keyPrefix+"-key.pub", "--bundle-out", bundle, layout_); code != 0 {
		t.Fatalf("verify --bundle-out: %s", errOut)
	}
	serve := []string{"release", "serve", "--dry-run", "--root", root, "--key", keyPrefix + "-key.pub", "--bundle", bundle, "--model", r.ModelDir}
	code, out, errOut = run(t, "", serve...)
	if code != 0 || !strings.Contains(out, `"verified": true`) {
		t.Fatalf("serve --dry-run: %d\n%s\n%s", code, out, errOut)
	}
	os.WriteFile(filepath.Join(root, "cacheon", "substrate", "cacheon_substrate", "serve.py"), []byte("evil"), 0o644)
	if code, _, errOut = run(t, "", serve...); code != enginecli.ExitRejected || !strings.Contains(errOut, "refusing to start") {
		t.Fatalf("serve on a tampered root: %d %s", code, errOut)
	}

	if code, _, errOut = run(t, "", "release", "build", "--engine-tree", r.EngineTree, "--release-manifest", r.ReleaseManifest,
		"--substrate", r.Substrate, "--model-receipt", r.ModelReceipt, "--entrypoint", r.Entrypoint,
		"--name", "x:1", "--out", filepath.Join(dir, "unreviewed")); code != enginecli.ExitRejected || !strings.Contains(errOut, "has no integration review record") {
		t.Fatalf("build without review: exit %d %s", code, errOut)
	}
}

func TestReleaseReviewCommand(t *testing.T) {
	r := fixture.New(t)
	dir := t.TempDir()
	crown := fixture.Crown(t, r.Record.SelectedPayloadDigest)
	crownPath := filepath.Join(dir, "crown.json")
	b, _ := json.Marshal(crown)
	os.WriteFile(crownPath, b, 0o644)
	args := []string{"release", "review", "--crown", crownPath, "--repo", r.Repo, "--commit", r.Commit, "--path", r.SourcePath,
		"--reviewer", r.Record.Reviewer, "--out", filepath.Join(dir, "record.json"), "--json"}
	for role, data := range fixture.Evidence() {
		p := filepath.Join(dir, string(role)+".json")
		os.WriteFile(p, data, 0o644)
		args = append(args, "--evidence", string(role)+"="+p)
	}
	code, out, errOut := run(t, "", args...)
	if code != 0 {
		t.Fatalf("review: %d %s", code, errOut)
	}
	want, _ := r.Record.Digest()
	if !strings.Contains(out, `"record_digest": "`+want+`"`) {
		t.Errorf("review output %s, want record digest %s", out, want)
	}
	// A crown naming another payload is refused with exit 2.
	crown.SelectedPayloadDigest = strings.Repeat("ab", 32)
	b, _ = json.Marshal(crown)
	os.WriteFile(crownPath, b, 0o644)
	args[len(args)-len(fixture.Evidence())*2-2] = filepath.Join(dir, "record2.json")
	if code, _, errOut = run(t, "", args...); code != enginecli.ExitRejected || !strings.Contains(errOut, "does not reproduce the crowned contribution") {
		t.Fatalf("review of a non-reproducing source: %d %s", code, errOut)
	}
}
