package materialize

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/kernels/pyclosure"
	"github.com/cacheon/engine/stacks/stack"
)

// Source kinds recorded in the tree metadata.
const (
	SourceProposalArtifact = "proposal_artifact"
	SourceIntegrated       = "integrated_source"
)

// Resolver returns the source directory of a stack entry: the bundle of a
// proposal, the reviewed source tree of an integrated contribution.
type Resolver func(target string, ref stack.Ref) (string, error)

// Options are the validator-owned inputs of a materialization.
type Options struct {
	// Catalog is the catalog in force; it must be the one the stack
	// embeds. Required.
	Catalog *catalog.Catalog
	// Payload computes selected payloads (CUDA include check, reviewed
	// patcher digests) exactly as intake did. Its Python closure is not
	// used: the materializer computes the closure itself
	// (contribution.PythonClosure), so that the files it namespaces are
	// the files the payload selects.
	Payload contribution.PayloadOptions
	// Inspections are what stack assembly derived from each target's
	// source (stack.Assembled.Inspections), keyed by target. A target's
	// inspection, when given, is reused: its snapshot's bytes are what the
	// tree is written from and its closure is what is namespaced, so the
	// source is not read, hashed or parsed again. Its identities are still
	// checked against the stack entry. An inspection is used only for the
	// directory it was taken of (Inspection.Dir equal to what the resolver
	// returns); other targets are read from their source directory.
	Inspections map[string]*contribution.Inspection
	// Records are the integration review records of a release stack,
	// one per entry. An evaluation stack takes none.
	Records []contribution.IntegrationRecord
	// AfterFile is called after each file is written into the
	// unpublished tree (fault-injection tests stop the writer there).
	AfterFile func(n int, path string)
	// Progress, when set, receives one line per stage.
	Progress func(format string, args ...any)
}

// Result describes a published engine tree.
type Result struct {
	StackDigest   identity.Digest   `json:"stack_digest"`
	TreeDigest    identity.Digest   `json:"tree_digest"`
	Contributions []ContributionRow `json:"contributions"`
	Files         []FileRow         `json:"files"`
}

// Error is a materialization refused because of its input (a bundle, the
// stack, the destination), as opposed to an I/O failure. Target is empty
// when the problem is not one contribution's.
type Error struct {
	Target string
	Dir    string
	Rule   string
	Err    error
}

// Rules an Error names.
const (
	RuleStack         = "stack"           // the manifest itself or its catalog
	RuleDestination   = "destination"     // exists, or overlaps a source
	RuleSourceEntry   = "source-entry"    // a symlink or special file in a source
	RuleUnstable      = "source-unstable" // a source changed while it was read
	RuleIdentity      = "source-identity" // the bytes are not the ones the stack names
	RuleInspection    = "inspection"      // intake rules (manifest, tree, resolution, closure)
	RuleTargetBinding = "target-binding"  // the bundle resolves elsewhere or selects other bytes
	RuleCollision     = "emit-collision"  // two contributions write the same thing
	RuleRecords       = "integration-records"
)

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("materialize")
	if e.Target != "" {
		fmt.Fprintf(&b, " %s", e.Target)
	}
	if e.Dir != "" {
		fmt.Fprintf(&b, " (%s)", e.Dir)
	}
	fmt.Fprintf(&b, ": [%s] %v", e.Rule, e.Err)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes every refusal a rejection (reject.ErrRejected), whatever it
// wraps.
func (e *Error) Is(target error) bool { return target == reject.ErrRejected }

