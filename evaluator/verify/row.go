package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/kernels/bundle"
)

// Graph gate policies recorded per row.
const (
	GraphRequired    = "required"     // CUDA: capture + 3 fresh-input replays
	GraphNotRequired = "not_required" // CUDA: a block or collective without graph_safe metadata
	GraphCPU         = "cpu"          // the gate cannot run on CPU
)

// verifyRow selects the row's applicable cases, runs the candidate
// process(es) and then the reference process, and fills row. contract is
// the catalog's contract of the row's slot; every worker receives it.
func (r *runner) verifyRow(index int, op *bundle.Op, contract worker.SlotContract, ps worker.PlanSlot, env worker.Env, row *RowResult) {
	row.Kind = contract.Kind
	// The catalog states a tolerance per dtype; a dtype it gives the slot
	// none for is not one the slot can be judged in.
	if _, ok := contract.Tolerances[r.o.DType]; !ok {
		row.Verdict = NotApplicable
		row.Reason = fmt.Sprintf("the catalog states no %s tolerance for %s (it states %s)", r.o.DType, contract.Slot,
			strings.Join(contract.DTypes(), ", "))
		return
	}
	// The semantics name the dtypes the slot is live in (the MoE
	// finalize epilogue is bfloat16 only): another is N/A, as upstream
	// reports it, rather than cases judged at a dtype no engine calls.
	if why := outsideLiveDTypes(ps.LiveDTypes, r.o.DType); why != "" {
		row.Verdict, row.Reason = NotApplicable, why
		return
	}
	elig, err := bundle.OpEligibility(op)
	if err != nil {
		row.Verdict, row.Reason = Fail, err.Error()
		return
	}
	arch := ""
	if env.Architecture != nil {
		arch = *env.Architecture
	}
	var cases []worker.CaseRef
	var firstNA string
	for _, pc := range ps.Cases {
		cr := CaseResult{Index: pc.Index, Describe: pc.Describe, Params: pc.Params, Jittered: true}
		ok, why := admits(elig, callContext(pc.Live, r.o.DType, arch))
		if !ok {
			// Jitter may step outside a declared bound the catalog shape
			// respects; the catalog shape then stands in.
			if okCat, _ := admits(elig, callContext(pc.CatalogLive, r.o.DType, arch)); okCat {
				ok, cr.Params, cr.Jittered = true, pc.CatalogParams, false
				cr.Describe = describeParams(pc.CatalogParams, pc.Describe)
			}
		}
		if !ok {
			cr.Verdict, cr.Reason = NotApplicable, "outside the declared domain: "+why
			if firstNA == "" {
				firstNA = why
			}
		} else {
			cases = append(cases, worker.CaseRef{Index: pc.Index, Seed: pc.Seed, Params: cr.Params})
		}
		row.Cases = append(row.Cases, cr)
	}
	if contract.Kind == string(catalog.SlotCollective) {
		ref, cr := regrowCase(elig, ps.Sequences, len(ps.Cases), r.o.DType, arch)
		if ref != nil {
			cases = append(cases, *ref)
		}
		row.Cases = append(row.Cases, cr)
	}
	if len(cases) == 0 {
		row.Verdict, row.Reason = NotApplicable, "no case falls in the row's declared domain ("+firstNA+")"
		return
	}

	row.Graph = GraphCPU
	if r.o.Device == "cuda" {
		row.Graph = GraphNotRequired
		if contract.Kind == string(catalog.SlotOp) || (op.MetadataDoc != nil && op.MetadataDoc.GraphSafe) {
			row.Graph = GraphRequired
		}
	}
	world := 1
	if contract.Kind == string(catalog.SlotCollective) {
		world = ps.WorldSize
		row.WorldSize = world
		if r.o.Device == "cuda" && env.DeviceCount < world {
			row.Verdict = Error
			row.Reason = fmt.Sprintf("a collective over %d ranks needs %d GPUs; this host has %d", world, world, env.DeviceCount)
			return
		}
	}

	rowDir := filepath.Join(r.runDir, "rows", fmt.Sprintf("%02d-%s-%s", index, safeName(op.Slot), safeName(op.Variant)))
	graph := row.Graph == GraphRequired
	records, dirs, witnessed, verdict, reason := r.runCandidates(op, contract, rowDir, world, cases, graph, env, row)
	if verdict != "" {
		row.Verdict, row.Reason = verdict, reason
		return
	}
	refDir := filepath.Join(rowDir, "reference")
	req := worker.ReferenceRequest{Protocol: worker.Protocol, Role: worker.RoleReference, WorkDir: refDir,
		Contract: contract, Variant: op.Variant, DType: r.o.DType, WorldSize: world, Graph: graph, Cases: cases, CandidateDirs: dirs,
		WitnessDirs: witnessed}
	fmt.Fprintf(r.o.Progress, "%s [%s]: judging %d case(s) against the fp32 truth\n", op.Slot, Printable(op.Variant), len(cases))
	// The reference reads the candidates' outputs, never their code: its
	// sandbox holds its own validator copy and the candidate directories,
	// read-only.
	root, err := r.validatorRoot()
	if err != nil {
		row.Verdict, row.Reason = Error, err.Error()
		return
	}
	out, err := worker.Run(r.ctx, r.iso, worker.Spec{Python: r.python, ValidatorRoot: root, WorkDir: refDir, Request: req,
		Timeout: r.validatorTimeout(), ReadOnly: append(append([]string{}, dirs...), witnessed...)})
	row.Workers = append(row.Workers, workerRun(worker.RoleReference, 0, out))
	if err != nil {
		row.Verdict, row.Reason = Error, err.Error()
		return
	}
	var v worker.Verdict
	if !out.Clean() {
		row.Verdict = Error
		row.Reason = "reference worker " + out.Describe() + ": " + lastLine(worker.Tail(refDir, worker.StderrFile, 2000))
		return
	}
	if err := worker.ReadResult(refDir, &v); err != nil {
		row.Verdict, row.Reason = Error, err.Error()
		return
	}
	if v.HarnessError != "" {
		row.Verdict, row.Reason = Error, "reference worker: "+v.HarnessError
		return
	}
	mergeVerdict(row, &v, records)
}

