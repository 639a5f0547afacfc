package enginecli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/stack"
)

// StackDeps are the validator components stack commands run with: those
// of bundle inspection.
type StackDeps struct {
	Bundle BundleDeps
}

// DefaultStackDeps are the validator's own components.
func DefaultStackDeps() StackDeps { return StackDeps{Bundle: DefaultBundleDeps()} }

// FaultPauseEnv names the fault-injection hook of stack materialize: set
// to N, the command stops after writing the N-th file of the unpublished
// tree, says so on stderr, and waits to be killed. Tests use it to prove
// that a writer killed mid-write leaves nothing at the destination.
const FaultPauseEnv = "CACHEON_FAULT_PAUSE_AFTER_FILES"

// NewStackCommand is the stack group with materialize and plan, which
// cacheon_stack and cacheon_candidate run; the full command line adds
// digest, verify and export.
func NewStackCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stack",
		Short: "Digest, plan and materialize stacks",
		Long: `A stack says which contribution is active at each target of the catalog,
on which engine substrate and, for evaluation stacks, in which arena. It
is an HCL file (stacks/*.hcl):

  evaluation  the market's incumbent, the baseline every candidate is
              measured against; it may hold unreviewed proposals;
  release     reviewed (integrated) source only: what a release ships;
  reference   the pristine stack with no contribution at all.

A stack's identity is the digest of its canonical manifest, never of the
HCL bytes. Contribution sources are labels of this repository
("//kernels/contributions:silu_and_mul_triton", the bundle directory
kernels/contributions/silu_and_mul_triton) or paths relative to the stack
file. Labels resolve against the repository root (the directory with
MODULE.bazel or WORKSPACE above the stack file, or --workspace).

A build with explicit inputs (a Bazel action) passes --catalog FILE and one
--contribution LABEL=DIR per label instead; then nothing else is looked up
and a label without a directory, or a directory for a label the stack does
not name, is an error that says how to fix it.

docs/concepts/stacks.md explains stacks; docs/validator-guide/stacks.md
walks through planning and materializing one.`,
	}
	deps := DefaultStackDeps()
	cmd.AddCommand(
		newStackMaterializeCommand(s, deps),
		newStackPlanCommand(s, deps),
	)
	return cmd
}

// StackInputOptions locate a stack's sources.
type StackInputOptions struct {
	workspace     string
	catalog       string
	contributions []string
	allowUnused   bool
	patchers      string
}

func (o *StackInputOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.workspace, "workspace", "", "repository root that //labels resolve against (default: found above the stack file)")
	f.StringVar(&o.catalog, "catalog", "", "catalog HCL file to use instead of the one the stack names (required with --contribution)")
	f.StringArrayVar(&o.contributions, "contribution", nil, "LABEL=DIR: the directory of a contribution label (repeat for every label; explicit-input mode)")
	f.StringVar(&o.patchers, "patchers", "", "directory of reviewed rebuild patcher files, over the built-in build_cuda_ext.py (for bundles with a rebuild.json)")
	f.BoolVar(&o.allowUnused, "allow-unused-contributions", false, "accept --contribution directories the stack does not name (for generated stacks, such as a planned candidate given the incumbent's full set)")
}

func (o *StackInputOptions) sources() (stack.Sources, error) {
	src := stack.Sources{Workspace: o.workspace, Catalog: o.catalog, AllowUnused: o.allowUnused}
	if len(o.contributions) > 0 {
		src.Contributions = map[stack.Label]string{}
		for _, c := range o.contributions {
			l, dir, err := stack.ParseContributionFlag(c)
			if err != nil {
				return src, err
			}
			if prev, dup := src.Contributions[l]; dup {
				return src, fmt.Errorf("--contribution %s given twice (%s and %s)", l, prev, dir)
			}
			src.Contributions[l] = dir
		}
	}
	return src, nil
}

// LoadedStack is a stack file assembled against its catalog.
type LoadedStack struct {
	Assembled *stack.Assembled
	Catalog   *catalog.Catalog
	Payload   contribution.PayloadOptions
	sources   stack.Sources
}

// LoadStack parses, resolves and assembles the stack file at path. HCL
// diagnostics are rendered to stderr with snippets; problems with the
// stack's contents come back as rejections.
func LoadStack(s Streams, path string, o StackInputOptions, deps StackDeps, jsonOut bool) (*LoadedStack, error) {
	f, parser, diags := stack.Load(path)
	if diags.HasErrors() {
		if _, err := os.Stat(path); err != nil {
			return nil, err
		}
		return nil, reportDiagnostics(s, parser, diags, jsonOut)
	}
	src, err := o.sources()
	if err != nil {
		return nil, err
	}
	if err := src.Check(f); err != nil {
		return nil, reject.Wrap(err)
	}
	catPath, err := src.CatalogPath(f)
	if err != nil {
		return nil, reject.Wrap(err)
	}
	cat, err := BundleCatalog(catPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.CatalogRange, err)
	}
	digests, err := PatcherDigests(o.patchers)
	if err != nil {
		return nil, err
	}
	payload := contribution.PayloadOptions{Closure: deps.Bundle.Closure, CUDACheck: deps.Bundle.CUDACheck, PatcherDigests: digests}
	a, err := stack.Assemble(f, src, cat, payload)
	if err != nil {
		return nil, err
	}
	return &LoadedStack{Assembled: a, Catalog: cat, Payload: payload, sources: src}, nil
}