// IsRejection reports whether err refuses the input rather than failing
// on I/O.
func IsRejection(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// unit is one contribution on its way into the tree.
type unit struct {
	target       string
	ref          stack.Ref
	refDigest    identity.Digest
	sourceKind   string
	sourceDigest identity.Digest
	dir          string // the source as given
	snap         *bundle.Snapshot
	inspection   *contribution.Inspection
	namespace    string
	closure      *pyclosure.Closure
}

// Materialize writes the engine tree of m to dest, which must not exist
// and must not overlap any source. On error nothing is left at dest.
func Materialize(m stack.Manifest, resolve Resolver, dest string, opts Options) (*Result, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if opts.Catalog == nil {
		return nil, errors.New("materialize: no catalog")
	}
	if err := m.Validate(); err != nil {
		return nil, &Error{Rule: RuleStack, Err: err}
	}
	stackDigest, err := m.Digest()
	if err != nil {
		return nil, &Error{Rule: RuleStack, Err: err}
	}
	catDigest, catSnapshot := m.Catalog()
	if catDigest != opts.Catalog.Digest() || string(catSnapshot) != string(opts.Catalog.Snapshot()) {
		return nil, &Error{Rule: RuleStack, Err: fmt.Errorf("the stack was built against catalog %s, the catalog given is %s", catDigest, opts.Catalog.Digest())}
	}
	order, err := opts.Catalog.OrderedActiveTargets(m.TargetIDs())
	if err != nil {
		return nil, &Error{Rule: RuleStack, Err: err}
	}
	if err := checkRecords(m, opts.Records); err != nil {
		return nil, err
	}

	dest, err = filepath.Abs(dest)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(dest); err == nil {
		return nil, &Error{Rule: RuleDestination, Dir: dest, Err: fmt.Errorf("destination exists; materialize into a new path")}
	}
	units := make([]*unit, 0, len(order))
	var sources []string
	for _, id := range order {
		ref, _ := m.Entry(id)
		dir, err := resolve(id, ref)
		if err != nil {
			return nil, &Error{Target: id, Rule: RuleStack, Err: err}
		}
		u := &unit{target: id, ref: ref, dir: dir}
		if u.refDigest, err = ref.RefDigest(); err != nil {
			return nil, &Error{Target: id, Rule: RuleStack, Err: err}
		}
		units = append(units, u)
		sources = append(sources, dir)
	}
	if err := checkOverlap(dest, sources); err != nil {
		return nil, err
	}

	// A run killed part-way leaves its work directory (and WriteTree's
	// temporary tree) beside dest; they are unlocked once their process
	// is gone, and removed here. Live runs' directories stay locked.
	if removed, err := atomicwrite.RemoveStale(dest); err != nil {
		return nil, fmt.Errorf("materialize: %w", err)
	} else if len(removed) > 0 {
		progress("removed %d stale work directories beside %s", len(removed), dest)
	}
	// The locked work directory marks this run as live beside dest, so a
	// concurrent run's RemoveStale leaves it alone.
	scratch, err := atomicwrite.MkdirScratch(dest, atomicwrite.KindWork)
	if err != nil {
		return nil, fmt.Errorf("materialize: create work directory beside %s: %w", dest, err)
	}
	defer scratch.Remove()

	if err := prepareAll(units, opts, progress); err != nil {
		return nil, err
	}
	tree, err := assemble(units, stackDigest)
	if err != nil {
		return nil, err
	}
	progress("write %d files to %s", len(tree.files), dest)
	var wopts []atomicwrite.Option
	if opts.AfterFile != nil {
		wopts = append(wopts, atomicwrite.AfterFile(opts.AfterFile))
	}
	written, err := atomicwrite.WriteTree(dest, tree.files, wopts...)
	if err != nil {
		if errors.Is(err, atomicwrite.ErrExists) {
			return nil, &Error{Rule: RuleDestination, Dir: dest, Err: err}
		}
		return nil, fmt.Errorf("materialize: %w", err)
	}
	// WriteTree reopened and re-hashed the published tree; what remains
	// is to check the tree metadata against that inventory.
	res, err := checkTree(dest, written)
	if err != nil {
		os.RemoveAll(dest)
		return nil, fmt.Errorf("materialize: reopen %s: %w", dest, err)
	}
	if res.StackDigest != stackDigest || len(written) != len(res.Files) {
		os.RemoveAll(dest)
		return nil, fmt.Errorf("materialize: reopened tree %s does not match what was written", dest)
	}
	return res, nil
}

// prepareAll reads, checks and inspects the units concurrently, one
// worker per CPU: parsing and hashing dominate and each unit is
// independent. The first failing unit in stack order decides the error,
// so the report does not depend on scheduling.
func prepareAll(units []*unit, opts Options, progress func(string, ...any)) error {
	errs := make([]error, len(units))
	next := make(chan int)
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), len(units))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = units[i].prepare(opts)
			}
		}()
	}
	for i, u := range units {
		progress("stage %s from %s", u.target, u.dir)
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRecords enforces that a release stack comes with exactly one
// approved integration record per entry, each deriving that entry, and
// that an evaluation stack comes with none.
func checkRecords(m stack.Manifest, records []contribution.IntegrationRecord) error {
	if m.Kind() != stack.Release {
		if len(records) > 0 {
			return &Error{Rule: RuleRecords, Err: errors.New("an evaluation stack takes no integration records")}
		}
		return nil
	}
	byTarget := map[string]contribution.IntegrationRecord{}
	for _, rec := range records {
		id := rec.TargetID()
		if _, dup := byTarget[id]; dup {
			return &Error{Target: id, Rule: RuleRecords, Err: errors.New("two integration records for one target")}
		}
		byTarget[id] = rec
	}
	for _, id := range m.TargetIDs() {
		rec, ok := byTarget[id]
		if !ok {
			return &Error{Target: id, Rule: RuleRecords, Err: errors.New("no integration record for this entry")}
		}
		delete(byTarget, id)
		derived, err := contribution.IntegratedRefFromRecord(rec)
		if err != nil {
			return &Error{Target: id, Rule: RuleRecords, Err: err}
		}
		entry, _ := m.Entry(id)
		want, err := entry.RefDigest()
		if err != nil {
			return &Error{Target: id, Rule: RuleRecords, Err: err}
		}
		got, err := derived.RefDigest()
		if err != nil || got != want {
			return &Error{Target: id, Rule: RuleRecords, Err: fmt.Errorf("the record derives integrated ref %s, the stack holds %s", got, want)}
		}
	}
	for id := range byTarget {
		return &Error{Target: id, Rule: RuleRecords, Err: errors.New("integration record for a target the stack does not hold")}
	}
	return nil
}

// checkOverlap refuses a destination inside a source or a source inside
// the destination, comparing real paths.
func checkOverlap(dest string, sources []string) error {
	realDest, err := realPath(dest)
	if err != nil {
		return err
	}
	for _, src := range sources {
		realSrc, err := realPath(src)
		if err != nil {
			return &Error{Dir: src, Rule: RuleSourceEntry, Err: err}
		}
		if within(realDest, realSrc) || within(realSrc, realDest) {
			return &Error{Dir: dest, Rule: RuleDestination, Err: fmt.Errorf("destination overlaps the source %s; materialize outside every contribution source", src)}
		}
	}
	return nil
}

// realPath resolves symlinks in the longest existing prefix of p.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// prepare reads the unit's source once (or takes the snapshot assembly
// read), checks its identity and inspects it.
func (u *unit) prepare(opts Options) error {
	in := opts.Inspections[u.target]
	var contentHash identity.Digest
	if reusable(in) && in.Dir == u.dir {
		// The inspection's content hash was computed over these bytes.
		u.snap, contentHash = in.Bundle.Snapshot, in.ContentHash
	} else {
		in = nil
		s, err := openSource(u.dir)
		if err != nil {
			rule := RuleUnstable
			switch {
			case errors.Is(err, ErrBadSourceEntry), errors.Is(err, os.ErrNotExist):
				rule = RuleSourceEntry
			case errors.Is(err, bundle.ErrInvalid):
				// The intake limits refused the tree while it was read:
				// the refusal inspection's load stage reports.
				return &Error{Target: u.target, Dir: u.dir, Rule: RuleInspection, Err: &contribution.RejectedError{Stage: contribution.StageLoad, Err: err}}
			case !errors.Is(err, ErrUnstableSource):
				return fmt.Errorf("materialize %s: %w", u.target, err)
			}
			return &Error{Target: u.target, Dir: u.dir, Rule: rule, Err: err}
		}
		u.snap = s
	}
	s := u.snap

	switch r := u.ref.(type) {
	case *contribution.ProposalRef:
		u.sourceKind, u.sourceDigest = SourceProposalArtifact, r.ArtifactDigest
		got := contentHash
		if got.IsZero() {
			var err error
			if got, err = s.ContentHash(false); err != nil {
				return &Error{Target: u.target, Dir: u.dir, Rule: RuleIdentity, Err: err}
			}
		}
		if got != r.ArtifactDigest {
			return &Error{Target: u.target, Dir: u.dir, Rule: RuleIdentity,
				Err: fmt.Errorf("bundle content hash is %s, the stack names artifact %s: the bundle changed since the stack was built, or the wrong directory was given", got, r.ArtifactDigest)}
		}
	case *contribution.IntegratedRef:
		u.sourceKind, u.sourceDigest = SourceIntegrated, r.IntegratedSourceTreeDigest
		got, err := contribution.SnapshotSourceTreeDigest(s)
		if err != nil {
			return &Error{Target: u.target, Dir: u.dir, Rule: RuleIdentity, Err: err}
		}
		if got != r.IntegratedSourceTreeDigest {
			return &Error{Target: u.target, Dir: u.dir, Rule: RuleIdentity,
				Err: fmt.Errorf("integrated source tree digest is %s, the stack names %s", got, r.IntegratedSourceTreeDigest)}
		}
	default:
		return &Error{Target: u.target, Rule: RuleStack, Err: fmt.Errorf("unsupported entry type %T", u.ref)}
	}

	if in == nil {
		// The materializer's closure is always the validator's own, so
		// that the files it namespaces are the files the payload selects.
		payload := opts.Payload
		payload.Closure = contribution.PythonClosure
		var err error
		in, err = contribution.InspectSnapshot(s, contribution.Options{Catalog: opts.Catalog, Payload: payload})
		if err != nil {
			var rej *contribution.RejectedError
			if errors.As(err, &rej) {
				return &Error{Target: u.target, Dir: u.dir, Rule: RuleInspection, Err: err}
			}
			return fmt.Errorf("materialize %s: inspect %s: %w", u.target, u.dir, err)
		}
	}
	_, spec := u.ref.RefTarget()
	switch {
	case !in.Registered():
		return &Error{Target: u.target, Dir: u.dir, Rule: RuleTargetBinding, Err: fmt.Errorf("the bundle resolves to no registered target (%s)", in.Target.Unregistered)}
	case in.Target.TargetID != u.target:
		return &Error{Target: u.target, Dir: u.dir, Rule: RuleTargetBinding, Err: fmt.Errorf("the bundle resolves to target %s, but the stack places it at %s", in.Target.TargetID, u.target)}
	case in.Target.TargetSpecDigest != spec:
		return &Error{Target: u.target, Dir: u.dir, Rule: RuleTargetBinding, Err: fmt.Errorf("the catalog's target-spec digest is %s, the stack entry names %s", in.Target.TargetSpecDigest, spec)}
	}
	wantPayload := selectedPayloadOf(u.ref)
	if in.SelectedPayloadDigest != wantPayload {
		return &Error{Target: u.target, Dir: u.dir, Rule: RuleTargetBinding, Err: fmt.Errorf("the bundle selects payload %s, the stack entry names %s", in.SelectedPayloadDigest, wantPayload)}
	}
	u.inspection = in
	u.closure = in.SelectedPayload.Closure
	u.namespace = Namespace(in.SelectedDeltaDigest)
	return nil
}

func selectedPayloadOf(r stack.Ref) identity.Digest {
	switch r := r.(type) {
	case *contribution.ProposalRef:
		return r.SelectedPayloadDigest
	case *contribution.IntegratedRef:
		return r.SelectedPayloadDigest
	}
	return identity.Digest{}
}

// plannedTree is everything the writer publishes.
type plannedTree struct {
	files []atomicwrite.File
}

// assemble lays out every unit's files, the runtime manifest and rebuild
// plan, and the tree metadata.
func assemble(units []*unit, stackDigest identity.Digest) (*plannedTree, error) {
	var (
		files   []atomicwrite.File
		ops     []runtimeOp
		patches []runtimePatch
		steps   []rebuildStep
		rows    []ContributionRow
		abi     = bundle.ABIVersion
	)
	patched := map[string]string{} // "<dependency>/<file>" -> target writing it
	for _, u := range units {
		e, err := u.emit()
		if err != nil {
			return nil, err
		}
		files = append(files, e.files...)
		ops = append(ops, e.ops...)
		patches = append(patches, e.patches...)
		steps = append(steps, e.steps...)
		for _, w := range e.patchWrites {
			if prev, ok := patched[w]; ok {
				return nil, &Error{Target: u.target, Rule: RuleCollision, Err: fmt.Errorf("dependency patch writes %s, which %s also patches", w, prev)}
			}
			patched[w] = u.target
		}
		rows = append(rows, ContributionRow{
			ContributionRefDigest: u.refDigest, Namespace: u.namespace,
			SelectedDeltaDigest: u.inspection.SelectedDeltaDigest, SelectedPayloadDigest: u.inspection.SelectedPayloadDigest,
			SourceDigest: u.sourceDigest, SourceKind: u.sourceKind, TargetID: u.target, TargetSpecDigest: u.inspection.Target.TargetSpecDigest,
		})
	}
	runtimePath := ""
	if len(units) > 0 {
		b, err := runtimeManifest(abi, ops, patches)
		if err != nil {
			return nil, err
		}
		files = append(files, atomicwrite.File{Path: RuntimeManifestName, Data: b})
		runtimePath = RuntimeManifestName
		union, err := unionRebuild(steps)
		if err != nil {
			return nil, &Error{Rule: RuleCollision, Err: err}
		}
		if len(union) > 0 {
			b, err := indentedJSON(map[string]any{"steps": union})
			if err != nil {
				return nil, err
			}
			files = append(files, atomicwrite.File{Path: RuntimeRebuildName, Data: b})
		}
	}
	seen := map[string]string{}
	for _, f := range files {
		if prev, ok := seen[f.Path]; ok {
			return nil, &Error{Rule: RuleCollision, Err: fmt.Errorf("two files would be written at %s (%s)", f.Path, prev)}
		}
		seen[f.Path] = f.Path
	}
	meta, err := treeMetadata(rows, files, runtimePath, stackDigest)
	if err != nil {
		return nil, err
	}
	files = append(files, atomicwrite.File{Path: TreeMetadataName, Data: meta})
	return &plannedTree{files: files}, nil
}

// emitted is one unit's share of the tree.
type emitted struct {
	files       []atomicwrite.File
	ops         []runtimeOp
	patches     []runtimePatch
	steps       []rebuildStep
	patchWrites []string
}

// emit lays out one contribution: namespaced Python, renamed CUDA units,
// headers under their own names, dependency patches, metadata and entry
// shims, and its runtime op rows.
func (u *unit) emit() (*emitted, error) {
	in := u.inspection
	p := in.SelectedPayload
	ns := u.namespace
	out := &emitted{}
	// The snapshot holds every selected file (the payload hashed its
	// bytes), so the tree is written from memory, not from the source.
	held := func(rel string) ([]byte, error) {
		data, ok := u.snap.ReadFile(rel)
		if !ok {
			return nil, &Error{Target: u.target, Dir: u.dir, Rule: RuleUnstable, Err: fmt.Errorf("selected file %s is not in the bundle snapshot", rel)}
		}
		return data, nil
	}

	m := in.Bundle.Manifest
	python, err := u.namespacedPython()
	if err != nil {
		return nil, err
	}
	out.files = append(out.files, python...)
	cudaPath := map[string]string{}
	for _, f := range p.Files {
		if f.Role != contribution.RoleCUDA {
			continue
		}
		dst := "cuda/" + ns + "/" + f.Path
		if strings.HasSuffix(f.Path, ".cu") {
			dst = path.Join("cuda", ns, path.Dir(f.Path), emittedName(ns, f.Path)+".cu")
		}
		cudaPath[f.Path] = dst
		data, err := held(f.Path)
		if err != nil {
			return nil, err
		}
		out.files = append(out.files, atomicwrite.File{Path: dst, Data: data, SHA256: f.SHA256})
	}

	for _, dp := range m.DepPatches {
		dst := "patches/" + emittedName(ns, dp.Path) + path.Ext(dp.Path)
		data, err := held(dp.Path)
		if err != nil {
			return nil, err
		}
		sum, _ := u.snap.SHA256(dp.Path)
		out.files = append(out.files, atomicwrite.File{Path: dst, Data: data, SHA256: sum})
		out.patches = append(out.patches, runtimePatch{Target: dp.Target, Path: dst})
		if dp.Diff != nil {
			for _, pf := range dp.Diff.Files {
				out.patchWrites = append(out.patchWrites, dp.Target+"/"+pf.Path)
			}
		}
	}

	metaPath := map[string]string{}
	for rel, b := range p.EmittedMetadata {
		dst := "metadata/" + emittedName(ns, rel) + ".json"
		metaPath[rel] = dst
		out.files = append(out.files, atomicwrite.File{Path: dst, Data: b})
	}

	type shimNames struct{ required, optional map[string]bool }
	shims := map[string]*shimNames{}
	rows := make([]*bundle.Op, len(m.Ops))
	for i := range m.Ops {
		rows[i] = &m.Ops[i]
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Slot != rows[j].Slot {
			return rows[i].Slot < rows[j].Slot
		}
		return rows[i].Variant < rows[j].Variant
	})
	for _, op := range rows {
		s := shims[op.Source]
		if s == nil {
			s = &shimNames{map[string]bool{}, map[string]bool{}}
			shims[op.Source] = s
		}
		if op.IsOverride() {
			s.required[op.Entry+"_ref"] = true
			s.optional[op.Entry] = true
		} else {
			s.required[op.Entry] = true
		}
		for _, n := range []string{op.Prepare, op.Setup} {
			if n != "" {
				s.required[n] = true
			}
		}
		row := runtimeOp{
			Slot: op.Slot, Variant: op.Variant, Source: "entries/" + emittedName(ns, op.Source) + ".py", Entry: op.Entry,
			Prepare: op.Prepare, Setup: op.Setup, BaseKernel: op.BaseKernel, OverridePoint: op.OverridePoint,
		}
		if op.Metadata != "" {
			row.Metadata = metaPath[op.Metadata]
		}
		var err error
		if row.Dtypes, err = canonicalList("dtype", op.Dtypes); err != nil {
			return nil, &Error{Target: u.target, Rule: RuleInspection, Err: err}
		}
		if row.Architectures, err = canonicalList("architecture", op.Architectures); err != nil {
			return nil, &Error{Target: u.target, Rule: RuleInspection, Err: err}
		}
		for _, c := range op.CUDASources {
			row.CUDASources = append(row.CUDASources, cudaPath[c])
		}
		sort.Strings(row.CUDASources)
		out.ops = append(out.ops, row)
	}
	for src, names := range shims {
		module, err := moduleName(ns, src)
		if err != nil {
			return nil, &Error{Target: u.target, Rule: RuleInspection, Err: err}
		}
		for n := range names.required {
			delete(names.optional, n)
		}
		out.files = append(out.files, atomicwrite.File{
			Path: "entries/" + emittedName(ns, src) + ".py",
			Data: entryShim(module, sortedSet(names.required), sortedSet(names.optional)),
		})
	}
	if in.Bundle.Rebuild != nil {
		for _, s := range in.Bundle.Rebuild.Steps {
			out.steps = append(out.steps, rebuildStep{Type: "repo_python", Path: bundle.PatcherDir + "/" + s.Name})
		}
	}
	return out, nil
}