// regrowCase picks the regrow case of a collective row: the first of the
// plan's sequences (most preferred first) whose every step the row's
// domain admits, jittered steps before catalog steps. Without one the
// case is N/A, like any case outside the domain: an engine never makes
// the calls the domain excludes.
func regrowCase(elig *bundle.Eligibility, seqs []worker.PlannedSequence, index int, dtype, arch string) (*worker.CaseRef, CaseResult) {
	admitted := func(steps []worker.PlannedStep) (bool, string) {
		if len(steps) == 0 {
			return false, "no sequence"
		}
		for _, st := range steps {
			if ok, why := admits(elig, callContext(st.Live, dtype, arch)); !ok {
				return false, st.Phase + " call: " + why
			}
		}
		return true, ""
	}
	// The case after the catalog cases, as the plan numbers it.
	cr := CaseResult{Index: index, Name: worker.RegrowCase, Describe: "big, small, big again", Params: map[string]int64{}}
	firstNA := "the plan lists no sequence (the slot's shapes have no token count to lower)"
	for i, seq := range seqs {
		steps, describe, jittered := seq.Steps, seq.Describe, true
		ok, why := admitted(steps)
		if !ok {
			if okCat, _ := admitted(seq.CatalogSteps); okCat {
				ok, steps, describe, jittered = true, seq.CatalogSteps, seq.CatalogDescribe, false
			}
		}
		if i == 0 {
			firstNA = why
		}
		if !ok {
			continue
		}
		ref := &worker.CaseRef{Index: seq.Index, Seed: seq.Seed, Params: steps[0].Params, Name: seq.Name}
		for _, st := range steps {
			ref.Steps = append(ref.Steps, worker.CaseStep{Phase: st.Phase, Params: st.Params})
		}
		cr.Index, cr.Describe, cr.Params, cr.Jittered = seq.Index, describe, steps[0].Params, jittered
		return ref, cr
	}
	cr.Verdict, cr.Reason = NotApplicable, "no big, small, big again sequence falls in the declared domain ("+firstNA+")"
	return nil, cr
}

