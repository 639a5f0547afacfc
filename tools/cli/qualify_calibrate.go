package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// qualifyCalibrateOptions are the flags of qualify calibrate.
type qualifyCalibrateOptions struct {
	env       qualificationFlags
	candidate string
	quality   bool
	oneEngine bool
	rounds    int
	out       string
	policyOut string
	json      bool
}

func newQualifyCalibrateCommand(s Streams) *cobra.Command {
	o := qualifyCalibrateOptions{env: qualificationFlags{deps: enginecli.DefaultStackDeps()}}
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

With --policy-out, the speed policy the calibration supports is written
too: the policy given (or the embedded one) with the calibration's
min_margin (twice the noise floor, so no stock disagreement the rounds
saw could pass) and max_noise, and its digest as calibration_digest: the
policy qualify --policy takes. Lanes whose stock engines disagreed by more
than 0.45 support no policy: the calibration is still written, no policy
is, and the command says why (exit 0; "policy_refused" in --json). Lanes
that drift more than 0.02 between B and B′ ("supported": false) get a
policy on which only clear two-leg decisions conclude.

Under a version 9 policy (sets = k), every round reads k sets of B, C and
B′, each set three fresh engine processes, and records each set's
speedup; min_margin is then noise_multiplier standard errors of the mean
of k set speedups, one set's error being the root mean square of every
stock set's speedup about 1 (at least 0.001), and "sets" names k. A v9
policy takes its thresholds only from a calibration of as many sets.

With --candidate, the C arm runs that candidate's tree instead: the same
rounds measure how often a candidate of a known speed difference passes,
the points of a resolution curve. No thresholds follow from such rounds.
Each decides as a qualification would: a read set whose stock arms
drifted apart, or whose device throttled, is set aside and read again once
in the same engines (the round's "reread" says why); stock rounds without
--candidate never are, so the calibration sees the drift.

The file is written whole after every round from the second on, so a run
cut short (a deadline, an interrupt, a round that could not be read)
keeps the rounds it read, summarized as a run of that many rounds would
be; "rounds_asked" says how many the run was asked for, and the command
says so on stderr and exits non-zero.

With --one-engine, each round reads B, C and B′ in one resident engine
that swaps trees between the reads (B after a stock→stock swap, C after
the C arm's tree is swapped in, B′ after the swap back) instead of three
engine processes: the noise of one process against itself, to compare
with the three-process rounds, whose reads also differ by process. The
file records "schedule": "one_engine". Such a calibration supports no
qualification policy (a qualification reads three processes), so it takes
no --policy-out. The trees must be hot-swappable (Python and Triton).

With --quality, the rounds calibrate the pristine reference T instead:
each round serves every prompt of the workload on three fresh incumbent
engines (B, C and B′) and a fresh reference engine (--reference)
teacher-forces all three trajectories; the file written is a quality
calibration (cacheon.quality-calibration.v1: the NLL tail threshold and,
per metric, the stock envelope and candidate delta, each the headroom
times the largest stock statistic or its floor), for qualify's
--quality-calibration. docs/reference/quality.md explains the choices.

Lanes, model, workload, isolation and interpreter are chosen as for
qualify. Exit codes: 0 written, 2 a rejected input, 1 usage, I/O or an
infrastructure failure (a round that could not be graded).`,
		Example: `  cacheon qualify calibrate --rounds 5 --out calibration.json
  cacheon qualify calibrate --rounds 20 --workload gpu.hcl --model ./m --json
  cacheon qualify calibrate --rounds 3 --out calibration.json --policy-out policy.hcl
  cacheon qualify calibrate --rounds 10 --candidate ./faster-by-1pct --out resolution-1pct.json
  cacheon qualify calibrate --rounds 10 --candidate ./faster-by-1pct --one-engine --out one-engine-1pct.json
  cacheon qualify calibrate --quality --rounds 3 --out quality-calibration.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runQualifyCalibrate(cmd.Context(), s, o)
		},
	}
	o.env.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.candidate, "candidate", "", "run this candidate bundle on the C arm (a resolution run)")
	f.BoolVar(&o.quality, "quality", false, "calibrate the pristine reference T's thresholds instead of the speed stage's")
	f.BoolVar(&o.oneEngine, "one-engine", false, "read B, C and B′ of each round in one resident engine that swaps trees, not three processes (a measurement; supports no policy)")
	f.IntVar(&o.rounds, "rounds", 5, "rounds of fresh B, C and B′ engines (at least 2)")
	f.StringVar(&o.out, "out", "calibration.json", "the calibration file to write")
	f.StringVar(&o.policyOut, "policy-out", "", "also write the speed policy this calibration supports: --policy (or the embedded v8 policy) with its min_margin and max_noise, bound to its digest; none when the stock engines disagreed by more than 0.45")
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
	// RoundsAsked is how many rounds the run was asked for: a file whose
	// rounds are fewer is what a run cut short had read (the file is
	// written after every round from the second on).
	RoundsAsked int `json:"rounds_asked"`
	// PolicyFile is the speed policy written with --policy-out, and
	// PolicyRefused why none was; neither is part of the calibration file.
	PolicyFile    string `json:"policy_file,omitempty"`
	PolicyRefused string `json:"policy_refused,omitempty"`
	*qualify.Calibration
}