// namespacedPython emits the unit's Python import closure under its
// namespace, every bundle-local import rewritten at the byte spans the
// closure recorded, plus an empty package __init__.py at the namespace
// root when the bundle has none. The closure was computed over the
// snapshot during inspection and must be exactly the selected payload's
// Python files, byte for byte.
func (u *unit) namespacedPython() ([]atomicwrite.File, error) {
	p := u.inspection.SelectedPayload
	want := map[string]string{}
	for _, f := range p.Files {
		if f.Role == contribution.RolePython {
			want[f.Path] = f.SHA256
		}
	}
	c := u.closure
	if c == nil {
		return nil, fmt.Errorf("materialize %s: no Python closure was computed", u.target)
	}
	var files []atomicwrite.File
	hasInit := false
	for _, f := range c.Files {
		sum, ok := want[f.Path]
		// The closure read the snapshot's bytes (or a copy of them);
		// comparing with them (whose digest the payload holds) costs no
		// hash, and nothing when they are the same slice.
		held, inSnap := u.snap.ReadFile(f.Path)
		heldSum, _ := u.snap.SHA256(f.Path)
		if !ok || !inSnap || heldSum != sum || !bytes.Equal(f.Src, held) {
			return nil, &Error{Target: u.target, Dir: u.dir, Rule: RuleUnstable, Err: fmt.Errorf("Python closure file %s differs from the selected payload", f.Path)}
		}
		delete(want, f.Path)
		// A file without bundle-local imports has nothing to rewrite: its
		// bytes are emitted as selected, under the digest already known
		// (the writer checks it against what it writes).
		out := atomicwrite.File{Path: u.namespace + "/" + f.Path, Data: f.Src, SHA256: sum}
		if len(f.Imports) > 0 {
			rewritten, err := f.Rewrite(u.namespace)
			if err != nil {
				return nil, &Error{Target: u.target, Dir: u.dir, Rule: RuleInspection, Err: err}
			}
			out = atomicwrite.File{Path: out.Path, Data: rewritten}
		}
		files = append(files, out)
		hasInit = hasInit || f.Path == "__init__.py"
	}
	for rel := range want {
		return nil, &Error{Target: u.target, Dir: u.dir, Rule: RuleUnstable, Err: fmt.Errorf("selected payload file %s is not in the Python closure", rel)}
	}
	if !hasInit {
		files = append(files, atomicwrite.File{Path: u.namespace + "/__init__.py", Data: []byte{}})
	}
	return files, nil
}

// moduleName is the dotted module of a bundle Python file inside ns.
func moduleName(ns, rel string) (string, error) {
	if !strings.HasSuffix(rel, ".py") {
		return "", fmt.Errorf("op source %s is not a .py file", rel)
	}
	parts := strings.Split(strings.TrimSuffix(rel, ".py"), "/")
	if parts[len(parts)-1] == "__init__" {
		parts = parts[:len(parts)-1]
	}
	for _, p := range parts {
		if !bundle.IsPythonIdentifier(p) {
			return "", fmt.Errorf("op source %s: %q is not a Python identifier, so the file cannot be imported as a module", rel, p)
		}
	}
	return strings.Join(append([]string{ns}, parts...), "."), nil
}

func canonicalList(field string, values []string) ([]string, error) {
	set := map[string]bool{}
	for _, v := range values {
		c, err := bundle.CanonicalText(field, v)
		if err != nil {
			return nil, err
		}
		set[c] = true
	}
	return sortedSet(set), nil
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
