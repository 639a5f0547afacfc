package quality

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// bench is a workspace copy with the incumbent assembled, the reference
// tree materialized, and engines to serve trees on the CPU.
type bench struct {
	f         enginetest.Fixture
	ws        string
	incumbent *stack.Assembled
	mopts     materialize.Options
	refTree   string
	refDigest string
	incTree   string // the incumbent's tree (B and B′)
	prompts   [][]int
	tokens    int
	planned   int // plans so far, to name their tree directories
}

const (
	benchPrompts   = 16
	benchPromptLen = 16
	benchTokens    = 16
	benchSelect    = 12
)

func newBench(t *testing.T) *bench {
	t.Helper()
	f := enginetest.New(t)
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", "stacks/incumbent.hcl", "stacks/reference.hcl", "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json", "kernels/contributions", "kernels/fixtures")
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	payload := contribution.PayloadOptions{Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck, PatcherDigests: map[string]string{}}
	b := &bench{f: f, ws: ws, mopts: materialize.Options{Catalog: cat, Payload: payload}, tokens: benchTokens}
	b.incumbent = assemble(t, filepath.Join(ws, "stacks", "incumbent.hcl"), cat, payload)
	ref := assemble(t, filepath.Join(ws, "stacks", "reference.hcl"), cat, payload)
	b.refTree = filepath.Join(f.Run, "reference")
	res, err := materialize.Materialize(ref.Manifest, func(string, stack.Ref) (string, error) { return "", nil }, b.refTree, b.mopts)
	if err != nil {
		t.Fatal(err)
	}
	b.refDigest = res.TreeDigest.String()
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < benchPrompts; i++ {
		p := make([]int, benchPromptLen)
		for j := range p {
			p[j] = rng.Intn(256)
		}
		b.prompts = append(b.prompts, p)
	}
	return b
}

func assemble(t *testing.T, path string, cat *catalog.Catalog, payload contribution.PayloadOptions) *stack.Assembled {
	t.Helper()
	sf, _, diags := stack.Load(path)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	a, err := stack.Assemble(sf, stack.Sources{}, cat, payload)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// trees plans candidate (a directory of the workspace) over the
// incumbent and returns the B and C trees, bypassing every screen.
func (b *bench) trees(t *testing.T, candidate string) (bTree, cTree, armPlan string) {
	t.Helper()
	res, err := plan.Run(context.Background(), plan.Request{Incumbent: b.incumbent, IncumbentPath: filepath.Join(b.ws, "stacks", "incumbent.hcl"),
		CandidateDir: filepath.Join(b.ws, filepath.FromSlash(candidate)), Materialize: b.mopts,
		TreeDir: filepath.Join(b.f.Run, fmt.Sprintf("trees-%d-%s", b.planned, filepath.Base(candidate)))})
	b.planned++
	if err != nil {
		t.Fatal(err)
	}
	return res.IncumbentTree, res.CandidateTree, res.Digest.String()
}

// serve runs one engine of tree over every prompt and returns its
// trajectories (greedy, benchTokens each).
func (b *bench) serve(t *testing.T, tree, name string) [][]int {
	t.Helper()
	e, err := engine.Start(context.Background(), b.f.Iso, engine.Spec{Python: b.f.Python, Root: b.f.Root, Tree: tree, Model: b.f.Model,
		Device: "cpu", WorkDir: filepath.Join(b.f.Run, "serve-"+name), StartTimeout: 3 * time.Minute, BatchTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	w, err := e.Batch(context.Background(), b.prompts, b.tokens)
	if err != nil {
		t.Fatal(err)
	}
	return w.Tokens
}

// pool files every prompt with its B, C and B′ trajectories.
func (b *bench) pool(bt, ct, bpt [][]int) map[string]Prompt {
	out := map[string]Prompt{}
	for i, p := range b.prompts {
		out[PromptDigest(p)] = Prompt{Tokens: p, Rollouts: map[Role][]int{RoleB: bt[i], RoleC: ct[i], RoleBPrime: bpt[i]}}
	}
	return out
}

func digests(pool map[string]Prompt) []string {
	var out []string
	for d := range pool {
		out = append(out, d)
	}
	return out
}

// options are T's options over pool with a fresh commitment.
func (b *bench) options(t *testing.T, pool map[string]Prompt, armPlan string, cal *Calibration, selectCount int) Options {
	t.Helper()
	secret := sha256.Sum256([]byte(t.Name()))
	sealed, err := Commit(secret[:], armPlan, b.refDigest, benchWorkload(), EntropyControllerRandom, digests(pool), selectCount)
	if err != nil {
		t.Fatal(err)
	}
	store, err := evidence.Open(filepath.Join(t.TempDir(), "evidence"), 0)
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Teacher: TeacherSpec{Python: b.f.Python, Root: b.f.Root, Tree: b.refTree, Model: b.f.Model, Device: "cpu",
			WorkDir: filepath.Join(b.f.Run, "teacher-"+filepath.Base(t.Name())), StartTimeout: 3 * time.Minute, ScoreTimeout: time.Minute},
		// Fixed entropy: the same selection every run (the qualification's
		// test draws it from the random source).
		Isolation: b.f.Iso, Sealed: sealed, Entropy: []byte("bench entropy " + t.Name()), Pool: pool, TokensPerRollout: b.tokens,
		ModelDigest: b.modelDigest(t), Calibration: cal,
		Teardown: Teardown{CandidateGone: true, Detail: "every serving engine closed and reaped"}, Store: store,
	}
}

// benchWorkload names the bench's prompts and rollout length.
func benchWorkload() string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("quality bench: %d prompts of %d tokens (seed 7, vocabulary 256), %d greedy tokens each", benchPrompts, benchPromptLen, benchTokens)))
	return hex.EncodeToString(sum[:])
}

// calibration is the embedded CPU calibration's thresholds, relabelled
// for the bench's own inputs (its model, prompts and reference): T applies
// a calibration only to the inputs it names.
func (b *bench) calibration(t *testing.T) *Calibration {
	t.Helper()
	cal, err := DefaultCalibration()
	if err != nil {
		t.Fatal(err)
	}
	cal.Model, cal.Workload, cal.ReferenceTree = b.modelDigest(t), benchWorkload(), b.refDigest
	return cal
}

// modelDigest is the SHA-256 of the test model's files.
func (b *bench) modelDigest(t *testing.T) string {
	h := sha256.New()
	for _, name := range []string{"config.json", "model.safetensors"} {
		data, err := os.ReadFile(filepath.Join(b.f.Model, name))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}