func runQualifyCalibrate(ctx context.Context, s Streams, o qualifyCalibrateOptions) error {
	if o.rounds < 2 {
		return fmt.Errorf("--rounds %d: calibration needs at least 2 rounds", o.rounds)
	}
	if o.quality && o.candidate != "" {
		return fmt.Errorf("--quality calibrates stock rounds: it takes no --candidate")
	}
	if o.policyOut != "" && (o.quality || o.candidate != "") {
		return fmt.Errorf("--policy-out: only stock speed rounds calibrate a speed policy (not --quality or --candidate)")
	}
	if o.oneEngine && (o.quality || o.policyOut != "") {
		return fmt.Errorf("--one-engine measures one speed engine's noise: it takes no --quality or --policy-out")
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
	req := plan.Request{Incumbent: q.stack.Assembled, IncumbentPath: o.env.incumbent, CandidateDir: o.candidate,
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
	if o.quality {
		return calibrateQuality(ctx, s, o, q, bTree, root, out, progress)
	}
	arm := func(role speed.Role, tree string, lane int) qualify.Arm {
		l := q.lanes[lane]
		return qualify.Arm{Role: role, Candidate: role == speed.C && o.candidate != "", Spec: engine.Spec{
			Python: q.python, Root: root, Tree: tree, Model: q.model, Device: l.Device,
			Graph: l.Device == "cuda" && q.workload.Engine.CUDAGraphs, WorkDir: filepath.Join(q.run, "arms", string(role))}}
	}
	ro := qualify.RoundsOptions{
		Isolation: q.iso, Workload: q.workload, Policy: q.policy, Sample: q.sample, Rounds: o.rounds, Lanes: lanesName(q.lanes), OneEngine: o.oneEngine,
		Arms: []qualify.Arm{arm(speed.B, bTree, 0), arm(speed.C, cTree, 1), arm(speed.BPrime, bTree, 0)},
		Progress: func(i int, r qualify.CalibrationRound) {
			again := ""
			if r.Reread != "" {
				again = " (read again after: " + r.Reread + ")"
			}
			sets := ""
			if len(r.SetSpeedups) > 0 {
				// Under v9 the rates are each role's mean over the sets.
				sets = fmt.Sprintf("mean of %d sets, speedups", len(r.SetSpeedups))
				for k, x := range r.SetSpeedups {
					sets += " ×" + short6(x)
					if k < len(r.SetsKept) && !r.SetsKept[k] {
						// Its B and B′ drifted apart by more than
						// max_noise: the round's mean leaves it out.
						sets += " (dropped)"
					}
				}
				sets += "; "
			}
			progress("round %d/%d: B %s C %s B′ %s tok/s (%swindow scatter %.2g %%, %.2g %%, %.2g %%; %s): %s %s%s", i+1, o.rounds,
				short6(r.B), short6(r.C), short6(r.BPrime), sets, 100*r.Scatter[0], 100*r.Scatter[1], 100*r.Scatter[2], aroundReads(r.Around), r.Decision, r.Reason, again)
		},
	}
	doc := calibrationJSON{Kind: "calibration", File: out, RoundsAsked: o.rounds}
	if o.candidate != "" {
		doc.Kind = "resolution"
	}
	// The file is written whole after every round from the second on, so
	// that a run cut short keeps the rounds it read.
	written := 0
	ro.Checkpoint = func(c *qualify.Calibration) error {
		if err := writeCalibration(&doc, c); err != nil {
			return err
		}
		written = len(c.Rounds)
		return nil
	}
	if o.candidate == "" {
		_, err = qualify.Calibrate(ctx, ro)
	} else {
		_, err = qualify.Resolution(ctx, ro)
	}
	if err != nil {
		if written > 0 {
			fmt.Fprintf(s.Err, "cacheon: %s holds the %d of %d rounds read before the run stopped\n", out, written, o.rounds)
		}
		return err
	}
	// A run of at least two rounds that ended well was checkpointed after
	// its last round: doc and the file are the whole run's.
	if o.policyOut != "" {
		if err := writeCalibratedPolicy(&doc, q.policy, o.policyOut); err != nil {
			return err
		}
	}
	if o.json {
		return enginecli.WriteJSON(s.Out, doc)
	}
	if doc.Kind == "calibration" {
		fmt.Fprintf(s.Out, "noise floor %s: supports max_noise %s, min_margin %s (supported %v)\n", doc.NoiseFloor, doc.MaxNoise, doc.MinMargin, doc.Supported)
	}
	if doc.PolicyFile != "" {
		fmt.Fprintf(s.Out, "speed policy %s\n", doc.PolicyFile)
		if !doc.Supported {
			fmt.Fprintf(s.Out, "note: the stock engines drift more than max_noise may allow between B and B′: on these lanes only a clear two-leg decision (v7, a hot-swappable candidate) concludes; a three-read grade is NO_DECISION\n")
		}
	} else if doc.PolicyRefused != "" {
		fmt.Fprintf(s.Out, "no speed policy written: %s\n", doc.PolicyRefused)
	}
	if within, between, ok := qualify.ReadNoise(doc.Rounds); ok {
		pair := "one tree in two engine processes"
		if doc.Schedule == qualify.ScheduleOneEngine {
			pair = "one tree read twice in one engine process"
		}
		fmt.Fprintf(s.Out, "read noise: each read's windows scattered by a median %.3g %% about their median; B and B′, %s, differed by a median %.3g %%\n",
			100*within, pair, 100*between)
	}
	fmt.Fprintf(s.Out, "%d of %d rounds PASS under the policy\ncalibration %s\ndigest %s\n", doc.Passes, len(doc.Rounds), out, doc.Digest)
	return nil
}

// writeCalibration sets doc's calibration to c, with its digest and
// passes, and writes doc to its file in one step.
func writeCalibration(doc *calibrationJSON, c *qualify.Calibration) error {
	d, err := c.Digest()
	if err != nil {
		return err
	}
	doc.Calibration, doc.Digest, doc.Passes = c, d, c.Passes()
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return atomicwrite.WriteFile(doc.File, append(data, '\n'), 0o644)
}

// writeCalibratedPolicy writes the speed policy doc's calibration
// supports, or records why there is none.
func writeCalibratedPolicy(doc *calibrationJSON, base speed.Policy, path string) error {
	p, err := doc.Calibration.Policy(base)
	if errors.Is(err, qualify.ErrUnsupportedLanes) {
		doc.PolicyRefused = err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	comment := fmt.Sprintf("Written by cacheon qualify calibrate from %d stock rounds on the %s lanes:\nnoise floor %s, calibration %s (%s).\nmin_margin and max_noise are the calibration's; the other values are the base policy's.",
		len(doc.Rounds), doc.Lanes, doc.NoiseFloor, doc.Digest, filepath.Base(doc.File))
	if err := atomicwrite.WriteFile(abs, speed.FormatPolicyFile("calibrated-"+strings.ReplaceAll(doc.Lanes, " ", "-"), p, comment), 0o644); err != nil {
		return err
	}
	doc.PolicyFile = abs
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

// qualityCalibrationJSON is the --json document of qualify calibrate
// --quality.
type qualityCalibrationJSON struct {
	Kind   string `json:"kind"` // "quality-calibration"
	Digest string `json:"digest"`
	File   string `json:"file"`
	*quality.Calibration
}

// calibrateQuality runs stock rounds for T on lane 0 with the engine
// configuration of the speed stage's B arm, scores them with the
// reference, and writes the quality calibration.
func calibrateQuality(ctx context.Context, s Streams, o qualifyCalibrateOptions, q *qualification, tree, root, out string, progress func(string, ...any)) error {
	lane := q.lanes[0]
	teacherRoot, err := worker.EngineRoot(filepath.Join(q.run, "teacher-root"))
	if err != nil {
		return err
	}
	rounds, err := quality.StockRounds(ctx, quality.StockRoundsOptions{
		Isolation: q.iso,
		Engine: engine.Spec{Python: q.python, Root: root, Tree: tree, Model: q.model, Device: lane.Device,
			Graph: lane.Device == "cuda" && q.workload.Engine.CUDAGraphs},
		Teacher:      quality.TeacherSpec{Python: q.python, Root: teacherRoot, Tree: q.quality.ReferenceTree, Model: q.model, Device: lane.Device},
		Batches:      q.workload.PromptBatches,
		MaxNewTokens: q.workload.MaxNewTokens,
		Rounds:       o.rounds,
		WorkDir:      filepath.Join(q.run, "quality-rounds"),
		Progress:     progress,
	})
	if err != nil {
		return err
	}
	wd, err := q.workload.Digest()
	if err != nil {
		return err
	}
	ref, err := materialize.Verify(q.quality.ReferenceTree)
	if err != nil {
		return err
	}
	co := quality.DefaultCalibrateOptions(q.modelDigest, wd, ref.TreeDigest.String())
	co.Lanes = lanesName(q.lanes)
	co.Note = fmt.Sprintf("%d stock-versus-stock rounds on lanes %s; thresholds = max(headroom × measured, floor)", o.rounds, co.Lanes)
	doc := qualityCalibrationJSON{Kind: "quality-calibration", File: out}
	if doc.Calibration, err = quality.Calibrate(rounds, co); err != nil {
		return err
	}
	if doc.Digest, err = doc.Calibration.Digest(); err != nil {
		return err
	}
	data, err := quality.MarshalCalibration(doc.Calibration)
	if err != nil {
		return err
	}
	if err := atomicwrite.WriteFile(out, data, 0o644); err != nil {
		return err
	}
	if o.json {
		return enginecli.WriteJSON(s.Out, doc)
	}
	fmt.Fprintf(s.Out, "quality calibration of %d rounds: NLL tail threshold %s\n", len(rounds), doc.NLLTailThreshold)
	for _, m := range quality.MetricNames {
		t := doc.Metrics[m]
		fmt.Fprintf(s.Out, "  %-12s stock envelope %s, candidate delta %s (measured drift %s, regression %s)\n", m, t.StockEnvelope, t.CandidateDelta, t.MeasuredDrift, t.MeasuredRegression)
	}
	fmt.Fprintf(s.Out, "calibration %s\ndigest %s\n", out, doc.Digest)
	return nil
}

// aroundReads is a round's lane facts for its progress line, each for B,
// C and B′: the CPU seconds the waiting neighbours burned during the read
// and, on a GPU, the lowest SM clock and highest power sampled around it,
// so that a read slower than the others can be told apart from a device
// clocked down or a busy host.
func aroundReads(a [3]qualify.AroundRead) string {
	s := fmt.Sprintf("neighbours' CPU %.2f, %.2f, %.2f s", a[0].NeighbourCPU, a[1].NeighbourCPU, a[2].NeighbourCPU)
	if a[0].SMClockMHz > 0 || a[1].SMClockMHz > 0 || a[2].SMClockMHz > 0 {
		s += fmt.Sprintf("; SM clock %d, %d, %d MHz; power %.0f, %.0f, %.0f W", a[0].SMClockMHz, a[1].SMClockMHz, a[2].SMClockMHz,
			a[0].PowerW, a[1].PowerW, a[2].PowerW)
	}
	return s
}
