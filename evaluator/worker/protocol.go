package worker

// Protocol is the worker protocol version every request and result carries.
// Version 2: requests carry the catalog's slot contract (SlotContract)
// instead of naming a slot whose contract the worker looked up itself.
const Protocol = "cacheon-worker-v2"

// Worker roles.
const (
	RolePlan      = "plan"
	RoleCandidate = "candidate"
	RoleReference = "reference"
	RoleChecker   = "checker"
)

// CaseRef names one case to run: its catalog index, input seed and shape
// parameters. The worker regenerates every tensor from these alone.
type CaseRef struct {
	Index  int              `json:"index"`
	Seed   int64            `json:"seed"`
	Params map[string]int64 `json:"params"`
	// Name names a case that is not a catalog shape (RegrowCase).
	Name string `json:"name,omitempty"`
	// Steps make a sequence case: one eager call per step, in order, in
	// the same candidate process; Params is then the first step's.
	Steps []CaseStep `json:"steps,omitempty"`
}

// RegrowCase names the sequence case every collective row runs: its token
// count big, small, then big again in one process, every other dim the
// big call's. It catches state a kernel keeps from an earlier call (a
// workspace or view sized by it) that goes stale when the count grows
// again; at each hidden size the catalog cases only ever grow.
const RegrowCase = "regrow"

// CaseStep is one call of a sequence case: its phase name and shape.
type CaseStep struct {
	Phase  string           `json:"phase"`
	Params map[string]int64 `json:"params"`
}

// PlanRequest asks for the cases of the slots whose contracts it carries.
type PlanRequest struct {
	Protocol  string         `json:"protocol"`
	Role      string         `json:"role"`
	WorkDir   string         `json:"work_dir"`
	Contracts []SlotContract `json:"contracts"`
	Seed      int64          `json:"seed"`
	WorldSize int            `json:"world_size"`
	Device    string         `json:"device"`
}

// Env describes the interpreter and device a worker ran on.
type Env struct {
	Python        string  `json:"python"`
	PythonVersion string  `json:"python_version"`
	Torch         string  `json:"torch"`
	Triton        *string `json:"triton"`
	CUDAAvailable bool    `json:"cuda_available"`
	DeviceName    string  `json:"device_name,omitempty"`
	DeviceCount   int     `json:"device_count,omitempty"`
	CUDA          *string `json:"cuda,omitempty"`
	Architecture  *string `json:"architecture"`
}

// PlanResult is the plan role's answer.
type PlanResult struct {
	Env          Env                 `json:"env"`
	Slots        map[string]PlanSlot `json:"slots"`
	HarnessError string              `json:"harness_error,omitempty"`
}

// PlanSlot is one slot's cases. Known is false when the validator has no
// semantics (generators, truth) for the slot; ContractError says why the
// validator cannot verify the slot under the contract it was given (a call
// argument it does not generate, a correctness mode it does not implement).
type PlanSlot struct {
	Known         bool   `json:"known"`
	ContractError string `json:"contract_error,omitempty"`
	WorldSize     int    `json:"world_size"`
	// LiveDTypes are the activation dtypes the slot's live call sites
	// see in the engine it is exported into; empty when every dtype the
	// catalog states a tolerance for is live. Verifying another dtype
	// would judge a call the engine never makes, so a row there is N/A.
	LiveDTypes []string      `json:"live_dtypes"`
	Cases      []PlannedCase `json:"cases"`
	// Sequences are the candidate shape sequences of the regrow case
	// (collective slots only), most preferred first: the controller runs
	// the first whose every step the op row's domain admits.
	Sequences []PlannedSequence `json:"sequences"`
}

// PlannedSequence is one candidate sequence case, with and without jitter
// (CatalogSteps is nil when the catalog shapes give no sequence).
type PlannedSequence struct {
	Index           int           `json:"index"`
	Seed            int64         `json:"seed"`
	Name            string        `json:"name"`
	Steps           []PlannedStep `json:"steps"`
	CatalogSteps    []PlannedStep `json:"catalog_steps"`
	Describe        string        `json:"describe"`
	CatalogDescribe string        `json:"catalog_describe"`
}