// runCandidates runs one candidate process per rank. A non-empty verdict
// means the row is decided without a reference run (a crash, a timeout, or
// an infrastructure failure). witnessed are the ranks' directories of the
// controller's copies of their calls: of the arena files on the CPU, of
// the checkers' device blocks on a GPU.
func (r *runner) runCandidates(op *bundle.Op, contract worker.SlotContract, rowDir string, world int, cases []worker.CaseRef,
	graph bool, env worker.Env, row *RowResult) (records []worker.CandidateRecord, dirs, witnessed []string, verdict, reason string) {
	rendezvous := ""
	if world > 1 {
		rendezvous = filepath.Join(rowDir, "rendezvous")
		if err := sandboxWritable(r.iso, rendezvous); err != nil {
			return nil, nil, nil, Error, err.Error()
		}
	}
	var witnesses []*worker.Witness
	var checkers []*worker.Checker
	// Every checker ends with the row, its run recorded beside the
	// candidates'.
	defer func() {
		for rank, c := range checkers {
			out, _ := c.Close()
			row.Workers = append(row.Workers, workerRun(worker.RoleChecker, rank, out))
		}
	}()
	for rank := 0; rank < world; rank++ {
		snaps := filepath.Join(rowDir, fmt.Sprintf("witness%d", rank))
		var w *worker.Witness
		var err error
		if r.o.Device == "cpu" && !r.o.CheckerWitness {
			w, err = worker.NewWitness(filepath.Join(rowDir, fmt.Sprintf("arena%d", rank)), snaps, cases, !r.iso.Unsafe)
		} else {
			var c *worker.Checker
			if c, err = r.startChecker(contract, rowDir, rank, world, cases); err == nil {
				checkers = append(checkers, c)
				w, err = worker.NewDeviceWitness(snaps, cases, c)
			}
		}
		if err != nil {
			return nil, nil, nil, Error, err.Error()
		}
		witnesses = append(witnesses, w)
		witnessed = append(witnessed, snaps)
	}
	fmt.Fprintf(r.o.Progress, "%s [%s]: running %d case(s) in %d fresh worker process(es)\n", op.Slot, Printable(op.Variant), len(cases), world)
	// The ranks share one validator copy and one sandbox (a collective
	// needs their shared loopback), and nothing of the reference's.
	root, err := r.validatorRoot()
	if err != nil {
		return nil, nil, nil, Error, err.Error()
	}
	native, err := r.nativeLibrary(op)
	if err != nil {
		return nil, nil, nil, Error, err.Error()
	}
	dirs = make([]string, world)
	specs := make([]worker.Spec, world)
	for rank := 0; rank < world; rank++ {
		dirs[rank] = filepath.Join(rowDir, fmt.Sprintf("rank%d", rank))
		req := worker.CandidateRequest{Protocol: worker.Protocol, Role: worker.RoleCandidate, WorkDir: dirs[rank],
			Contract: contract, Variant: op.Variant, Device: r.o.Device, DType: r.o.DType, WorldSize: world, Rank: rank,
			Rendezvous: rendezvous, BundleRoot: r.bundle, Source: op.Source, Entry: op.Entry, Prepare: op.Prepare,
			Cases: cases, Graph: graph, TimeoutS: r.o.Timeout.Seconds(), CUDASources: op.CUDASources, Native: native}
		specs[rank] = worker.Spec{Python: r.python, ValidatorRoot: root, WorkDir: dirs[rank], Request: req,
			Timeout: r.o.Timeout, ReadOnly: []string{r.bundle}}
		if native != nil {
			specs[rank].ReadOnly = append(specs[rank].ReadOnly, r.native.Dir)
		}
		if rendezvous != "" {
			specs[rank].Writable = []string{rendezvous}
		}
		specs[rank].Witness = witnesses[rank]
		req.Witness = witnesses[rank].Dir()
		if checkers != nil {
			// The checker's block reaches the harness as fd 6.
			specs[rank].Files = []*os.File{checkers[rank].Block()}
			req.DeviceArena = checkers[rank].Arena(6)
		}
		specs[rank].Request = req
	}
	outs, runErr := worker.RunGroup(r.ctx, r.iso, specs)
	for rank := 0; rank < world; rank++ {
		row.Workers = append(row.Workers, workerRun(worker.RoleCandidate, rank, outs[rank]))
	}
	if runErr != nil {
		return nil, nil, nil, Error, runErr.Error()
	}
	// A call the controller could not witness has no decision, whatever
	// the candidate did: the failure is the machine's.
	for rank, w := range witnesses {
		if err := w.Err(); err != nil {
			return nil, nil, nil, Error, fmt.Sprintf("rank %d: %v", rank, err)
		}
		n, spent := w.Calls()
		fmt.Fprintf(r.o.Progress, "%s [%s]: rank %d: the controller witnessed %d call(s), the worker stopped %s in all\n",
			op.Slot, Printable(op.Variant), rank, n, spent.Round(time.Millisecond))
	}
	records = make([]worker.CandidateRecord, world)
	for rank := 0; rank < world; rank++ {
		_ = worker.ReadResult(dirs[rank], &records[rank])
	}
	// The first rank that ended on its own decides; ranks the controller
	// stopped because of it are not the cause.
	for rank := 0; rank < world; rank++ {
		o := outs[rank]
		if o.Canceled && r.ctx.Err() == nil {
			continue
		}
		if o.Clean() && records[rank].Complete {
			continue
		}
		where := ""
		if world > 1 {
			where = fmt.Sprintf("rank %d ", rank)
		}
		// Only the harness's control pipe says whether candidate code ran:
		// the progress log is the candidate's to rewrite.
		if !o.CandidateCode {
			detail := Printable(lastLine(worker.Tail(dirs[rank], worker.StderrFile, 4000)))
			return nil, nil, nil, Error, fmt.Sprintf("candidate worker %s%s before loading the candidate: %s", where, o.Describe(), detail)
		}
		reason := fmt.Sprintf("candidate worker %s%s during %s", where, o.Describe(), o.Progress.Where())
		switch {
		case o.Clean():
			reason = fmt.Sprintf("candidate worker %sexited before finishing, during %s", where, o.Progress.Where())
		case o.ExitCode == worker.ExitHarnessError:
			reason = fmt.Sprintf("candidate code broke the harness %sduring %s: %s", where, o.Progress.Where(), Printable(o.Progress.Error))
		}
		return nil, nil, nil, Fail, reason
	}
	if r.ctx.Err() != nil {
		return nil, nil, nil, Error, r.ctx.Err().Error()
	}
	for _, rec := range records {
		if rec.Load == nil || rec.Load.MissingModule == "" {
			continue
		}
		// The record is written in the candidate's process, so its claim
		// of a missing dependency is believed only where the trusted plan
		// worker saw that dependency missing too; otherwise it is the
		// kernel's own failure to load.
		if rec.Load.MissingModule == "triton" && (env.Triton == nil || *env.Triton == "") {
			return nil, nil, nil, Error, fmt.Sprintf("the worker interpreter %s cannot import %q, which the kernel needs "+
				"(%s); install it there or verify where it is available", r.python, rec.Load.MissingModule, Printable(rec.Load.Error))
		}
		return nil, nil, nil, Fail, fmt.Sprintf("the candidate module failed to load: it imports %q, which the worker "+
			"interpreter does not provide", Printable(rec.Load.MissingModule))
	}
	return records, dirs, witnessed, "", ""
}

