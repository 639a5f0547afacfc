package verify

import (
	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/kernels/scan"
)

// ReportSchema names the JSON form of Report.
const ReportSchema = "cacheon.verify-report.v1"

// Verdicts of a whole run and of one op row.
const (
	Pass          = "PASS"
	Fail          = "FAIL"
	Error         = "ERROR" // infrastructure: no verdict could be reached
	NotApplicable = "N/A"   // the row's declared domain admits no case here
	Skip          = "SKIP"  // the row names a slot this validator does not know
)

// Report is the outcome of one verify run.
type Report struct {
	Schema   string `json:"schema"`
	Bundle   string `json:"bundle"`
	BundleID string `json:"bundle_id"`
	ABI      string `json:"abi_version"`
	// ContentHash is the content hash of the staged copy the scan read and
	// the workers ran.
	ContentHash string      `json:"content_hash"`
	Isolation   string      `json:"isolation"` // IsolationSandbox or IsolationNone
	Device      string      `json:"device"`
	DType       string      `json:"dtype"`
	Seed        int64       `json:"seed"`
	WorldSize   int         `json:"world_size"`
	Scan        ScanSummary `json:"scan"`
	// NativeArtifact is the sealed prebuild artifact (digest) the
	// cuda_sources rows ran from; Prebuild is its receipt when this run
	// built it.
	NativeArtifact string            `json:"native_artifact,omitempty"`
	Prebuild       *prebuild.Receipt `json:"prebuild,omitempty"`
	Worker         WorkerInfo        `json:"worker"`
	Notes          []string          `json:"notes"`
	Rows           []RowResult       `json:"rows"`
	Verdict        string            `json:"verdict"`
	Reason         string            `json:"reason"`
}

// ScanSummary is the static scan that gates every run.
type ScanSummary struct {
	Violations    int    `json:"violations"`
	Advisories    int    `json:"advisories"`
	First         string `json:"first,omitempty"`          // the first violation, file:line:col: rule: message
	FirstAdvisory string `json:"first_advisory,omitempty"` // the first advisory finding
}

func scanSummary(r *scan.Report) ScanSummary {
	s := ScanSummary{Violations: r.Violations, Advisories: r.Advisories}
	var all []scan.Finding
	for _, op := range r.Ops {
		all = append(all, op.Findings...)
	}
	all = append(all, r.TreeFindings...)
	for _, f := range all {
		if f.Advisory() && s.FirstAdvisory == "" {
			s.FirstAdvisory = f.String()
		}
		if !f.Advisory() && s.First == "" {
			s.First = f.String()
		}
	}
	return s
}

// WorkerInfo records the interpreter and stack every worker ran on.
type WorkerInfo struct {
	Python        string  `json:"python"`
	PythonVersion string  `json:"python_version"`
	Torch         string  `json:"torch"`
	Triton        *string `json:"triton"`
	Architecture  string  `json:"architecture"`
	DeviceName    string  `json:"device_name,omitempty"`
	Timeout       string  `json:"timeout"`
}

// RowResult is the outcome for one op row (slot, variant).
type RowResult struct {
	Slot        string       `json:"slot"`
	Variant     string       `json:"variant"`
	Kind        string       `json:"kind,omitempty"`
	Source      string       `json:"source"`
	Entry       string       `json:"entry"`
	Verdict     string       `json:"verdict"`
	Reason      string       `json:"reason"`
	Correctness string       `json:"correctness,omitempty"`
	Tolerance   *Tolerance   `json:"tolerance,omitempty"`
	WorldSize   int          `json:"world_size,omitempty"`
	Graph       string       `json:"graph"` // required, not_required, cpu
	Cases       []CaseResult `json:"cases"`
	Workers     []WorkerRun  `json:"workers"`
}

// Tolerance is the comparison's (atol, rtol).
type Tolerance = worker.Tolerance

// CaseResult is one case of a row.
type CaseResult struct {
	Index int `json:"index"`
	// Name names a case that is not a catalog shape: worker.RegrowCase,
	// the big, small, big again sequence of every collective row.
	Name     string           `json:"name,omitempty"`
	Describe string           `json:"describe"`
	Params   map[string]int64 `json:"params"`
	Jittered bool             `json:"jittered"` // false when the catalog shape was used
	Verdict  string           `json:"verdict"`
	Reason   string           `json:"reason"`
	Graph    string           `json:"graph,omitempty"` // captured, capture_failed, not_run, eager_only
	Phases   []PhaseResult    `json:"phases,omitempty"`
}

// CaseGraphEagerOnly is the graph status of a case that runs eager calls
// only, by design, in a row under the graph gate (the regrow case).
const CaseGraphEagerOnly = "eager_only"

// PhaseResult is one checked call of a case.
type PhaseResult struct {
	Phase string `json:"phase"`
	// Params is the call's shape, for the steps of a sequence case (the
	// regrow case: big, small, big_again).
	Params map[string]int64 `json:"params,omitempty"`
	Passed bool             `json:"passed"`
	Reason string           `json:"reason"`
}

// WorkerRun records one worker process of a row.
type WorkerRun struct {
	Role      string  `json:"role"`
	Rank      int     `json:"rank"`
	Exit      string  `json:"exit"`
	Seconds   float64 `json:"seconds"`
	LastStage string  `json:"last_stage,omitempty"`
}

// Counts tallies row verdicts.
func (r *Report) Counts() map[string]int {
	c := map[string]int{}
	for _, row := range r.Rows {
		c[row.Verdict]++
	}
	return c
}

// decide sets the run verdict from the rows: any FAIL fails the run; else
// any ERROR makes it an infrastructure error; else it passes only if at
// least one row passed (a bundle with nothing verifiable here fails).
func (r *Report) decide() {
	c := r.Counts()
	switch {
	case c[Fail] > 0:
		r.Verdict, r.Reason = Fail, firstReason(r.Rows, Fail)
	case c[Error] > 0:
		r.Verdict, r.Reason = Error, firstReason(r.Rows, Error)
	case c[Pass] == 0:
		r.Verdict = Fail
		r.Reason = "no op row had an applicable case on this device and dtype"
	default:
		r.Verdict = Pass
		r.Reason = "every applicable op row passed"
	}
}

func firstReason(rows []RowResult, verdict string) string {
	for _, row := range rows {
		if row.Verdict == verdict {
			return row.Slot + " [" + row.Variant + "]: " + row.Reason
		}
	}
	return ""
}
