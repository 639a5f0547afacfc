package qualify

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/internal/testtree"
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

func TestScreenServing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	spec := engine.Spec{Python: f.Python, Root: f.Root, Tree: f.Tree, Model: f.Model, Device: "cpu",
		WorkDir: filepath.Join(f.Run, "serving"), StartTimeout: 3 * time.Minute, BatchTimeout: time.Minute}
	if o := screenServing(context.Background(), f.Iso, spec, [][]int{{1, 2, 3}}); o.Decision != Pass {
		t.Fatalf("stock engine: %+v", o)
	}
	spec.Root = f.HostileRoot(t, "dies", enginetest.Prelude+enginetest.ReadyFrame+"inp.readline(); os._exit(1)\n")
	spec.WorkDir = filepath.Join(f.Run, "serving-dies")
	if o := screenServing(context.Background(), f.Iso, spec, [][]int{{1, 2, 3}}); o.Decision != Fail || !strings.Contains(o.Reason, "exited") {
		t.Fatalf("an engine that dies serving: %+v, want FAIL", o)
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
