package stack

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"

	"github.com/cacheon/engine/internal/hclload"
)

// Rules an assembly Problem names, so a reader can tell which check
// refused the stack.
const (
	RuleUnknownTarget  = "unknown-target"
	RuleSourceMissing  = "source-missing"
	RuleInspection     = "inspection"
	RuleTargetBinding  = "target-binding"
	RuleUnregistered   = "unregistered-bundle"
	RulePinMismatch    = "pinned-digest"
	RuleActiveSet      = "active-set"
	RuleAttribution    = "attribution"
	RuleStackIdentity  = "stack-identity"
	RuleSourceMismatch = "sources"
)

// Problem is one reason a stack file does not assemble, at the source
// range that caused it.
type Problem struct {
	Range   hcl.Range
	Target  string // the contribution's target, if the problem is one entry's
	Rule    string
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Range.Filename != "" {
		fmt.Fprintf(&b, "%s: ", p.Range)
	}
	if p.Target != "" {
		fmt.Fprintf(&b, "contribution %q: ", p.Target)
	}
	fmt.Fprintf(&b, "%s (rule %s)", p.Message, p.Rule)
	return b.String()
}

// AssemblyError lists every problem found in a stack file. It is a
// rejection of the input: the stack as written cannot be built.
type AssemblyError struct {
	Problems []Problem
}

