package build_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ggcrlayout "github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/layer"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/stacks/stack"
)

// TestMain lets the test binary act as a build process with a different
// environment (see TestBuildIsReproducibleAcrossHostState).
func TestMain(m *testing.M) {
	if spec := os.Getenv("CACHEON_TEST_BUILD"); spec != "" {
		var in build.Inputs
		if err := json.Unmarshal([]byte(spec), &in); err != nil {
			panic(err)
		}
		if u := os.Getenv("CACHEON_TEST_UMASK"); u == "077" {
			syscall.Umask(0o077)
		}
		res, err := build.Build(in, nil)
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(3)
		}
		json.NewEncoder(os.Stdout).Encode(res)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func treeHashes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		s := sha256.Sum256(b)
		rel, _ := filepath.Rel(root, p)
		out[rel] = hex.EncodeToString(s[:]) + " " + info.Mode().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func buildInProcess(t *testing.T, in build.Inputs, env []string, cwd string) *build.Result {
	t.Helper()
	spec, _ := json.Marshal(in)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), append(env, "CACHEON_TEST_BUILD="+string(spec))...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("build process: %v %s", err, msg)
	}
	var res build.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("build process output %q: %v", out, err)
	}
	return &res
}

// Two builds of the same inputs, copied to different directories and run
// from different working directories with another timezone, umask and
// locale, give byte-identical layouts.
func TestBuildIsReproducibleAcrossHostState(t *testing.T) {
	r := fixture.New(t)
	copyDir := filepath.Join(t.TempDir(), "elsewhere")
	if out, err := exec.Command("cp", "-a", r.Dir, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("copy inputs: %v %s", err, out)
	}
	moved := func(p string) string { return filepath.Join(copyDir, strings.TrimPrefix(p, r.Dir)) }
	inA := r.Inputs(filepath.Join(t.TempDir(), "a", "release"))
	inB := inA
	inB.EngineTree, inB.ReleaseManifest, inB.Reviews = moved(r.EngineTree), moved(r.ReleaseManifest), []string{moved(r.ReviewFile)}
	inB.Substrate, inB.ModelReceipt, inB.Entrypoint = moved(r.Substrate), moved(r.ModelReceipt), moved(r.Entrypoint)
	inB.Out = filepath.Join(t.TempDir(), "b", "deeper", "release")
	for _, in := range []build.Inputs{inA, inB} {
		os.MkdirAll(filepath.Dir(in.Out), 0o755)
	}
	a := buildInProcess(t, inA, []string{"TZ=UTC", "LC_ALL=C", "CACHEON_TEST_UMASK=022"}, t.TempDir())
	b := buildInProcess(t, inB, []string{"TZ=Asia/Tokyo", "LC_ALL=de_DE.UTF-8", "LANG=tr_TR.UTF-8", "CACHEON_TEST_UMASK=077"}, "/")
	if a.ImageDigest != b.ImageDigest || a.ProvenanceDigest != b.ProvenanceDigest || a.SBOMDigest != b.SBOMDigest {
		t.Fatalf("builds differ:\n a %+v\n b %+v", a, b)
	}
	ha, hb := treeHashes(t, inA.Out), treeHashes(t, inB.Out)
	if len(ha) != len(hb) {
		t.Fatalf("layouts have %d and %d files", len(ha), len(hb))
	}
	for p, h := range ha {
		if hb[p] != h {
			t.Errorf("layout file %s: %s vs %s", p, h, hb[p])
		}
	}
}

func TestBuildWritesImageSBOMAndProvenance(t *testing.T) {
	r := fixture.New(t)
	out, res := r.Build(t)
	l, err := store.OpenLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := l.Resolve()
	if err != nil || desc.Digest.String() != res.ImageDigest {
		t.Fatalf("layout image %v (%v), build says %s", desc.Digest, err, res.ImageDigest)
	}
	refs, err := store.Referrers(l, desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, r := range refs {
		types[r.ArtifactType] = true
	}
	if !types[store.ArtifactSBOM] || !types[store.ArtifactProvenance] || len(refs) != 2 {
		t.Errorf("attached artifacts %v, want an SBOM and a provenance statement", types)
	}
	if res.Contributions != 1 || res.GoVersion == "" {
		t.Errorf("result %+v", res)
	}
}

func TestBuildRejectsBadInputsAndLeavesNothing(t *testing.T) {
	r := fixture.New(t)
	otherTree := filepath.Join(t.TempDir(), "other-tree")
	empty := fixture.ReleaseManifest(t, nil)
	emptyPath := filepath.Join(t.TempDir(), "empty.json")
	canon, _ := empty.CanonicalJSON()
	os.WriteFile(emptyPath, canon, 0o644)
	r.Materialize(t, otherTree, empty, nil)
	unapproved := *r.Record
	unapproved.Approved = false
	cases := []struct {
		name   string
		change func(in *build.Inputs)
		want   string
	}{
		{"integrated entry without its review record", func(in *build.Inputs) { in.Reviews = nil }, "has no integration review record"},
		{"tree from another stack", func(in *build.Inputs) { in.EngineTree = otherTree }, "materialized from another stack"},
		{"record covering nothing", func(in *build.Inputs) {
			in.ReleaseManifest, in.EngineTree = emptyPath, otherTree
		}, "cover no entry of the release stack"},
		{"unknown compression", func(in *build.Inputs) { in.Compression = layer.Compression("lz4") }, "want gzip or zstd"},
		{"base digest without layout", func(in *build.Inputs) { in.BaseDigest = "sha256:" + strings.Repeat("a", 64) }, "without --base-layout"},
		{"reserved serve environment", func(in *build.Inputs) { in.ServeEnv = []string{"LD_PRELOAD=/x.so"} }, "LD_PRELOAD is set by the entrypoint"},
		{"missing model receipt", func(in *build.Inputs) { in.ModelReceipt = filepath.Join(r.Dir, "nope.json") }, "read model receipt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := r.Inputs(filepath.Join(t.TempDir(), "release"))
			c.change(&in)
			_, err := build.Build(in, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if _, err := os.Stat(in.Out); !os.IsNotExist(err) {
				t.Errorf("output left at %s after a failed build", in.Out)
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(in.Out), ".release.tmp-*"))
			if len(left) > 0 {
				t.Errorf("staging directories left: %v", left)
			}
		})
	}
	t.Run("unapproved record", func(t *testing.T) {
		if _, err := unapproved.Marshal(); err == nil || !strings.Contains(err.Error(), "approved is false") {
			t.Fatalf("err = %v", err)
		}
	})
}