// PlannedStep is one call of a sequence case with its live capability fields.
type PlannedStep struct {
	Phase  string           `json:"phase"`
	Params map[string]int64 `json:"params"`
	Live   map[string]any   `json:"live"`
}

// PlannedCase is one case with and without jitter. Live maps hold the
// capability fields of the call: JSON numbers and strings.
type PlannedCase struct {
	Index         int              `json:"index"`
	Seed          int64            `json:"seed"`
	Params        map[string]int64 `json:"params"`
	CatalogParams map[string]int64 `json:"catalog_params"`
	Live          map[string]any   `json:"live"`
	CatalogLive   map[string]any   `json:"catalog_live"`
	Describe      string           `json:"describe"`
}

// CandidateRequest runs one op row's entry on the given cases (one rank).
// Entry and Prepare are the op row's callables.
type CandidateRequest struct {
	Protocol   string       `json:"protocol"`
	Role       string       `json:"role"`
	WorkDir    string       `json:"work_dir"`
	Contract   SlotContract `json:"contract"`
	Variant    string       `json:"variant"`
	Device     string       `json:"device"`
	DType      string       `json:"dtype"`
	WorldSize  int          `json:"world_size"`
	Rank       int          `json:"rank"`
	Rendezvous string       `json:"rendezvous,omitempty"`
	BundleRoot string       `json:"bundle_root"`
	Source     string       `json:"source"`
	Entry      string       `json:"entry"`
	Prepare    string       `json:"prepare,omitempty"`
	Cases      []CaseRef    `json:"cases"`
	Graph      bool         `json:"graph"`
	TimeoutS   float64      `json:"timeout_s"`
	// CUDASources are the row's declared CUDA files. A row that has any
	// runs only from its prebuilt library (Native); the worker never
	// compiles, and refuses the row when the controller gave none.
	CUDASources []string `json:"cuda_sources,omitempty"`
	// Native is the row's library in a sealed prebuild artifact, which
	// the controller reopened and verified and binds read-only.
	Native *NativeLibrary `json:"native,omitempty"`
	// Witness is the arena directory of the controller's Witness: the
	// harness places every checked call's tensors in its files and
	// announces each call's return on its pipe.
	Witness string `json:"witness,omitempty"`
	// DeviceArena, on a GPU, is the checker's block the harness places
	// every checked call's tensors in instead (it still announces each
	// call's return on the witness pipe).
	DeviceArena *DeviceArena `json:"device_arena,omitempty"`
}

// CheckerRequest starts the checker of one candidate rank: the validator
// process that owns the device memory of the rank's checked calls (see
// Checker).
type CheckerRequest struct {
	Protocol  string       `json:"protocol"`
	Role      string       `json:"role"`
	WorkDir   string       `json:"work_dir"`
	Contract  SlotContract `json:"contract"`
	Device    string       `json:"device"`
	DType     string       `json:"dtype"`
	WorldSize int          `json:"world_size"`
	Rank      int          `json:"rank"`
	Cases     []CaseRef    `json:"cases"`
}

// DeviceArena is the checker's block as the candidate harness is told of
// it: the fd it was passed on, the block's size, and where each call
// holder (named as its arena file would be: "c3.arena", "c5_big.arena")
// lies in it.
type DeviceArena struct {
	FD      int                    `json:"fd"`
	Bytes   int64                  `json:"bytes"`
	Holders map[string]ArenaHolder `json:"holders"`
}

// ArenaHolder is one call holder's place in the checker's block.
type ArenaHolder struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// NativeLibrary is one prebuilt library a worker loads
// (torch.ops.load_library) before it imports the row's module.
type NativeLibrary struct {
	Artifact string `json:"artifact"` // the sealed artifact's digest
	Path     string `json:"path"`     // the library's absolute path inside the sealed directory
	SHA256   string `json:"sha256"`   // its sealed digest, checked again before loading
}

