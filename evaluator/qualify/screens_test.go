package qualify

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/stacks/plan"
)

func TestScreenStatic(t *testing.T) {
	cases := []struct {
		bundle string
		want   Decision
		reason string
	}{
		{"../../kernels/contributions/rmsnorm_torch", Pass, "no violation"},
		{"../../kernels/fixtures/banned_import", Fail, "banned-import"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.bundle), func(t *testing.T) {
			// A copy: under Bazel the runfiles are links, which a bundle may
			// not hold.
			dir := filepath.Join(t.TempDir(), "bundle")
			testtree.Copy(t, c.bundle, dir)
			o := screenStatic(dir)
			if o.Decision != c.want || !strings.Contains(o.Reason, c.reason) {
				t.Fatalf("static screen: %+v, want %s containing %q", o, c.want, c.reason)
			}
		})
	}
}

// TestScreenServing: the candidate engine serves one batch, and its
// decode must run the candidate's rows at the target's slots.
func TestScreenServing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	candidateTree := func(bundle string) string {
		o := qualifyOptions(t, f, bundle)
		req := o.Plan
		req.TreeDir = filepath.Join(t.TempDir(), "trees")
		planned, err := plan.Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return planned.CandidateTree
	}
	honest := candidateTree("kernels/contributions/rmsnorm_torch")
	// The test model has 2 layers: a decode step makes 5 RMSNorm calls
	// (two a layer, one final) and 2 silu_and_mul calls; a batch of 4
	// tokens decodes 3 steps.
	cases := []struct {
		name, tree string
		root       string // a hostile engine module, or "" for the substrate
		members    []string
		want       Decision
		reason     string
	}{
		{"the candidate's rows serve the decode", honest, "", []string{"norm.rmsnorm"}, Pass, "norm.rmsnorm: 15 of 15 calls by the candidate's rows"},
		{"a domain that admits no decode call", candidateTree("kernels/fixtures/rmsnorm_prefill_only"), "", []string{"norm.rmsnorm"}, Fail,
			"the eager decode served norm.rmsnorm (15 calls) with the stock kernel and never the candidate's rows"},
		{"a slot only stock serves", honest, "", []string{"activation.silu_and_mul"}, Fail, "activation.silu_and_mul (6 calls) with the stock kernel"},
		{"a slot the model never calls", honest, "", []string{"moe.fused_experts"}, NoDecision, "makes no call at moe.fused_experts: this workload cannot time the target"},
		{"an engine that dies serving", f.Tree, enginetest.Prelude + enginetest.ReadyFrame + "inp.readline(); os._exit(1)\n", []string{"norm.rmsnorm"}, Fail, "exited"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := engine.Spec{Python: f.Python, Root: f.Root, Tree: c.tree, Model: f.Model, Device: "cpu",
				WorkDir: filepath.Join(f.Run, fmt.Sprintf("serving-%d", i)), StartTimeout: 3 * time.Minute, BatchTimeout: time.Minute}
			if c.root != "" {
				spec.Root = f.HostileRoot(t, fmt.Sprintf("hostile-%d", i), c.root)
			}
			o := screenServing(context.Background(), f.Iso, spec, [][]int{{1, 2, 3}}, c.members)
			if o.Decision != c.want || !strings.Contains(o.Reason, c.reason) {
				t.Fatalf("serving screen: %s %q, want %s containing %q", o.Decision, o.Reason, c.want, c.reason)
			}
		})
	}
}

// TestDispatched: which decodes the serving screen lets through, from
// the engine's counts alone.
func TestDispatched(t *testing.T) {
	members := []string{"collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"}
	cases := []struct {
		name   string
		calls  map[string]map[string]int
		graph  bool
		want   Decision
		reason string
	}{
		{"one member served, one never called", map[string]map[string]int{"collective.ar_residual_rmsnorm": {"c:default": 6, "stock": 2}}, true, Pass,
			"the CUDA-graph decode ran collective.ar_residual_rmsnorm: 6 of 8 calls by the candidate's rows"},
		{"called members all stock", map[string]map[string]int{"collective.ar_residual_rmsnorm": {"stock": 8}, "norm.rmsnorm": {"c:default": 8}}, true, Fail,
			"the CUDA-graph decode served collective.ar_residual_rmsnorm (8 calls) with the stock kernel"},
		{"no member called", map[string]map[string]int{"norm.rmsnorm": {"stock": 8}}, false, NoDecision,
			"the eager decode makes no call at collective.ar_residual_rmsnorm, collective.moe_finalize_ar_rmsnorm"},
		{"no calls at all", map[string]map[string]int{}, false, NoDecision, "cannot time the target"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := dispatched(members, c.calls, c.graph)
			if o.Decision != c.want || !strings.Contains(o.Reason, c.reason) {
				t.Fatalf("%s %q, want %s containing %q", o.Decision, o.Reason, c.want, c.reason)
			}
		})
	}
}

func TestScreenGraph(t *testing.T) {
	row := func(graph string, cases ...verify.CaseResult) verify.RowResult {
		return verify.RowResult{Slot: "norm.rmsnorm", Variant: "default", Verdict: verify.Pass, Graph: graph, Cases: cases}
	}
	ok := verify.CaseResult{Index: 0, Verdict: verify.Pass, Graph: "captured"}
	cases := []struct {
		name   string
		report *verify.Report
		want   Decision
	}{
		{"captured", &verify.Report{Rows: []verify.RowResult{row("required", ok, ok)}}, Pass},
		{"nothing required", &verify.Report{Rows: []verify.RowResult{row("not_required", verify.CaseResult{Verdict: verify.Pass})}}, Pass},
		{"capture failed", &verify.Report{Rows: []verify.RowResult{row("required", ok, verify.CaseResult{Index: 1, Verdict: verify.Fail, Graph: "capture_failed"})}}, Fail},
		{"passed without capture", &verify.Report{Rows: []verify.RowResult{row("required", verify.CaseResult{Verdict: verify.Pass, Graph: "not_run"})}}, NoDecision},
		// The regrow case of a collective row is eager by design; the
		// row's catalog cases carry the capture.
		{"eager-only regrow case", &verify.Report{Rows: []verify.RowResult{row("required", ok,
			verify.CaseResult{Index: 1, Name: "regrow", Verdict: verify.Pass, Graph: verify.CaseGraphEagerOnly})}}, Pass},
		{"no report", nil, NoDecision},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := screenGraph(c.report); got.Decision != c.want {
				t.Fatalf("graph screen %+v, want %s", got, c.want)
			}
		})
	}
	// A row left out of CUDA graphs is named: the graph-replayed decode
	// will time the stock kernel in its place.
	att := verify.RowResult{Slot: "attention.decode", Variant: "default", Verdict: verify.Pass, Graph: verify.GraphNotRequired}
	got := screenGraph(&verify.Report{Rows: []verify.RowResult{row("required", ok), att}})
	if got.Decision != Pass || !strings.Contains(got.Reason, "1 cases of 1 rows captured") ||
		!strings.Contains(got.Reason, "attention.decode [default] declare(s) no graph_safe, so inside CUDA graphs the stock kernel serves them") {
		t.Fatalf("graph screen %+v", got)
	}
	if got := screenGraph(&verify.Report{Rows: []verify.RowResult{row("required", ok)}}); strings.Contains(got.Reason, "graph_safe") {
		t.Fatalf("graph screen %+v names a row left out of graphs where there is none", got)
	}
}