func (e *AssemblyError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	if len(lines) == 1 {
		return "stack does not assemble: " + lines[0]
	}
	return fmt.Sprintf("stack does not assemble (%d problems):\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// Diagnostics returns the problems as HCL diagnostics, each with its
// source range and its rule, so a stack's problems render (as text or
// JSON) as every HCL file's do.
func (e *AssemblyError) Diagnostics() hcl.Diagnostics {
	out := make(hcl.Diagnostics, 0, len(e.Problems))
	for _, p := range e.Problems {
		summary := "Stack does not assemble"
		if p.Target != "" {
			summary = fmt.Sprintf("Contribution %q refused", p.Target)
		}
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: p.Message, Extra: problemRule(p.Rule)}
		if p.Range.Filename != "" {
			rng := p.Range
			d.Subject = &rng
		}
		out = append(out, d)
	}
	return out
}

// problemRule names a problem's rule to the shared renderers
// (hclload.Ruled).
type problemRule string

func (r problemRule) DiagnosticRule() string { return string(r) }

// Is makes an assembly error a rejection (reject.ErrRejected).
func (e *AssemblyError) Is(target error) bool { return target == reject.ErrRejected }

// Assembled is a stack file with every source located, inspected and
// bound into the stack's manifest.
type Assembled struct {
	File     *File
	Manifest Manifest
	// Dirs maps each target to the source directory of its entry.
	Dirs map[string]string
	// Inspections maps each target to what inspection derived from its
	// source (content hash, target, selected payload and delta).
	Inspections map[string]*contribution.Inspection
}

// Assemble locates and inspects every contribution source of f against
// cat and builds the stack manifest. It reads sources but never imports
// or runs them. Every problem is collected before Assemble returns an
// *AssemblyError; other errors are I/O failures.
func Assemble(f *File, sources Sources, cat *catalog.Catalog, payload contribution.PayloadOptions) (*Assembled, error) {
	if err := sources.Check(f); err != nil {
		return nil, &AssemblyError{Problems: []Problem{{Range: f.DeclRange, Rule: RuleSourceMismatch, Message: err.Error()}}}
	}
	a := &Assembled{File: f, Dirs: map[string]string{}, Inspections: map[string]*contribution.Inspection{}}
	// Entries are inspected concurrently (parsing and hashing dominate);
	// results are collected in file order so reports are stable.
	type result struct {
		ref Ref
		dir string
		in  *contribution.Inspection
		p   *Problem
	}
	results := make([]result, len(f.Contributions))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(f.Contributions)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := &results[i]
				r.ref, r.dir, r.in, r.p = assembleEntry(f, f.Contributions[i], sources, cat, payload)
			}
		}()
	}
	for i := range f.Contributions {
		next <- i
	}
	close(next)
	wg.Wait()
	var problems []Problem
	var refs []Ref
	for i, c := range f.Contributions {
		r := results[i]
		if r.p != nil {
			problems = append(problems, *r.p)
			continue
		}
		a.Dirs[c.TargetID] = r.dir
		a.Inspections[c.TargetID] = r.in
		refs = append(refs, r.ref)
	}
	if len(problems) == 0 {
		ids := f.Targets()
		if err := cat.ValidateActive(ids); err != nil {
			for _, e := range unjoin(err) {
				p := Problem{Range: f.DeclRange, Rule: RuleActiveSet, Message: e.Error()}
				var as *catalog.ActiveSetError
				if errors.As(e, &as) && len(as.Targets) > 0 {
					if c, ok := f.Entry(as.Targets[0]); ok {
						p.Range, p.Target = c.LabelRange, c.TargetID
					}
				}
				problems = append(problems, p)
			}
		}
	}
	if len(problems) > 0 {
		return nil, &AssemblyError{Problems: problems}
	}
	var err error
	s := f.Substrate
	switch f.Kind {
	case Release:
		a.Manifest, err = NewEngineReleaseManifest(s.RuntimeDigest, s.BaseEngineDigest, cat.Digest(), cat.Snapshot(), refs)
	default:
		a.Manifest, err = NewEvaluationStackManifest(s.RuntimeDigest, s.BaseEngineDigest, f.Arena.Digest, cat.Digest(), cat.Snapshot(), refs)
	}
	if err != nil {
		return nil, &AssemblyError{Problems: []Problem{{Range: f.DeclRange, Rule: RuleStackIdentity, Message: err.Error()}}}
	}
	return a, nil
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func assembleEntry(f *File, c Contribution, sources Sources, cat *catalog.Catalog, payload contribution.PayloadOptions) (Ref, string, *contribution.Inspection, *Problem) {
	problem := func(rng hcl.Range, rule, format string, args ...any) (Ref, string, *contribution.Inspection, *Problem) {
		return nil, "", nil, &Problem{Range: rng, Target: c.TargetID, Rule: rule, Message: fmt.Sprintf(format, args...)}
	}
	if _, ok := cat.Target(c.TargetID); !ok {
		return problem(c.LabelRange, RuleUnknownTarget, "%q is not a target of the catalog%s", c.TargetID, suggestTarget(c.TargetID, cat.TargetIDs()))
	}
	dir, err := sources.ContributionDir(f, c)
	if err != nil {
		return problem(c.Range("source"), RuleSourceMissing, "%v", err)
	}
	in, err := contribution.Inspect(dir, contribution.Options{Catalog: cat, Payload: payload})
	if err != nil {
		var rej *contribution.RejectedError
		if errors.As(err, &rej) {
			return problem(c.Range("source"), RuleInspection+"/"+rej.Stage, "the bundle at %s is refused: %v", dir, rej.Err)
		}
		return problem(c.Range("source"), RuleSourceMissing, "cannot read the bundle at %s: %v", dir, err)
	}
	if !in.Registered() {
		return problem(c.Range("source"), RuleUnregistered, "the bundle at %s resolves to no registered target (%s)", dir, in.Target.Unregistered)
	}
	if in.Target.TargetID != c.TargetID {
		return problem(c.LabelRange, RuleTargetBinding, "the bundle at %s resolves to target %q, not %q: put it in a contribution %q block, or fix the bundle's manifest", dir, in.Target.TargetID, c.TargetID, in.Target.TargetID)
	}
	switch c.Kind {
	case ProposalKind:
		if !c.ArtifactDigest.IsZero() && c.ArtifactDigest != in.ContentHash {
			return problem(c.Range("artifact_digest"), RulePinMismatch, "the bundle at %s has content hash %s, the stack pins %s: restore the pinned bundle, or update artifact_digest if the change is intended", dir, in.ContentHash, c.ArtifactDigest)
		}
		ref, err := contribution.NewProposalRef(in, c.AttributionDigest)
		if err != nil {
			return problem(c.Range("attribution_digest"), RuleAttribution, "%v", err)
		}
		return ref, dir, in, nil
	default:
		tree, err := contribution.IntegratedSourceTreeDigest(dir)
		if err != nil {
			return problem(c.Range("source"), RuleInspection, "integrated source tree of %s: %v", dir, err)
		}
		if !c.IntegratedSourceTreeDigest.IsZero() && c.IntegratedSourceTreeDigest != tree {
			return problem(c.Range("integrated_source_tree_digest"), RulePinMismatch, "the source at %s has integrated source tree digest %s, the stack pins %s", dir, tree, c.IntegratedSourceTreeDigest)
		}
		// The entry is the stack's claim; materializing a release checks
		// it against the integration record it must derive from.
		ref := &contribution.IntegratedRef{
			Type: contribution.KindIntegrated, SchemaVersion: 1,
			TargetID: in.Target.TargetID, TargetSpecDigest: in.Target.TargetSpecDigest,
			IntegratedSourceTreeDigest: tree, SelectedPayloadDigest: in.SelectedPayloadDigest,
			AttributionDigest: c.AttributionDigest, IntegrationRecordDigest: c.IntegrationRecordDigest,
		}
		if err := ref.Validate(); err != nil {
			return problem(c.DeclRange, RuleAttribution, "%v", err)
		}
		return ref, dir, in, nil
	}
}

// suggestTarget offers the closest known target id for a misspelling.
func suggestTarget(id string, known []string) string {
	best, ok := hclload.Closest(id, known, len(id)/3+1)
	if !ok {
		return "; known targets: " + strings.Join(known, ", ")
	}
	return fmt.Sprintf("; did you mean %q?", best)
}
