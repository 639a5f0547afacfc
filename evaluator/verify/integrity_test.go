package verify

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/scan"
)

// TestVerifyCatchesTheIntegrityFixtures runs the fixtures of the cheating
// classes (docs/reference/integrity.md) that verify is the defence
// against. Each is verified past the static scan: some of them the scan
// refuses too, but a scan is a tripwire, and the dynamic check must
// catch the cheat on its own. scanRule is what the scan says of the
// fixture ("" for clean), so that a fixture the scan starts to pass, or
// one it starts to refuse, shows up here.
func TestVerifyCatchesTheIntegrityFixtures(t *testing.T) {
	t.Parallel()
	testPython(t)
	cases := []struct {
		fixture  string
		class    int
		scanRule scan.Rule
		want     string // substring of the row reason
	}{
		{"rmsnorm_output_cache", 2, "", "repeat call on fresh inputs"},
		{"rmsnorm_fingerprint_cache", 2, "", "repeat call with one input element changed"},
		{"rmsnorm_skips_warm_pointers", 9, "", "never written (still the NaN poison)"},
		{"rmsnorm_background_thread", 1, "", "never written (still the NaN poison)"},
		{"rmsnorm_gc_steals_expected", 7, scan.RuleIntrospection, "eager call"},
		{"rmsnorm_lazy_subclass", 9, scan.RuleDunderAttribute, "output out changed type"},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "bundle")
			// A copy: under Bazel the runfiles are links, which a bundle may not hold.
			testtree.Copy(t, filepath.Join("..", "..", "kernels", "fixtures", c.fixture), dir)
			sr, err := scan.Bundle(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := scanRules(sr); (c.scanRule == "") != (len(got) == 0) || (c.scanRule != "" && !got[c.scanRule]) {
				t.Fatalf("class %d: the static scan found %v, want %q", c.class, got, c.scanRule)
			}
			testtree.DeclareTokenBound(t, dir, rmsnormTokenBound)
			rep := run(t, dir, Options{})
			if rep.Verdict != Fail || len(rep.Rows) != 1 {
				t.Fatalf("class %d: verdict %s (%s), want FAIL", c.class, rep.Verdict, rep.Reason)
			}
			if got := rep.Rows[0].Reason; !strings.Contains(got, c.want) {
				t.Fatalf("class %d: reason %q does not mention %q", c.class, got, c.want)
			}
			t.Logf("class %d: FAIL: %s", c.class, rep.Rows[0].Reason)
		})
	}
}

// TestVerifyHoldsATinyTruthToItsScale: the MoE cases' outputs (about
// 0.002) lie far inside bfloat16's atol of 0.02, so the elementwise rule
// alone passed an output that leaves out each token's last expert (it
// passed an output of zeros too). Where the truth's RMS is below atol the
// output as a whole must be within rtol of it; the honest kernel's
// relative error is about 0.004.
func TestVerifyHoldsATinyTruthToItsScale(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		bundle, want, reason string
	}{
		{"kernels/contributions/moe_fused_experts_torch", Pass, "the truth's RMS"},
		{"kernels/fixtures/moe_drops_last_expert", Fail, "where the tolerance cannot tell an output from zero, so the matched elements must be within rtol=0.02 of it as a whole"},
	} {
		t.Run(filepath.Base(c.bundle), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "bundle")
			testtree.Copy(t, filepath.Join("..", "..", filepath.FromSlash(c.bundle)), dir)
			rep := run(t, dir, Options{DType: "bfloat16"})
			if rep.Verdict != c.want || len(rep.Rows) != 1 {
				t.Fatalf("verdict %s (%s), want %s", rep.Verdict, rep.Reason, c.want)
			}
			found := false
			for _, cs := range rep.Rows[0].Cases {
				found = found || strings.Contains(cs.Reason, c.reason)
			}
			if !found {
				t.Fatalf("no case reason mentions %q: %+v", c.reason, rep.Rows[0].Cases)
			}
		})
	}
}

// TestVerifyInputsAreUnpredictableOnlyUnderASecretSeed: the fixture that
// replays the validator's input stream for seed 0 computes nothing from
// its inputs. Under the public seed it predicts every call and passes,
// which is why the qualification never verifies under a public seed
// (evaluator/qualify draws the ABI screen's seed from the validator's
// secret); under any other seed it fails.
func TestVerifyInputsAreUnpredictableOnlyUnderASecretSeed(t *testing.T) {
	t.Parallel()
	testPython(t)
	for _, c := range []struct {
		seed int64
		want string
	}{{0, Pass}, {0x5eed_c0ffee, Fail}} {
		t.Run(fmt.Sprint(c.seed), func(t *testing.T) {
			t.Parallel()
			rep := verifyRepoBundle(t, "kernels/fixtures/rmsnorm_predicts_rng", rmsnormTokenBound, Options{Seed: c.seed})
			if rep.Verdict != c.want {
				t.Fatalf("seed %d: verdict %s (%s), want %s", c.seed, rep.Verdict, rep.Reason, c.want)
			}
			if c.want == Fail && !strings.Contains(rep.Rows[0].Reason, "eager call") {
				t.Fatalf("seed %d: reason %q, want the eager call wrong", c.seed, rep.Rows[0].Reason)
			}
		})
	}
}

// TestVerifyPassesTheLaterStagesFixtures: the fixtures of the cheating
// classes that a later stage must catch pass verify, so that stage is
// the defence its test proves (the stale output cheats only after
// verify's few calls, the one honest only while audited is honest for its
// first 40; the clock fixtures and the noisy neighbour compute honestly).
func TestVerifyPassesTheLaterStagesFixtures(t *testing.T) {
	t.Parallel()
	testPython(t)
	for _, fixture := range []string{"rmsnorm_stale_output", "rmsnorm_stops_the_clock", "rmsnorm_slows_the_clock",
		"rmsnorm_wrong_unless_audited", "rmsnorm_noisy_neighbour"} {
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			rep := verifyRepoBundle(t, "kernels/fixtures/"+fixture, rmsnormTokenBound, Options{})
			if rep.Verdict != Pass {
				t.Fatalf("verdict %s (%s), want PASS", rep.Verdict, rep.Reason)
			}
		})
	}
}

// rmsnormTokenBound is the token bound the rmsnorm fixtures are verified
// under: it admits every catalog shape of norm.rmsnorm but the one of 4096
// tokens (the others' jittered counts reach 447 at most). That case alone
// (16M elements a tensor, three checked calls, every output written out
// and judged) made most of a fixture's run: 73 s with it and 5 s without
// on a busy two-core machine. The cheats these fixtures stand for key on
// pointers, call counts, the heap, clocks, threads and the seed, never on
// how big a call is, and each one is still judged on five catalog shapes
// with their case indices and seeds unchanged (rmsnorm_predicts_rng
// predicts them).
const rmsnormTokenBound = 512

func scanRules(r *scan.Report) map[scan.Rule]bool {
	rules := map[scan.Rule]bool{}
	for _, op := range r.Ops {
		for _, f := range op.Findings {
			rules[f.Rule] = true
		}
	}
	return rules
}