// reportDiagnostics renders a stack file's HCL diagnostics to stderr
// (with --json, the refusal document gives them instead) and returns the
// rejection.
func reportDiagnostics(s Streams, parser *hclparse.Parser, diags hcl.Diagnostics, jsonOut bool) error {
	if !jsonOut {
		files := map[string][]byte{}
		for name, f := range parser.Files() {
			files[name] = f.Bytes
		}
		if err := hclload.WriteText(s.Err, files, diags); err != nil {
			return err
		}
	}
	return &diagnosedError{msg: fmt.Sprintf("stack file has %d error(s)", len(diags.Errs())), diags: diags}
}

// EntryJSON is one stack entry in --json output.
type EntryJSON struct {
	TargetID              string          `json:"target_id"`
	Kind                  string          `json:"kind"`
	RefDigest             identity.Digest `json:"ref_digest"`
	TargetSpecDigest      identity.Digest `json:"target_spec_digest"`
	SourceDigest          identity.Digest `json:"source_digest"`
	SelectedPayloadDigest identity.Digest `json:"selected_payload_digest"`
	SelectedDeltaDigest   identity.Digest `json:"selected_delta_digest"`
	Source                string          `json:"source"`
}

func EntriesJSON(l *LoadedStack) ([]EntryJSON, error) {
	out := []EntryJSON{}
	m := l.Assembled.Manifest
	for _, id := range m.TargetIDs() {
		ref, _ := m.Entry(id)
		d, err := ref.RefDigest()
		if err != nil {
			return nil, err
		}
		in := l.Assembled.Inspections[id]
		c, _ := l.Assembled.File.Entry(id)
		e := EntryJSON{TargetID: id, Kind: ref.RefKind(), RefDigest: d, TargetSpecDigest: in.Target.TargetSpecDigest,
			SelectedPayloadDigest: in.SelectedPayloadDigest, SelectedDeltaDigest: in.SelectedDeltaDigest, Source: c.Source}
		switch r := ref.(type) {
		case *contribution.ProposalRef:
			e.SourceDigest = r.ArtifactDigest
		case *contribution.IntegratedRef:
			e.SourceDigest = r.IntegratedSourceTreeDigest
		}
		out = append(out, e)
	}
	return out, nil
}

func WriteManifest(path string, m stack.Manifest) error {
	b, err := m.CanonicalJSON()
	if err != nil {
		return err
	}
	return atomicwrite.WriteFile(path, append(b, '\n'), 0o644)
}

// MaterializeOptions returns the library options of a stack command.
func MaterializeOptions(s Streams, l *LoadedStack, deps StackDeps, quiet bool) (materialize.Options, error) {
	// The snapshots and closures assembly took are reused: the tree is
	// written from the bytes the stack's identities were computed over.
	opts := materialize.Options{Catalog: l.Catalog, Payload: l.Payload, Inspections: l.Assembled.Inspections}
	if !quiet {
		opts.Progress = func(format string, args ...any) { fmt.Fprintf(s.Err, "cacheon: "+format+"\n", args...) }
	}
	if v := os.Getenv(FaultPauseEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return opts, fmt.Errorf("%s=%q: want a positive file count", FaultPauseEnv, v)
		}
		opts.AfterFile = func(i int, path string) {
			if i == n {
				fmt.Fprintf(s.Err, "cacheon: fault injection: paused after %d files (%s)\n", i, path)
				select {} // wait to be killed
			}
		}
	}
	return opts, nil
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

type TreeJSON struct {
	FormatVersion int                           `json:"format_version"`
	Out           string                        `json:"out"`
	Kind          string                        `json:"kind"`
	StackDigest   identity.Digest               `json:"stack_digest"`
	TreeDigest    identity.Digest               `json:"tree_digest"`
	FileCount     int                           `json:"file_count"`
	Bytes         int64                         `json:"bytes"`
	Contributions []materialize.ContributionRow `json:"contributions"`
	Files         []materialize.FileRow         `json:"files"`
}

func TreeDoc(out, kind string, r *materialize.Result) TreeJSON {
	doc := TreeJSON{FormatVersion: 1, Out: out, Kind: kind, StackDigest: r.StackDigest, TreeDigest: r.TreeDigest,
		FileCount: len(r.Files), Contributions: r.Contributions, Files: r.Files}
	if doc.Contributions == nil {
		doc.Contributions = []materialize.ContributionRow{}
	}
	for _, f := range r.Files {
		doc.Bytes += f.Size
	}
	return doc
}

// loadRecords reads integration review record files.
func loadRecords(paths []string) ([]contribution.IntegrationRecord, error) {
	var out []contribution.IntegrationRecord
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		r, err := review.Parse(b)
		if err != nil {
			return nil, reject.Errorf("integration record %s: %w", p, err)
		}
		out = append(out, r.IntegrationRecord())
	}
	return out, nil
}
