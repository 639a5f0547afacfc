package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/identity"
	rejectroot "github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/stack"
)

// ReasonInspection is a candidate bundle refused by an intake stage
// before any transition is planned.
const ReasonInspection Reason = "inspection"

// LocalAttribution is the attribution digest of a candidate planned
// without one: H(identity.DomainLocalAttribution, {artifact_digest}),
// derived from the bundle alone, so it never credits anyone.
func LocalAttribution(contentHash identity.Digest) identity.Digest {
	return identity.MustH(identity.DomainLocalAttribution, map[string]identity.Digest{"artifact_digest": contentHash})
}

// Request is one candidate to plan against an assembled incumbent.
type Request struct {
	// Incumbent is the assembled incumbent; it must be an evaluation
	// stack. IncumbentPath names its file in messages.
	Incumbent     *stack.Assembled
	IncumbentPath string
	// CandidateDir is the candidate bundle's directory.
	CandidateDir string
	// Attribution is the digest of the candidate's intake attribution;
	// empty means LocalAttribution of the bundle's content hash.
	Attribution string
	// Materialize holds the catalog, payload options and hooks both arms
	// are materialized with; the catalog also resolves the candidate.
	Materialize materialize.Options
	// Progress, when set, is told of each stage.
	Progress func(format string, args ...any)
	// TreeDir, when set, is a directory (created, must not hold B or C)
	// where both engine trees are kept as TreeDir/B and TreeDir/C, for
	// the caller to run; otherwise they are written to a temporary
	// directory and removed.
	TreeDir string
	// IncumbentTree, when set, is the incumbent's engine tree as the
	// materializer published it (what //stacks:incumbent builds). It is
	// verified as a consumer would (materialize.Verify: published shape,
	// canonical metadata, recomputed namespaces, inventory equal to the
	// tree) and its metadata must name the incumbent's stack digest; its
	// tree digest is then B's, and the incumbent is not materialized
	// again. The tree's bytes are trusted to be that materialization, so
	// pass only a tree this tool wrote.
	IncumbentTree string
	// CandidateTree, when set, is where the candidate's tree C is
	// published (it must not exist); otherwise it goes under TreeDir or a
	// temporary directory.
	CandidateTree string
}

// Result is a planned candidate with its bound arms.
type Result struct {
	Candidate  *Candidate
	Inspection *contribution.Inspection // the candidate bundle's
	Arms       *MarginalArmPlan
	Digest     identity.Digest // H(cacheon.stack.marginal-arm-plan, Arms)
	// Attribution is the candidate's attribution digest; Local says it
	// was derived locally and credits no one.
	Attribution identity.Digest
	Local       bool
	// IncumbentTree and CandidateTree are the materialized trees' paths
	// when Request.TreeDir was set.
	IncumbentTree, CandidateTree string
}

// AttributionError is an attribution digest that is not valid.
type AttributionError struct{ Err error }

func (e *AttributionError) Error() string { return "attribution: " + e.Err.Error() }
func (e *AttributionError) Unwrap() error { return e.Err }

// Is makes an invalid attribution a rejection (rejectroot.ErrRejected).
func (e *AttributionError) Is(target error) bool { return target == rejectroot.ErrRejected }

