package quality

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPristineReferenceSeparatesCorrectFromBroken serves the incumbent
// (B, B′) and three candidates (C) straight from their trees, bypassing
// every screen, and runs T on each: the correct kernel passes, the two
// broken ones fail, and every record re-grades.
func TestPristineReferenceSeparatesCorrectFromBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five engines and three references")
	}
	b := newBench(t)
	cal := b.calibration(t)
	incTree, _, _ := b.trees(t, "kernels/contributions/rmsnorm_torch")
	bt, bpt := b.serve(t, incTree, "B"), b.serve(t, incTree, "B_prime")
	type result struct {
		name string
		res  *Result
	}
	var results []result
	for _, c := range []struct {
		candidate string
		want      Decision
		cause     string
	}{
		{"kernels/contributions/rmsnorm_torch", Pass, "every metric within"},
		{"kernels/fixtures/silu_drops_silu", Fail, "argmax_rate.regression"},
		{"kernels/fixtures/rmsnorm_wrong_eps", Fail, "argmax_rate.regression"},
	} {
		name := filepath.Base(c.candidate)
		t.Run(name, func(t *testing.T) {
			_, cTree, armPlan := b.trees(t, c.candidate)
			ct := b.serve(t, cTree, "C-"+name)
			o := b.options(t, b.pool(bt, ct, bpt), armPlan, cal, benchSelect)
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != c.want || !strings.Contains(res.Reason, c.cause) {
				t.Fatalf("%s: %s, want %s with %q", res.Decision, res.Reason, c.want, c.cause)
			}
			if len(res.Evidence.Prompts) != benchSelect || res.Ref.SHA256 == "" {
				t.Fatalf("%d prompts scored, ref %+v", len(res.Evidence.Prompts), res.Ref)
			}
			ev, err := Regrade(o.Store, res.Ref)
			if err != nil {
				t.Fatalf("regrade: %v", err)
			}
			if ev.Verdict.Decision != c.want {
				t.Fatalf("regrade %s", ev.Verdict.Decision)
			}
			for _, m := range res.Evidence.Verdict.Metrics {
				t.Logf("%s %s: %s drift %s/%s regression [%s, %s] delta %s", name, m.Metric, m.Decision, m.Drift, m.StockEnvelope, m.Low, m.High, m.CandidateDelta)
			}
			results = append(results, result{name, res})
		})
	}
	// The margin on the deciding metric: the correct kernel's upper bound
	// against the broken ones' lower bounds.
	if len(results) == 3 {
		bound := func(r *Result, low bool) string {
			for _, m := range r.Evidence.Verdict.Metrics {
				if m.Metric == ArgmaxRate {
					if low {
						return m.Low
					}
					return m.High
				}
			}
			return ""
		}
		t.Logf("argmax_rate regression: correct high %s; broken lows %s (%s), %s (%s)", bound(results[0].res, false),
			bound(results[1].res, true), results[1].name, bound(results[2].res, true), results[2].name)
	}
}

// TestRegradeRefusesTamperedEvidence re-grades a record whose per-token
// evidence was changed after the fact.
func TestRegradeRefusesTamperedEvidence(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a reference")
	}
	b := newBench(t)
	cal := b.calibration(t)
	pool := b.fakePool(b.tokens)
	o := b.options(t, pool, strings.Repeat("ab", 32), cal, 3)
	res, err := Run(context.Background(), o)
	if err != nil || res.Ref.SHA256 == "" {
		t.Fatalf("%+v, %v", res, err)
	}
	for _, c := range []struct {
		name string
		edit func(ev *Evidence)
		want string
	}{
		{"an NLL lowered", func(ev *Evidence) { ev.Prompts[0].Rollouts[RoleC].NLL[0] = "0.001" }, "in the evidence, its tokens give"},
		{"the verdict flipped", func(ev *Evidence) { ev.Verdict.Decision = Fail }, "the evidence grades"},
		{"a prompt swapped", func(ev *Evidence) { ev.Prompts[0].Tokens = []int{1, 2, 3} }, "its tokens have digest"},
		{"the secret replaced", func(ev *Evidence) { ev.Receipt.Secret = strings.Repeat("11", 32) }, "the revealed secret commits to"},
		{"the calibration loosened", func(ev *Evidence) {
			m := ev.Calibration.Metrics[ArgmaxRate]
			m.CandidateDelta = "1"
			ev.Calibration.Metrics[ArgmaxRate] = m
		}, "the calibration's digest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev, err := Regrade(o.Store, res.Ref)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(ev)
			data, err := ev.Canonical()
			if err != nil {
				t.Fatal(err)
			}
			ref, err := o.Store.Put(ArtifactQuality, "application/json", EvidenceSchema, data)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Regrade(o.Store, ref); !errors.Is(err, ErrRegrade) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("regrade: %v, want ErrRegrade with %q", err, c.want)
			}
		})
	}
}

// fakePool files every prompt with made-up trajectories of n tokens: what
// T scores need not be what any engine generated.
func (b *bench) fakePool(n int) map[string]Prompt {
	tr := func(seed int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = (seed*31 + i*7) % 256
		}
		return out
	}
	out := map[string]Prompt{}
	for i, p := range b.prompts {
		out[PromptDigest(p)] = Prompt{Tokens: p, Rollouts: map[Role][]int{RoleB: tr(i), RoleC: tr(i + 1), RoleBPrime: tr(i)}}
	}
	return out
}