// startChecker starts the checker of one rank on the GPU: the validator
// process that owns the device memory of the rank's checked calls. It
// must outlive the candidate, which starts after it.
func (r *runner) startChecker(contract worker.SlotContract, rowDir string, rank, world int, cases []worker.CaseRef) (*worker.Checker, error) {
	root, err := r.validatorRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(rowDir, fmt.Sprintf("checker%d", rank))
	req := worker.CheckerRequest{Protocol: worker.Protocol, Role: worker.RoleChecker, WorkDir: dir, Contract: contract,
		Device: r.o.Device, DType: r.o.DType, WorldSize: world, Rank: rank, Cases: cases}
	return worker.StartChecker(r.ctx, r.iso, worker.Spec{Python: r.python, ValidatorRoot: root, WorkDir: dir, Request: req,
		Timeout: r.o.Timeout + r.validatorTimeout()})
}

// mergeVerdict copies the reference verdict into row.
func mergeVerdict(row *RowResult, v *worker.Verdict, records []worker.CandidateRecord) {
	row.Correctness = v.Correctness
	tol := v.Tolerance
	row.Tolerance = &tol
	byIndex := map[int]*worker.CaseVerdict{}
	for i := range v.Cases {
		byIndex[v.Cases[i].Index] = &v.Cases[i]
	}
	graphStatus := map[int]string{}
	if len(records) > 0 {
		for _, c := range records[0].Cases {
			if c.Graph != nil {
				graphStatus[c.Index] = c.Graph.Status
			}
		}
	}
	for i := range row.Cases {
		c := &row.Cases[i]
		if c.Verdict == NotApplicable {
			continue
		}
		cv, ok := byIndex[c.Index]
		if !ok {
			c.Verdict, c.Reason = Fail, "the reference did not judge this case"
			continue
		}
		c.Verdict = Fail
		if cv.Passed {
			c.Verdict = Pass
		}
		c.Reason = cv.Reason
		c.Graph = graphStatus[c.Index]
		switch {
		case row.Graph == GraphRequired && c.Name == worker.RegrowCase:
			// Its point is the shapes changing between eager calls; the
			// catalog cases carry the graph gate.
			c.Graph = CaseGraphEagerOnly
		case row.Graph == GraphRequired && c.Graph == "":
			c.Graph = "not_run"
		}
		for _, p := range cv.Phases {
			c.Phases = append(c.Phases, PhaseResult{Phase: p.Phase, Params: p.Params, Passed: p.Passed, Reason: p.Reason})
		}
	}
	if v.Passed {
		row.Verdict = Pass
	} else {
		row.Verdict = Fail
	}
	row.Reason = v.Reason
}