// Run plans the marginal candidate of r: it inspects the candidate
// bundle against the catalog, plans its one transition (Plan),
// materializes both stacks into a temporary directory to compare their
// trees, and binds the arms B, C, B'. Refusals of the input are
// *Rejection (or an assembly or materialization rejection); anything else
// is an I/O failure. Cancelling ctx stops it between stages.
func Run(ctx context.Context, r Request) (*Result, error) {
	progress := r.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	incumbent, ok := r.Incumbent.Manifest.(*stack.EvaluationStackManifest)
	if !ok || r.Incumbent.File.Kind != stack.Evaluation {
		return nil, rejectroot.Errorf("%s: the incumbent must be an evaluation stack, this is a %s stack", r.IncumbentPath, r.Incumbent.File.Kind)
	}
	if _, err := os.Stat(r.CandidateDir); err != nil {
		return nil, err
	}
	cat := r.Materialize.Catalog
	in, err := contribution.Inspect(r.CandidateDir, contribution.Options{Catalog: cat, Payload: r.Materialize.Payload})
	if err != nil {
		var rej *contribution.RejectedError
		if errors.As(err, &rej) {
			return nil, reject(ReasonInspection, "the candidate %s is refused at %s: %v", r.CandidateDir, rej.Stage, rej.Err)
		}
		return nil, err
	}
	if !in.Registered() {
		return nil, reject(ReasonUnknownTarget, "the candidate %s resolves to no registered target (%s)", r.CandidateDir, in.Target.Unregistered)
	}
	res := &Result{Inspection: in}
	if r.Attribution == "" {
		res.Attribution, res.Local = LocalAttribution(in.ContentHash), true
	} else if res.Attribution, err = identity.ParseField("attribution_digest", r.Attribution, true); err != nil {
		// The all-zero digest parses here and is refused by the reference,
		// like every other field of it.
		return nil, &AttributionError{fmt.Errorf("proposal ref: %w", err)}
	}
	ref, err := contribution.NewProposalRef(in, res.Attribution)
	if err != nil {
		return nil, &AttributionError{err}
	}
	if res.Candidate, err = Plan(cat, incumbent, ref); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	tmp := r.TreeDir
	if tmp == "" {
		if tmp, err = os.MkdirTemp("", "cacheon-plan-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
	} else {
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, err
		}
		res.IncumbentTree, res.CandidateTree = filepath.Join(tmp, "B"), filepath.Join(tmp, "C")
	}
	candDirs := map[string]string{}
	for id, d := range r.Incumbent.Dirs {
		candDirs[id] = d
	}
	candDirs[res.Candidate.Transition.TargetID] = r.CandidateDir
	// The snapshots and closures assembly (and the candidate's
	// inspection) took are reused for both trees.
	var bTree *materialize.Result
	if r.IncumbentTree != "" {
		progress("checking the incumbent's tree %s", r.IncumbentTree)
		if bTree, err = incumbentTree(r.IncumbentTree, incumbent); err != nil {
			return nil, err
		}
		res.IncumbentTree = r.IncumbentTree
	} else {
		progress("materializing incumbent and candidate to compare their trees")
		bOpts := r.Materialize
		bOpts.Inspections = r.Incumbent.Inspections
		if bTree, err = materialize.Materialize(incumbent, resolverOf(r.Incumbent.Dirs), filepath.Join(tmp, "B"), bOpts); err != nil {
			return nil, fmt.Errorf("materialize incumbent: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cDir := filepath.Join(tmp, "C")
	if r.CandidateTree != "" {
		cDir = r.CandidateTree
		res.CandidateTree = cDir
	}
	progress("materializing the candidate")
	cOpts := r.Materialize
	cOpts.Inspections = map[string]*contribution.Inspection{}
	for id, ci := range r.Incumbent.Inspections {
		cOpts.Inspections[id] = ci
	}
	cOpts.Inspections[res.Candidate.Transition.TargetID] = in
	cTree, err := materialize.Materialize(res.Candidate.Stack, resolverOf(candDirs), cDir, cOpts)
	if err != nil {
		return nil, fmt.Errorf("materialize candidate: %w", err)
	}
	if res.Arms, err = res.Candidate.Arms(bTree.TreeDigest, cTree.TreeDigest); err != nil {
		if r.CandidateTree != "" {
			os.RemoveAll(r.CandidateTree) // a refused plan publishes no tree
		}
		return nil, err
	}
	if res.Digest, err = res.Arms.Digest(); err != nil {
		return nil, err
	}
	return res, nil
}

// incumbentTree verifies the published tree at dir and checks that it is
// the materialization of the incumbent stack.
func incumbentTree(dir string, incumbent *stack.EvaluationStackManifest) (*materialize.Result, error) {
	want, err := incumbent.Digest()
	if err != nil {
		return nil, err
	}
	res, err := materialize.Verify(dir)
	if err != nil {
		return nil, reject(ReasonIncumbentTree, "the incumbent tree %s is refused: %v", dir, err)
	}
	if res.StackDigest != want {
		return nil, reject(ReasonIncumbentTree, "the incumbent tree %s materializes stack %s, the incumbent is %s", dir, res.StackDigest, want)
	}
	return res, nil
}

// resolverOf maps each stack entry to the directory it was assembled from.
func resolverOf(dirs map[string]string) materialize.Resolver {
	return func(target string, _ stack.Ref) (string, error) {
		d, ok := dirs[target]
		if !ok {
			return "", fmt.Errorf("no source directory for %s", target)
		}
		return d, nil
	}
}

// CandidateFile says how to write a planned candidate as a stack file.
type CandidateFile struct {
	// Incumbent is the incumbent's stack file and IncumbentPath where it
	// lies: its relative sources are relative to it.
	Incumbent     *stack.File
	IncumbentPath string
	// Result is the planned candidate; CandidateDir its bundle.
	Result       *Result
	CandidateDir string
	// Label, when set, is written as the candidate's source instead of a
	// path (a build action names the candidate by label).
	Label string
}

// WriteCandidate writes the candidate stack file to out, atomically: the
// incumbent's file with the one transition applied, named
// "<incumbent>-candidate". The candidate's source is written relative to
// the new file (or as the label), its content hash pinned, and every
// relative path of the incumbent re-expressed for the new file's
// directory. It returns warnings for the user (a file that names labels
// outside a repository).
func WriteCandidate(out string, c CandidateFile) ([]string, error) {
	cand := c.Result.Candidate
	outDir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return nil, err
	}
	absCand, err := filepath.Abs(c.CandidateDir)
	if err != nil {
		return nil, err
	}
	// A path inside the new file's directory is written relative to it;
	// anything else absolute, so the file reads the same wherever it is
	// used from.
	rel, err := filepath.Rel(outDir, absCand)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		rel = absCand
	}
	if c.Label != "" {
		rel = c.Label
	}
	g := c.Incumbent.WithContribution(stack.Contribution{
		TargetID: cand.Transition.TargetID, Kind: stack.ProposalKind, Source: filepath.ToSlash(rel),
		AttributionDigest: c.Result.Attribution, ArtifactDigest: c.Result.Inspection.ContentHash,
	}, cand.Transition.Displaced)
	g.Name = c.Incumbent.Name + "-candidate"
	// Relative paths of the incumbent were relative to its own file.
	inDir, err := filepath.Abs(filepath.Dir(c.IncumbentPath))
	if err != nil {
		return nil, err
	}
	for i := range g.Contributions {
		e := &g.Contributions[i]
		if e.TargetID == cand.Transition.TargetID || stack.IsLabel(e.Source) || filepath.IsAbs(e.Source) {
			continue
		}
		e.Source = relocate(outDir, filepath.Join(inDir, filepath.FromSlash(e.Source)))
	}
	if !stack.IsLabel(g.Catalog) && !filepath.IsAbs(g.Catalog) {
		g.Catalog = relocate(outDir, filepath.Join(inDir, filepath.FromSlash(g.Catalog)))
	}
	var warnings []string
	// A caller that names the candidate by label (a build action) resolves
	// labels itself.
	if hasLabels(g) && c.Label == "" {
		if ws, err := stack.FindWorkspace(outDir); err != nil || !strings.HasPrefix(outDir+string(filepath.Separator), ws+string(filepath.Separator)) {
			warnings = append(warnings, fmt.Sprintf("%s names //labels; outside the repository pass --workspace ROOT when using it", out))
		}
	}
	comment := fmt.Sprintf("Candidate stack planned by `cacheon stack plan` from %s:\none transition at %s", filepath.Base(c.IncumbentPath), cand.Transition.TargetID)
	if len(cand.Transition.Displaced) > 0 {
		comment += ", displacing " + strings.Join(cand.Transition.Displaced, ", ")
	}
	comment += "."
	return warnings, atomicwrite.WriteFile(out, stack.Format(g, comment), 0o644)
}

// relocate expresses path p for a file in dir: relative when p is inside
// dir, absolute otherwise.
func relocate(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}

func hasLabels(f *stack.File) bool {
	if stack.IsLabel(f.Catalog) {
		return true
	}
	for _, c := range f.Contributions {
		if stack.IsLabel(c.Source) {
			return true
		}
	}
	return false
}

// Incumbent materializes only the incumbent of r (no candidate) into
// TreeDir/B and returns the tree's path and digest: the engine every arm
// of a stock-versus-stock calibration runs. r.CandidateDir is ignored.
func Incumbent(ctx context.Context, r Request) (string, identity.Digest, error) {
	incumbent, ok := r.Incumbent.Manifest.(*stack.EvaluationStackManifest)
	if !ok || r.Incumbent.File.Kind != stack.Evaluation {
		return "", identity.Digest{}, rejectroot.Errorf("%s: the incumbent must be an evaluation stack, this is a %s stack", r.IncumbentPath, r.Incumbent.File.Kind)
	}
	if r.TreeDir == "" {
		return "", identity.Digest{}, errors.New("plan.Incumbent: no TreeDir to keep the tree in")
	}
	if err := ctx.Err(); err != nil {
		return "", identity.Digest{}, err
	}
	if err := os.MkdirAll(r.TreeDir, 0o755); err != nil {
		return "", identity.Digest{}, err
	}
	opts := r.Materialize
	opts.Inspections = r.Incumbent.Inspections
	dir := filepath.Join(r.TreeDir, "B")
	tree, err := materialize.Materialize(incumbent, resolverOf(r.Incumbent.Dirs), dir, opts)
	if err != nil {
		return "", identity.Digest{}, fmt.Errorf("materialize incumbent: %w", err)
	}
	return dir, tree.TreeDigest, nil
}
