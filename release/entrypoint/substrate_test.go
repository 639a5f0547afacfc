package entrypoint_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/models/testmodel"
	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/image"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
)

// The CPU path end to end: a release of the project's substrate, the
// silu contribution and a deterministic test model is built, signed and
// unpacked; the entrypoint verifies it and execs the substrate's serve
// module, which loads the engine tree and the model and answers a
// generation request.
func TestServeRunsTheProjectSubstrateOnCPU(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import torch").Run(); err != nil {
		t.Skipf("%s cannot import torch (apt-get install python3-torch): %v", python, err)
	}
	r := fixture.New(t)
	dir := t.TempDir()
	// The substrate package only (its tests and build files stay out).
	substrate := filepath.Join(dir, "substrate")
	src := fixture.SourceTree(t, "kernels/substrate/cacheon_substrate")
	files, err := bundle.Files(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		fixture.WriteFiles(t, filepath.Join(substrate, "cacheon_substrate"), map[string]string{f.Path: string(b)})
	}
	modelDir := filepath.Join(dir, "model")
	if _, err := testmodel.Write(modelDir, testmodel.DefaultShape(false), 7); err != nil {
		t.Fatal(err)
	}
	receipt, err := models.Provision(modelDir, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := receipt.Digest()
	if err != nil {
		t.Fatal(err)
	}
	receiptPath := filepath.Join(dir, models.FileName(rd))
	if err := models.WriteReceipt(receiptPath, modelDir, receipt); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "release")
	in := r.Inputs(out)
	in.Substrate, in.ModelReceipt = substrate, receiptPath
	in.ServeCommand = append([]string{python}, build.DefaultServeCommand[1:]...)
	in.ServeCommand = append(in.ServeCommand, "--device", "cpu")
	res, err := build.Build(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := store.OpenLayout(out)
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	inst := &installed{r: r, root: filepath.Join(dir, "rootfs"), bundle: filepath.Join(dir, "release.sigstore.json")}
	inst.r.ModelDir = modelDir
	desc, _ := l.Resolve()
	refs, _ := store.Referrers(l, desc.Digest)
	for _, ref := range refs {
		if ref.ArtifactType == store.ArtifactBundle && ref.Title() == store.TitleBundle { // the provenance's, not the SBOM attestation's
			os.WriteFile(inst.bundle, ref.Data, 0o644)
		}
	}
	lp, _ := layout.FromPath(out)
	img, _ := lp.Image(desc.Digest)
	os.Mkdir(inst.root, 0o755)
	if err := image.Unpack(img, 0, inst.root); err != nil {
		t.Fatal(err)
	}

	spec, _ := json.Marshal(map[string]string{"Root": inst.root, "Key": r.PublicKey, "Bundle": inst.bundle, "Model": modelDir})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CACHEON_TEST_SERVE="+string(spec))
	cmd.Stdin = strings.NewReader(`{"id": 1, "prompt": [1, 2, 3, 4], "max_new_tokens": 4}` + "\n")
	var errb strings.Builder
	cmd.Stderr = &errb
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, errb.String())
	}
	sc := bufio.NewScanner(strings.NewReader(string(stdout)))
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("substrate line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || lines[0]["ready"] != true {
		t.Fatalf("substrate output %s\nstderr %s", stdout, errb.String())
	}
	slots, _ := lines[0]["slots"].(map[string]any)
	if slots[fixture.Target] != "contributed" {
		t.Errorf("slot %s is %v in the served engine, want the release's contribution", fixture.Target, slots[fixture.Target])
	}
	tokens, _ := lines[1]["tokens"].([]any)
	if len(tokens) != 1 || len(tokens[0].([]any)) != 5 {
		t.Fatalf("response %v, want 1 prompt with 5 tokens (prefill + 4 decode)", lines[1])
	}
	t.Logf("release %s served on CPU: %s", res.ImageDigest, strings.TrimSpace(string(stdout)))
}
