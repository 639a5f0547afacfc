package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/tools/atomicwrite"
)

// qualifyCalibrateOptions are the flags of qualify calibrate.
type qualifyCalibrateOptions struct {
	env       qualificationFlags
	candidate string
	rounds    int
	out       string
	json      bool
}

func newQualifyCalibrateCommand(s Streams) *cobra.Command {
	o := qualifyCalibrateOptions{env: qualificationFlags{deps: defaultStackDeps()}}
	cmd := &cobra.Command{
		Use:   "calibrate [--rounds N] [--out FILE] [--candidate BUNDLE]",
		Short: "Measure the lanes' stock-versus-stock noise and the thresholds it supports",
		Long: `Calibrate runs rounds of the speed stage with the incumbent's engine on all
three arms (B, C and B′ are the same tree, fresh processes each round) and
writes a calibration file: every round's rates, the noise floor (the
largest |C/B − 1| or B/B′ drift), the max_noise and min_margin that noise
supports, and its digest. A speed policy names the calibration its
thresholds came from (calibration_digest); qualify records it.

Each round is also graded under the policy given (--policy, default the
embedded v8 policy): on stock-versus-stock rounds a PASS is a false crown,
so "passes" must be 0 for the policy to be safe on these lanes.

With --candidate, the C arm runs that candidate's tree instead: the same
rounds measure how often a candidate of a known speed difference passes,
the points of a resolution curve. No thresholds follow from such rounds.

Lanes, model, workload, isolation and interpreter are chosen as for
qualify. Exit codes: 0 written, 2 a rejected input, 1 usage, I/O or an
infrastructure failure (a round that could not be graded).`,
		Example: `  cacheon qualify calibrate --rounds 5 --out calibration.json
  cacheon qualify calibrate --rounds 20 --workload gpu.hcl --model ./m --json
  cacheon qualify calibrate --rounds 10 --candidate ./faster-by-1pct --out resolution-1pct.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runQualifyCalibrate(cmd.Context(), s, o)
		},
	}
	o.env.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.candidate, "candidate", "", "run this candidate bundle on the C arm (a resolution run)")
	f.IntVar(&o.rounds, "rounds", 5, "rounds of fresh B, C and B′ engines (at least 2)")
	f.StringVar(&o.out, "out", "calibration.json", "the calibration file to write")
	f.BoolVar(&o.json, "json", false, "print one JSON document")
	return cmd
}

// calibrationJSON is the --json document and the file qualify calibrate
// writes.
type calibrationJSON struct {
	Kind   string `json:"kind"` // "calibration" or "resolution"
	Digest string `json:"digest"`
	Passes int    `json:"passes"`
	File   string `json:"file"`
	*qualify.Calibration
}

func runQualifyCalibrate(ctx context.Context, s Streams, o qualifyCalibrateOptions) error {
	if o.rounds < 2 {
		return fmt.Errorf("--rounds %d: calibration needs at least 2 rounds", o.rounds)
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	o.env.quiet = o.json
	q, err := setUpQualification(ctx, s, o.env)
	if err != nil {
		return err
	}
	defer q.close()
	progress := func(format string, args ...any) {
		if !o.json {
			fmt.Fprintf(s.Err, "cacheon: "+format+"\n", args...)
		}
	}
	req := plan.Request{Incumbent: q.stack.assembled, IncumbentPath: o.env.incumbent, CandidateDir: o.candidate,
		Materialize: q.materialize, TreeDir: filepath.Join(q.run, "trees"), Progress: progress}
	bTree, cTree := "", ""
	if o.candidate == "" {
		if bTree, _, err = plan.Incumbent(ctx, req); err != nil {
			return err
		}
		cTree = bTree
	} else {
		res, err := plan.Run(ctx, req)
		if err != nil {
			return err
		}
		bTree, cTree = res.IncumbentTree, res.CandidateTree
	}
	root, err := worker.EngineRoot(filepath.Join(q.run, "engine-root"))
	if err != nil {
		return err
	}
	arm := func(role speed.Role, tree string, lane int) qualify.Arm {
		l := q.lanes[lane]
		return qualify.Arm{Role: role, Candidate: role == speed.C && o.candidate != "", Spec: engine.Spec{
			Python: q.python, Root: root, Tree: tree, Model: q.model, Device: l.Device,
			Graph: l.Device == "cuda" && q.workload.Engine.CUDAGraphs, WorkDir: filepath.Join(q.run, "arms", string(role))}}
	}
	ro := qualify.RoundsOptions{
		Isolation: q.iso, Workload: q.workload, Policy: q.policy, Sample: q.sample, Rounds: o.rounds, Lanes: lanesName(q.lanes),
		Arms: []qualify.Arm{arm(speed.B, bTree, 0), arm(speed.C, cTree, 1), arm(speed.BPrime, bTree, 0)},
		Progress: func(i int, r qualify.CalibrationRound) {
			progress("round %d/%d: B %s C %s B′ %s tok/s: %s %s", i+1, o.rounds, short6(r.B), short6(r.C), short6(r.BPrime), r.Decision, r.Reason)
		},
	}
	doc := calibrationJSON{Kind: "calibration", File: out}
	if o.candidate == "" {
		doc.Calibration, err = qualify.Calibrate(ctx, ro)
	} else {
		doc.Kind = "resolution"
		doc.Calibration, err = qualify.Resolution(ctx, ro)
	}
	if err != nil {
		return err
	}
	if doc.Digest, err = doc.Calibration.Digest(); err != nil {
		return err
	}
	doc.Passes = doc.Calibration.Passes()
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicwrite.WriteFile(out, append(data, '\n'), 0o644); err != nil {
		return err
	}
	if o.json {
		return writeJSON(s.Out, doc)
	}
	if doc.Kind == "calibration" {
		fmt.Fprintf(s.Out, "noise floor %s: supports max_noise %s, min_margin %s (supported %v)\n", doc.NoiseFloor, doc.MaxNoise, doc.MinMargin, doc.Supported)
	}
	fmt.Fprintf(s.Out, "%d of %d rounds PASS under the policy\ncalibration %s\ndigest %s\n", doc.Passes, len(doc.Rounds), out, doc.Digest)
	return nil
}

// short6 keeps six significant digits of a decimal rate for progress lines.
func short6(d string) string {
	var f float64
	if _, err := fmt.Sscan(d, &f); err != nil {
		return d
	}
	return fmt.Sprintf("%.6g", f)
}