func workerRun(role string, rank int, o worker.Outcome) WorkerRun {
	return WorkerRun{Role: role, Rank: rank, Exit: o.Describe(), Seconds: o.Duration.Seconds(), LastStage: Printable(o.Progress.Where())}
}

// sandboxWritable creates a directory that sandboxed workers write.
func sandboxWritable(iso worker.Isolation, dir string) error {
	if iso.Unsafe {
		return os.MkdirAll(dir, 0o755)
	}
	return sandbox.PrepareWritable(dir)
}

// callContext adds the context fields of this verify run to a case's live
// shape fields.
func callContext(live map[string]any, dtype, arch string) map[string]any {
	m := make(map[string]any, len(live)+3)
	for k, v := range live {
		m[k] = v
	}
	m["dtype"] = dtype
	m["quant"] = "dense"
	if arch != "" {
		m["architecture"] = arch
	}
	return m
}

func describeParams(params map[string]int64, fallback string) string {
	if len(params) == 0 {
		return fallback
	}
	// Keep the plan's parameter order by rewriting its description.
	var b strings.Builder
	for _, f := range strings.Fields(fallback) {
		k, _, ok := strings.Cut(f, "=")
		if v, has := params[k]; ok && has {
			fmt.Fprintf(&b, "%s=%d ", k, v)
			continue
		}
		b.WriteString(f + " ")
	}
	return strings.TrimSpace(b.String())
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

// outsideLiveDTypes is why dtype is outside a slot's live dtypes, "" when
// it is inside (or the slot names none: every dtype is live).
func outsideLiveDTypes(live []string, dtype string) string {
	if len(live) == 0 {
		return ""
	}
	for _, d := range live {
		if d == dtype {
			return ""
		}
	}
	return "outside live deep-export dtype domain: requires " + strings.Join(live, " or ")
}
