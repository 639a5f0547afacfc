package verify

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/bundle"
)

// step is one planned call of a sequence with the live fields admits reads.
func step(phase string, m int64) worker.PlannedStep {
	return worker.PlannedStep{Phase: phase, Params: map[string]int64{"M": m, "H": 4096},
		Live: map[string]any{"num_tokens": json.Number(big.NewInt(m).String()), "last_dim": json.Number("4096")}}
}

func sequence(big, small int64, catBig, catSmall int64) worker.PlannedSequence {
	s := worker.PlannedSequence{Index: 3, Seed: 3, Name: worker.RegrowCase, Describe: "jittered", CatalogDescribe: "catalog",
		Steps: []worker.PlannedStep{step("big", big), step("small", small), step("big_again", big)}}
	if catBig > 0 {
		s.CatalogSteps = []worker.PlannedStep{step("big", catBig), step("small", catSmall), step("big_again", catBig)}
	}
	return s
}

func TestRegrowCasePicksTheFirstAdmittedSequence(t *testing.T) {
	n := big.NewInt
	// The plan's order: the biggest count first, then the smallest small.
	seqs := []worker.PlannedSequence{sequence(173, 1, 128, 1), sequence(173, 3, 128, 1), sequence(9, 1, 8, 1), sequence(9, 3, 8, 1)}
	cases := []struct {
		name       string
		e          bundle.Eligibility
		seqs       []worker.PlannedSequence
		big, small int64
		jittered   bool
		na         string // the N/A reason, when no sequence fits
	}{
		{"unrestricted takes the first", bundle.Eligibility{}, seqs, 173, 1, true, ""},
		{"a token bound lowers big", bundle.Eligibility{MaxNumTokens: n(16)}, seqs, 9, 1, true, ""},
		{"a token floor raises small", bundle.Eligibility{MinNumTokens: n(2)}, seqs, 173, 3, true, ""},
		{"catalog steps stand in for jitter", bundle.Eligibility{MaxNumTokens: n(150)}, seqs, 128, 1, false, ""},
		{"one count only", bundle.Eligibility{MinNumTokens: n(9), MaxNumTokens: n(9)}, seqs, 0, 0, false, "big call: num_tokens=173 above the declared maximum 9"},
		{"no sequence planned", bundle.Eligibility{}, nil, 0, 0, false, "the plan lists no sequence"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref, cr := regrowCase(&tc.e, tc.seqs, 3, "float32", "cpu")
			if cr.Name != worker.RegrowCase || cr.Index != 3 {
				t.Fatalf("case result %+v, want the regrow case at index 3", cr)
			}
			if tc.na != "" {
				if ref != nil || cr.Verdict != NotApplicable || !strings.Contains(cr.Reason, tc.na) {
					t.Fatalf("got %+v %+v, want N/A mentioning %q", ref, cr, tc.na)
				}
				return
			}
			if ref == nil {
				t.Fatalf("no case picked: %+v", cr)
			}
			var got []int64
			var phases []string
			for _, s := range ref.Steps {
				got = append(got, s.Params["M"])
				phases = append(phases, s.Phase)
			}
			if !reflect.DeepEqual(got, []int64{tc.big, tc.small, tc.big}) || !reflect.DeepEqual(phases, []string{"big", "small", "big_again"}) {
				t.Fatalf("steps %v %v, want M %d, %d, %d", phases, got, tc.big, tc.small, tc.big)
			}
			if ref.Name != worker.RegrowCase || ref.Params["M"] != tc.big || cr.Jittered != tc.jittered || cr.Verdict != "" {
				t.Fatalf("case %+v result %+v", ref, cr)
			}
		})
	}
}

// checkRegrowPassed asserts that a passing collective row ran its regrow
// case: three calls, big, small and big again, the middle one smaller.
func checkRegrowPassed(t *testing.T, row RowResult) {
	t.Helper()
	for _, c := range row.Cases {
		if c.Name != worker.RegrowCase {
			continue
		}
		if c.Verdict != Pass || len(c.Phases) != 3 {
			t.Fatalf("%s regrow case: %+v, want PASS with three calls", row.Slot, c)
		}
		big, small, again := c.Phases[0].Params, c.Phases[1].Params, c.Phases[2].Params
		if !reflect.DeepEqual(big, again) || !reflect.DeepEqual(big, c.Params) || reflect.DeepEqual(big, small) {
			t.Fatalf("%s regrow shapes %v, %v, %v, want big, small, big again", row.Slot, big, small, again)
		}
		return
	}
	t.Fatalf("%s: no regrow case in %+v", row.Slot, row.Cases)
}