// hostileTeacher writes an engine root whose teacher module is source.
func (b *bench) hostileTeacher(t *testing.T, name, source string) string {
	t.Helper()
	root := filepath.Join(filepath.Dir(b.f.Root), "hostile-teacher-"+name)
	pkg := filepath.Join(root, "cacheon_substrate")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "__init__.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	prelude := `import json, os, sys, time
out = os.fdopen(5, "w", buffering=1)
inp = os.fdopen(4, "r")
def send(o):
    out.write(json.dumps(o) + "\n"); out.flush()
send({"ready": True, "protocol": "cacheon-teacher-v1", "substrate": "0"*64, "device": "cpu", "slots": {}})
`
	if err := os.WriteFile(filepath.Join(pkg, "teacher.py"), []byte(prelude+source), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestBadInputDecidesNothingAndPublishesNothing: missing or truncated
// trajectories, a pool that is not the committed one, no teardown
// receipt, a provisional calibration, one measured for another model,
// workload or reference, a reference tree with a
// contribution, and a reference engine that crashes, hangs, or answers
// garbage. Each is NO_DECISION with its reason, and the store stays empty.
func TestBadInputDecidesNothingAndPublishesNothing(t *testing.T) {
	b := newBench(t)
	cal := b.calibration(t)
	_, cTree, _ := b.trees(t, "kernels/contributions/rmsnorm_torch")
	first := PromptDigest(b.prompts[0])
	for _, c := range []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"missing trajectory", func(o *Options) {
			for _, d := range selected(t, o) {
				delete(o.Pool[d].Rollouts, RoleC)
				return
			}
		}, "no C trajectory"},
		{"truncated trajectory", func(o *Options) {
			for _, d := range selected(t, o) {
				o.Pool[d].Rollouts[RoleBPrime] = o.Pool[d].Rollouts[RoleBPrime][:5]
				return
			}
		}, "the B_prime trajectory holds 5 tokens, want 16"},
		{"a committed prompt missing", func(o *Options) { delete(o.Pool, first) }, "the trajectories cover 15 prompts, the commitment's pool 16"},
		{"a prompt under another digest", func(o *Options) {
			p := o.Pool[first]
			p.Tokens = []int{1, 2, 3}
			o.Pool[first] = p
		}, "has digest"},
		{"no teardown receipt", func(o *Options) { o.Teardown = Teardown{Detail: "the C engine did not close"} }, "teardown before T"},
		{"provisional calibration", func(o *Options) {
			p := *cal
			p.Status = Provisional
			o.Calibration = &p
		}, "a provisional calibration decides nothing"},
		{"absent calibration", func(o *Options) { o.Calibration = nil }, "quality calibration: none"},
		{"a calibration measured on another model", func(o *Options) {
			p := *cal
			p.Model = strings.Repeat("1", 64)
			o.Calibration = &p
		}, "field model: the calibration was measured with model 111111111111"},
		{"a calibration measured on another workload", func(o *Options) {
			p := *cal
			p.Workload = strings.Repeat("2", 64)
			o.Calibration = &p
		}, "field workload"},
		{"a calibration measured under another reference", func(o *Options) {
			p := *cal
			p.ReferenceTree = strings.Repeat("3", 64)
			o.Calibration = &p
		}, "field reference_tree"},
		{"a reference with a contribution", func(o *Options) { o.Teacher.Tree = cTree }, "holds 2 contributions (activation.silu_and_mul first)"},
		{"a reference other than the committed", func(o *Options) { o.Sealed.Commitment.ReferenceManifest = strings.Repeat("0", 64) }, "is not the one committed"},
		{"teacher crashes", func(o *Options) {
			o.Teacher.Root = b.hostileTeacher(t, "crash", "inp.readline()\nos._exit(3)\n")
		}, "reference engine: prompt"},
		{"teacher hangs", func(o *Options) {
			o.Teacher.Root = b.hostileTeacher(t, "hang", "inp.readline()\ntime.sleep(3600)\n")
			o.Teacher.ScoreTimeout = 2 * time.Second
		}, "teacher timeout: no frame for trajectory 0 within 2s"},
		{"teacher answers short", func(o *Options) {
			o.Teacher.Root = b.hostileTeacher(t, "short", "for line in inp:\n    r = json.loads(line)\n    send({'id': r['id'], 'nll': [0.1], 'argmax': [0]})\n")
		}, "1 NLLs and 1 argmaxes for 16 tokens"},
		{"teacher never gets ready", func(o *Options) {
			o.Teacher.Root = b.hostileTeacher(t, "never", "")
			os.WriteFile(filepath.Join(o.Teacher.Root, "cacheon_substrate", "teacher.py"), []byte("import time\ntime.sleep(3600)\n"), 0o644)
			o.Teacher.StartTimeout = 2 * time.Second
		}, "teacher start: timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := b.options(t, b.fakePool(b.tokens), strings.Repeat("ab", 32), cal, 3)
			c.edit(&o)
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != NoDecision || !strings.Contains(res.Reason, c.want) {
				t.Fatalf("%s: %s, want NO_DECISION with %q", res.Decision, res.Reason, c.want)
			}
			if res.Ref.SHA256 != "" || storedFiles(t, o.Store.Root()) != 0 {
				t.Fatalf("something was published: %+v", res.Ref)
			}
		})
	}
}

// selected is the prompts a reveal of o's commitment with o's entropy
// selects (the test fixes the entropy so it knows).
func selected(t *testing.T, o *Options) []string {
	t.Helper()
	o.Entropy = []byte("fixed entropy")
	r, err := o.Sealed.Reveal(o.Entropy)
	if err != nil {
		t.Fatal(err)
	}
	return r.Selected
}

func storedFiles(t *testing.T, root string) int {
	n := 0
	filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}