// CandidateRecord is what a candidate process recorded (read for crash
// attribution and the graph gate status; the verdict comes from the
// reference role).
type CandidateRecord struct {
	Complete bool            `json:"complete"`
	Load     *LoadStatus     `json:"load"`
	Env      Env             `json:"env"`
	Cases    []CandidateCase `json:"cases"`
}

// LoadStatus says whether the candidate module imported.
type LoadStatus struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// MissingModule is a top-level module the import lacked that is not
	// part of the bundle: the interpreter lacks a dependency.
	MissingModule string `json:"missing_module,omitempty"`
}

// CandidateCase is one case's calls as the candidate process saw them.
type CandidateCase struct {
	Index   int          `json:"index"`
	Phases  []CallRecord `json:"phases"`
	Graph   *CallRecord  `json:"graph,omitempty"`
	Prepare *CallRecord  `json:"prepare,omitempty"`
}

// CallRecord is the status of one call (or of the capture).
type CallRecord struct {
	Phase  string `json:"phase,omitempty"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// ReferenceRequest judges the outputs left in CandidateDirs (one per rank).
type ReferenceRequest struct {
	Protocol      string       `json:"protocol"`
	Role          string       `json:"role"`
	WorkDir       string       `json:"work_dir"`
	Contract      SlotContract `json:"contract"`
	Variant       string       `json:"variant"`
	DType         string       `json:"dtype"`
	WorldSize     int          `json:"world_size"`
	Graph         bool         `json:"graph"`
	Cases         []CaseRef    `json:"cases"`
	CandidateDirs []string     `json:"candidate_dirs"`
	// WitnessDirs hold, per rank, the controller's copies of the calls'
	// memory (Witness); when set, they and not the candidate's records
	// decide inputs, outputs and padding.
	WitnessDirs []string `json:"witness_dirs,omitempty"`
}

// Verdict is the reference role's judgement of one op row.
type Verdict struct {
	Passed       bool          `json:"passed"`
	Reason       string        `json:"reason"`
	Correctness  string        `json:"correctness"`
	Tolerance    Tolerance     `json:"tolerance"`
	Cases        []CaseVerdict `json:"cases"`
	HarnessError string        `json:"harness_error,omitempty"`
}

// Tolerance is the (atol, rtol) pair the comparison used.
type Tolerance struct {
	Atol float64 `json:"atol"`
	Rtol float64 `json:"rtol"`
}

// CaseVerdict is one case's judgement.
type CaseVerdict struct {
	Index    int              `json:"index"`
	Name     string           `json:"name,omitempty"`
	Params   map[string]int64 `json:"params"`
	Describe string           `json:"describe"`
	Passed   bool             `json:"passed"`
	Reason   string           `json:"reason"`
	Phases   []PhaseVerdict   `json:"phases"`
}

// PhaseVerdict is one call's judgement.
type PhaseVerdict struct {
	Phase string `json:"phase"`
	// Params is the call's shape, for the steps of a sequence case.
	Params      map[string]int64 `json:"params,omitempty"`
	Passed      bool             `json:"passed"`
	Reason      string           `json:"reason"`
	Comparisons []Comparison     `json:"comparisons,omitempty"`
}

// Comparison is one output's comparison with the truth. Score and
// MaxAbsErr are numbers, or the strings "nan"/"inf" JSON cannot carry.
type Comparison struct {
	Rank      int     `json:"rank"`
	Passed    bool    `json:"passed"`
	Mode      string  `json:"mode"`
	Score     any     `json:"score"`
	Threshold float64 `json:"threshold"`
	MaxAbsErr any     `json:"max_abs_err"`
	Reason    string  `json:"reason"`
}