// verifyRepoBundle verifies a copy of a bundle of this repository with the
// static scan on (the bundles here must scan clean). maxTokens > 0 makes
// every row of the copy declare that token bound
// (testtree.DeclareTokenBound); 0
// runs every catalog shape.
func verifyRepoBundle(t *testing.T, rel string, maxTokens int, o Options) *Report {
	t.Helper()
	o.Python = testPython(t)
	dir := filepath.Join(t.TempDir(), "bundle")
	// A copy: under Bazel the runfiles are links, which a bundle may not hold.
	testtree.Copy(t, filepath.Join("..", "..", filepath.FromSlash(rel)), dir)
	if maxTokens > 0 {
		testtree.DeclareTokenBound(t, dir, maxTokens)
	}
	if o.DType == "" {
		o.DType = "float32"
	}
	o.Timeout = 5 * time.Minute
	rep, err := Run(context.Background(), dir, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// TestVerifyRegrowCatchesStaleState: the fixture's staging buffer is
// right while token counts only grow (every catalog case) and stale when
// the count grows again after shrinking. Only the regrow case may fail
// it, and the failure must name that case and its last call.
func TestVerifyRegrowCatchesStaleState(t *testing.T) {
	t.Parallel()
	testPython(t)
	const fixture = "kernels/fixtures/all_reduce_stale_regrow"
	check := func(t *testing.T, rep *Report) {
		t.Helper()
		if rep.Verdict != Fail || len(rep.Rows) != 1 {
			t.Fatalf("verdict %s: %s, want FAIL", rep.Verdict, rep.Reason)
		}
		row := rep.Rows[0]
		failed, passed := 0, 0
		for _, c := range row.Cases {
			switch {
			case c.Verdict == NotApplicable:
			case c.Verdict == Pass:
				passed++
			case c.Name == worker.RegrowCase:
				failed++
				if c.Verdict != Fail || !strings.HasPrefix(c.Reason, "big call again (") {
					t.Fatalf("regrow case %+v, want a FAIL on the big call again", c)
				}
				if len(c.Phases) != 3 || !c.Phases[0].Passed || !c.Phases[1].Passed || c.Phases[2].Passed {
					t.Fatalf("regrow calls %+v, want big and small right, big again wrong", c.Phases)
				}
			default:
				t.Fatalf("catalog case %d: %s %s, want PASS (the fixture is right while counts only grow)", c.Index, c.Verdict, c.Reason)
			}
		}
		if failed != 1 || passed == 0 || row.Verdict != Fail || !strings.Contains(row.Reason, "(regrow): big call again") {
			t.Fatalf("row %s %q, want a FAIL naming the regrow case", row.Verdict, row.Reason)
		}
	}
	t.Run("catalog shapes", func(t *testing.T) {
		t.Parallel()
		check(t, verifyRepoBundle(t, fixture, 0, Options{}))
	})
	t.Run("declared token bound", func(t *testing.T) {
		t.Parallel()
		// Under max_num_tokens 16 the big call is the second catalog
		// case's count; the stale rows are still caught.
		src, err := os.ReadFile(filepath.Join("..", "..", fixture, "kernels", "all_reduce.py"))
		if err != nil {
			t.Fatal(err)
		}
		rep := run(t, oneOpBundle(t, "collective.all_reduce", "all_reduce", "", string(src), `{"max_num_tokens": 16}`), Options{DType: "bfloat16"})
		check(t, rep)
		if m := rep.Rows[0].Cases[len(rep.Rows[0].Cases)-1].Params["M"]; m > 16 || m < 2 {
			t.Fatalf("regrow big count %d, want the largest admitted count (at most 16)", m)
		}
	})
}

// TestVerifyRegrowHonestCollectivesPass: the honest MoE epilogue
// contribution keeps no state between calls and passes both rows, the
// regrow case included, in bfloat16 (the MoE finalize row's only live
// dtype). Its MoE finalize cases grow the expert-token count to the token
// count, as upstream's do: at seed 0 the (64, 64) shape jitters to T = 84
// and runs as (84, 84), not clipped back to 64 tokens.
func TestVerifyRegrowHonestCollectivesPass(t *testing.T) {
	t.Parallel()
	// Up to 96 tokens: each row keeps its catalog shapes but the largest
	// (256 tokens of hidden size 6144 for the all-reduce epilogue, 224 and
	// more for the MoE finalize), which cost most of this run's CPU time;
	// the regrow case still grows back, after shrinking, to the largest
	// admitted count, which is all it needs to show that the kernel keeps
	// no state between calls, and the grown (84, 84) case is admitted.
	rep := verifyRepoBundle(t, "kernels/contributions/moe_epilogue_atomic_torch", 96, Options{DType: "bfloat16"})
	if rep.Verdict != Pass || len(rep.Rows) != 2 {
		t.Fatalf("verdict %s: %s, want PASS on two rows", rep.Verdict, rep.Reason)
	}
	for _, row := range rep.Rows {
		checkRegrowPassed(t, row)
		if row.Slot != "collective.moe_finalize_ar_rmsnorm" {
			continue
		}
		grown := false
		for _, c := range row.Cases {
			if c.Verdict != Pass {
				continue
			}
			if c.Params["T_exp"] < c.Params["T"] {
				t.Errorf("case %d %v: fewer expert tokens than tokens", c.Index, c.Params)
			}
			grown = grown || (c.Index == 1 && c.Params["T"] == 84 && c.Params["T_exp"] == 84)
		}
		if !grown {
			t.Errorf("no passed case ran the grown shape T = T_exp = 84: %+v", row.Cases)
		}
	}
}

// TestVerifyMoEFinalizeNotApplicableAtFloat32: float32 is outside the MoE
// finalize slot's live dtypes, so its row is N/A with upstream's reason and
// runs nothing, while the plain all-reduce epilogue row of the same bundle
// is verified; one passed row makes the run PASS.
func TestVerifyMoEFinalizeNotApplicableAtFloat32(t *testing.T) {
	t.Parallel()
	rep := verifyRepoBundle(t, "kernels/contributions/moe_epilogue_atomic_torch", 16, Options{DType: "float32"})
	want := map[string]struct{ verdict, reason string }{
		"collective.ar_residual_rmsnorm":     {Pass, ""},
		"collective.moe_finalize_ar_rmsnorm": {NotApplicable, "outside live deep-export dtype domain: requires bfloat16"},
	}
	if len(rep.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rep.Rows), len(want))
	}
	for _, row := range rep.Rows {
		w := want[row.Slot]
		if row.Verdict != w.verdict || (w.reason != "" && row.Reason != w.reason) {
			t.Errorf("%s: %s (%s), want %s %q", row.Slot, row.Verdict, row.Reason, w.verdict, w.reason)
		}
		if row.Verdict == NotApplicable && (len(row.Cases) != 0 || len(row.Workers) != 0) {
			t.Errorf("%s: an N/A row ran %d cases in %d workers", row.Slot, len(row.Cases), len(row.Workers))
		}
	}
	if rep.Verdict != Pass {
		t.Errorf("verdict %s (%s), want PASS: the other row passed", rep.Verdict, rep.Reason)
	}
}

func TestOutsideLiveDTypes(t *testing.T) {
	tests := []struct {
		live  []string
		dtype string
		want  string
	}{
		{nil, "float32", ""},
		{[]string{}, "bfloat16", ""},
		{[]string{"bfloat16"}, "bfloat16", ""},
		{[]string{"bfloat16"}, "float32", "outside live deep-export dtype domain: requires bfloat16"},
		{[]string{"bfloat16", "float16"}, "float32", "outside live deep-export dtype domain: requires bfloat16 or float16"},
	}
	for _, tt := range tests {
		if got := outsideLiveDTypes(tt.live, tt.dtype); got != tt.want {
			t.Errorf("outsideLiveDTypes(%v, %s) = %q, want %q", tt.live, tt.dtype, got, tt.want)
		}
	}
}