// baseLayout writes a linux/amd64 base image of two random gzip layers
// as an OCI layout; lie replaces the config's second diff ID with
// another layer's. It returns the layout and the manifest digest.
func baseLayout(t *testing.T, lie bool) (string, string) {
	t.Helper()
	var layers []v1.Layer
	for range 3 {
		l, err := random.Layer(4096, "application/vnd.oci.image.layer.v1.tar+gzip")
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(empty.Image, layers[:2]...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	if lie {
		cfg.RootFS.DiffIDs[1], _ = layers[2].DiffID()
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "base")
	d, err := image.WriteLayout(dir, img, "base:test")
	if err != nil {
		t.Fatal(err)
	}
	return dir, d.String()
}

// A base's layers are decompressed once, to read its package database;
// the diff IDs measured there go into the image, and a base whose config
// lists other diff IDs than its layers decompress to is refused.
func TestBuildOnABaseUsesTheDiffIDsItMeasured(t *testing.T) {
	r := fixture.New(t)
	for _, lie := range []bool{false, true} {
		dir, digest := baseLayout(t, lie)
		in := r.Inputs(filepath.Join(t.TempDir(), "release"))
		in.BaseLayout, in.BaseDigest, in.BaseName = dir, digest, "base:test"
		res, err := build.Build(in, nil)
		if lie {
			if err == nil || !strings.Contains(err.Error(), "layer 1 (sha256:") || !strings.Contains(err.Error(), "but its config lists diff ID sha256:") {
				t.Errorf("a base whose config lies about a diff ID: %v", err)
			}
			if _, err := os.Stat(in.Out); !os.IsNotExist(err) {
				t.Errorf("output left at %s after a refused base", in.Out)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		idx, err := ggcrlayout.ImageIndexFromPath(in.Out)
		if err != nil {
			t.Fatal(err)
		}
		h, err := v1.NewHash(res.ImageDigest)
		if err != nil {
			t.Fatal(err)
		}
		img, err := idx.Image(h)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		got, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(cfg.RootFS.DiffIDs) || len(got) < 3 {
			t.Fatalf("%d layers, %d diff IDs", len(got), len(cfg.RootFS.DiffIDs))
		}
		// Every diff ID recomputed from the layer's bytes.
		for i, gl := range got {
			rc, err := gl.Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := v1.SHA256(rc)
			rc.Close()
			if err != nil || h != cfg.RootFS.DiffIDs[i] {
				t.Errorf("layer %d: config diff ID %s, bytes %s (%v)", i, cfg.RootFS.DiffIDs[i], h, err)
			}
		}
	}
}

func TestParseReleaseManifestRefusesProposals(t *testing.T) {
	r := fixture.New(t)
	b, _ := os.ReadFile(r.ReleaseManifest)
	forged := strings.Replace(string(b), `"type":"integrated"`, `"type":"proposal"`, 1)
	if _, err := stack.ParseManifest([]byte(forged)); err == nil || !strings.Contains(err.Error(), "integrated (reviewed) contributions only") {
		t.Fatalf("err = %v", err)
	}
	spaced := strings.Replace(string(b), `{"base_engine_digest"`, `{ "base_engine_digest"`, 1)
	if _, err := stack.ParseManifest([]byte(spaced)); err == nil || !strings.Contains(err.Error(), "canonical") {
		t.Fatalf("err = %v", err)
	}
	m, err := stack.ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	var _ *stack.EngineReleaseManifest = m
	if _, err := review.CheckCoverage(m, []*review.Record{r.Record}); err != nil {
		t.Fatal(err)
	}
}
