package qualify

import (
	"context"
	"fmt"
	"strings"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/kernels/scan"
)

// The non-crown screens, in the order they run (spec §5.1). The first
// FAIL stops the qualification with its reason.
const (
	ScreenStatic  = "static"
	ScreenBuild   = "build"
	ScreenABI     = "abi"
	ScreenGraph   = "graph"
	ScreenServing = "abbreviated_serving"
	StageSpeed    = "speed"
	// StageReproduction is a reproduction that planned another experiment
	// than the report it names (recorded only then).
	StageReproduction = "reproduction"
)

// screenStatic is the static scan of the candidate bundle: any policy
// violation fails it.
func screenStatic(bundleDir string) Outcome {
	r, err := scan.Bundle(bundleDir)
	if err != nil {
		return Outcome{Fail, fmt.Sprintf("the bundle cannot be scanned: %v", err)}
	}
	if r.Violations > 0 {
		for _, f := range allFindings(r) {
			if !f.Advisory() {
				return Outcome{Fail, fmt.Sprintf("%d violation(s), first %s", r.Violations, f)}
			}
		}
		return Outcome{Fail, fmt.Sprintf("%d violation(s)", r.Violations)}
	}
	return Outcome{Pass, fmt.Sprintf("no violation, %d advisory finding(s)", r.Advisories)}
}

func allFindings(r *scan.Report) []scan.Finding {
	var out []scan.Finding
	for _, op := range r.Ops {
		out = append(out, op.Findings...)
	}
	return append(out, r.TreeFindings...)
}

// screenABI verifies every op row of the candidate on its slot contract in
// worker processes: a FAIL is the candidate's; an ERROR (the workers could
// not reach a verdict) is NO_DECISION.
func screenABI(ctx context.Context, bundleDir string, o verify.Options) (Outcome, *verify.Report) {
	r, err := verify.Run(ctx, bundleDir, o)
	if err != nil {
		return Outcome{NoDecision, fmt.Sprintf("verify could not run: %v", err)}, nil
	}
	switch r.Verdict {
	case verify.Pass:
		return Outcome{Pass, r.Reason}, r
	case verify.Fail:
		return Outcome{Fail, r.Reason}, r
	default:
		return Outcome{NoDecision, r.Verdict + ": " + r.Reason}, r
	}
}

// screenGraph is the CUDA graph gate, read from the ABI screen's verify
// report: every case of a row that must run inside CUDA graphs was
// captured and replayed there. A case whose capture failed is the
// candidate's FAIL; a case that never reached capture says nothing and is
// NO_DECISION.
func screenGraph(r *verify.Report) Outcome {
	if r == nil {
		return Outcome{NoDecision, "no verify report to read the graph capture from"}
	}
	captured, rows := 0, 0
	var eager []string
	for _, row := range r.Rows {
		if row.Graph == verify.GraphNotRequired && row.Verdict == verify.Pass {
			eager = append(eager, fmt.Sprintf("%s [%s]", row.Slot, row.Variant))
		}
		if row.Graph != verify.GraphRequired || row.Verdict != verify.Pass {
			continue
		}
		rows++
		for _, c := range row.Cases {
			switch c.Graph {
			case "captured":
				captured++
			case verify.CaseGraphEagerOnly:
				// Eager calls by design (the regrow case); the row's
				// catalog cases carry its graph capture.
			case "capture_failed":
				return Outcome{Fail, fmt.Sprintf("%s [%s] case %d: CUDA graph capture failed: %s", row.Slot, row.Variant, c.Index, c.Reason)}
			default:
				if c.Verdict == verify.Pass {
					return Outcome{NoDecision, fmt.Sprintf("%s [%s] case %d passed without a graph capture (%q)", row.Slot, row.Variant, c.Index, c.Graph)}
				}
			}
		}
	}
	reason := "no row must run inside CUDA graphs"
	if rows > 0 {
		reason = fmt.Sprintf("%d cases of %d rows captured and replayed in CUDA graphs", captured, rows)
	}
	if len(eager) > 0 {
		// Not a verdict, but what the speed stage will measure: a block or
		// collective row without graph_safe metadata is left out of CUDA
		// graphs (cacheon_substrate.seam), so an engine that replays graphs
		// serves that slot with its stock kernel.
		reason += fmt.Sprintf("; %s declare(s) no graph_safe, so inside CUDA graphs the stock kernel serves them, and a workload whose decode replays graphs times stock there", strings.Join(eager, ", "))
	}
	return Outcome{Pass, reason}
}

// screenServing is the abbreviated serving screen: the candidate engine
// loads its tree and serves one short batch, whose tokens must come back.
// Its decode must also run the candidate's rows: members are the target's
// slots, whose rows in the candidate tree are the candidate's.
func screenServing(ctx context.Context, iso worker.Isolation, s engine.Spec, prompts [][]int, members []string) Outcome {
	e, err := engine.Start(ctx, iso, s)
	if err != nil {
		return attribute("C", true, withLog(err, s.WorkDir))
	}
	defer e.Close()
	w, err := e.Batch(ctx, prompts, 4)
	if err != nil {
		return attribute("C", true, err)
	}
	out := dispatched(members, w.Calls, s.Graph)
	out.Reason = fmt.Sprintf("served %d prompts × 4 tokens on %s; %s", len(prompts), e.Ready.Device, out.Reason)
	return out
}

// dispatched says whether a decode's slot calls reached the candidate's
// rows at the target's slots (members). A row the substrate passes over
// (a domain that excludes the decode's live shapes, or a block row
// without graph_safe inside CUDA graphs) leaves its slot to the stock
// kernel, and the speed stage would time stock against the incumbent.
// That is the candidate's FAIL, told now with the reason instead of as a
// speedup of ×1.00 later. A target none of whose slots the decode calls
// cannot be timed by this workload at all: the validator's choice of
// workload, so NO_DECISION. The counts are the engine's own word: a
// candidate that inflates them gains nothing (stock is timed as stock),
// and one that hides its calls only fails itself.
func dispatched(members []string, calls map[string]map[string]int, graph bool) Outcome {
	where := "eager decode"
	if graph {
		where = "CUDA-graph decode"
	}
	var served, stockOnly []string
	for _, slot := range members {
		total, stock := 0, 0
		for origin, n := range calls[slot] {
			total += n
			if origin == "stock" {
				stock += n
			}
		}
		switch {
		case total == 0:
		case stock == total:
			stockOnly = append(stockOnly, fmt.Sprintf("%s (%d calls)", slot, total))
		default:
			served = append(served, fmt.Sprintf("%s: %d of %d calls by the candidate's rows", slot, total-stock, total))
		}
	}
	switch {
	case len(served) > 0:
		return Outcome{Pass, fmt.Sprintf("the %s ran %s", where, strings.Join(served, ", "))}
	case len(stockOnly) > 0:
		return Outcome{Fail, fmt.Sprintf("the %s served %s with the stock kernel and never the candidate's rows: their domain excludes the decode's live shapes, or, inside CUDA graphs, a block row declares no graph_safe", where, strings.Join(stockOnly, ", "))}
	default:
		return Outcome{NoDecision, fmt.Sprintf("the %s makes no call at %s: this workload cannot time the target", where, strings.Join(members, ", "))}
	}
}

// withLog adds the end of an engine's stderr to its failure, where the
// engine said why it stopped.
func withLog(err error, workDir string) error {
	if tail := worker.Tail(workDir, worker.StderrFile, 600); tail != "" {
		return fmt.Errorf("%w (stderr: %s)", err, verify.Printable(tail))
	}
	return err
}
