package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
	"github.com/cacheon/engine/tools/atomicwrite"
	"github.com/cacheon/engine/tools/hclload"
	"github.com/cacheon/engine/tools/reject"
)

// stackDeps are the validator components stack commands run with: those
// of bundle inspection.
type stackDeps struct {
	bundle bundleDeps
}

func defaultStackDeps() stackDeps { return stackDeps{bundle: defaultBundleDeps()} }

// FaultPauseEnv names the fault-injection hook of stack materialize: set
// to N, the command stops after writing the N-th file of the unpublished
// tree, says so on stderr, and waits to be killed. Tests use it to prove
// that a writer killed mid-write leaves nothing at the destination.
const FaultPauseEnv = "CACHEON_FAULT_PAUSE_AFTER_FILES"

func newStackCommand(s Streams) *cobra.Command {
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
	deps := defaultStackDeps()
	cmd.AddCommand(
		newStackDigestCommand(s, deps),
		newStackMaterializeCommand(s, deps),
		newStackPlanCommand(s, deps),
		newStackVerifyCommand(s),
	)
	return cmd
}

// stackInputOptions locate a stack's sources.
type stackInputOptions struct {
	workspace     string
	catalog       string
	contributions []string
	allowUnused   bool
	patchers      string
}

func (o *stackInputOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.workspace, "workspace", "", "repository root that //labels resolve against (default: found above the stack file)")
	f.StringVar(&o.catalog, "catalog", "", "catalog HCL file to use instead of the one the stack names (required with --contribution)")
	f.StringArrayVar(&o.contributions, "contribution", nil, "LABEL=DIR: the directory of a contribution label (repeat for every label; explicit-input mode)")
	f.StringVar(&o.patchers, "patchers", "", "directory holding the reviewed rebuild patchers (for bundles with a rebuild.json)")
	f.BoolVar(&o.allowUnused, "allow-unused-contributions", false, "accept --contribution directories the stack does not name (for generated stacks, such as a planned candidate given the incumbent's full set)")
}

func (o *stackInputOptions) sources() (stack.Sources, error) {
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

// loadedStack is a stack file assembled against its catalog.
type loadedStack struct {
	assembled *stack.Assembled
	catalog   *catalog.Catalog
	payload   contribution.PayloadOptions
	sources   stack.Sources
}

// loadStack parses, resolves and assembles the stack file at path. HCL
// diagnostics are rendered to stderr with snippets; problems with the
// stack's contents come back as rejections.
func loadStack(s Streams, path string, o stackInputOptions, deps stackDeps, jsonOut bool) (*loadedStack, error) {
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
	cat, err := bundleCatalog(catPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.CatalogRange, err)
	}
	digests, err := patcherDigests(o.patchers)
	if err != nil {
		return nil, err
	}
	payload := contribution.PayloadOptions{Closure: deps.bundle.closure, CUDACheck: deps.bundle.cudaCheck, PatcherDigests: digests}
	a, err := stack.Assemble(f, src, cat, payload)
	if err != nil {
		return nil, err
	}
	return &loadedStack{assembled: a, catalog: cat, payload: payload, sources: src}, nil
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

// entryJSON is one stack entry in --json output.
type entryJSON struct {
	TargetID              string `json:"target_id"`
	Kind                  string `json:"kind"`
	RefDigest             string `json:"ref_digest"`
	TargetSpecDigest      string `json:"target_spec_digest"`
	SourceDigest          string `json:"source_digest"`
	SelectedPayloadDigest string `json:"selected_payload_digest"`
	SelectedDeltaDigest   string `json:"selected_delta_digest"`
	Source                string `json:"source"`
}

func entriesJSON(l *loadedStack) ([]entryJSON, error) {
	out := []entryJSON{}
	m := l.assembled.Manifest
	for _, id := range m.TargetIDs() {
		ref, _ := m.Entry(id)
		d, err := ref.RefDigest()
		if err != nil {
			return nil, err
		}
		in := l.assembled.Inspections[id]
		c, _ := l.assembled.File.Entry(id)
		e := entryJSON{TargetID: id, Kind: ref.RefKind(), RefDigest: d, TargetSpecDigest: in.Target.TargetSpecDigest,
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

func newStackDigestCommand(s Streams, deps stackDeps) *cobra.Command {
	var o stackInputOptions
	var jsonOut bool
	var manifestOut string
	cmd := &cobra.Command{
		Use:   "digest STACK",
		Short: "Print the identity of a stack",
		Long: `Digest assembles STACK (an HCL stack file): it locates every contribution
source, inspects it against the catalog the stack names (content hash,
target, selected payload), checks the active targets against the
catalog's rules, and prints the digest of the stack's canonical manifest:
H(cacheon.stack.evaluation, manifest) for evaluation and reference stacks,
H(cacheon.stack.release, manifest) for release stacks.

--manifest-out writes the canonical manifest JSON (the exact bytes the
digest covers, without the domain envelope) atomically.`,
		Example: `  cacheon stack digest stacks/incumbent.hcl
  cacheon stack digest --json stacks/release.hcl
  cacheon stack digest --catalog catalog/targets.hcl \
      --contribution //kernels/contributions:silu_and_mul_triton=kernels/contributions/silu_and_mul_triton \
      --contribution //kernels/contributions:rmsnorm_triton=kernels/contributions/rmsnorm_triton \
      stacks/incumbent.hcl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadStack(s, args[0], o, deps, jsonOut)
			if err != nil {
				return err
			}
			m := l.assembled.Manifest
			d, err := m.Digest()
			if err != nil {
				return err
			}
			if manifestOut != "" {
				if err := writeManifest(manifestOut, m); err != nil {
					return err
				}
			}
			if !jsonOut {
				fmt.Fprintln(s.Out, d)
				return nil
			}
			entries, err := entriesJSON(l)
			if err != nil {
				return err
			}
			catDigest, _ := m.Catalog()
			return writeJSON(s.Out, map[string]any{
				"format_version": 1, "stack": args[0], "name": l.assembled.File.Name, "kind": string(l.assembled.File.Kind),
				"stack_digest": d, "catalog_digest": catDigest, "entries": entries,
			})
		},
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON document")
	cmd.Flags().StringVar(&manifestOut, "manifest-out", "", "also write the canonical stack manifest JSON to FILE")
	return cmd
}

func writeManifest(path string, m stack.Manifest) error {
	b, err := m.CanonicalJSON()
	if err != nil {
		return err
	}
	return atomicwrite.WriteFile(path, append(b, '\n'), 0o644)
}

// materializeOptions returns the library options of a stack command.
func materializeOptions(s Streams, l *loadedStack, deps stackDeps, quiet bool) (materialize.Options, error) {
	opts := materialize.Options{Catalog: l.catalog, Payload: l.payload}
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

type treeJSON struct {
	FormatVersion int                           `json:"format_version"`
	Out           string                        `json:"out"`
	Kind          string                        `json:"kind"`
	StackDigest   string                        `json:"stack_digest"`
	TreeDigest    string                        `json:"tree_digest"`
	FileCount     int                           `json:"file_count"`
	Bytes         int64                         `json:"bytes"`
	Contributions []materialize.ContributionRow `json:"contributions"`
	Files         []materialize.FileRow         `json:"files"`
}

func treeDoc(out, kind string, r *materialize.Result) treeJSON {
	doc := treeJSON{FormatVersion: 1, Out: out, Kind: kind, StackDigest: r.StackDigest, TreeDigest: r.TreeDigest,
		FileCount: len(r.Files), Contributions: r.Contributions, Files: r.Files}
	if doc.Contributions == nil {
		doc.Contributions = []materialize.ContributionRow{}
	}
	for _, f := range r.Files {
		doc.Bytes += f.Size
	}
	return doc
}

func newStackMaterializeCommand(s Streams, deps stackDeps) *cobra.Command {
	var o stackInputOptions
	var out, manifestOut string
	var records []string
	var jsonOut, quiet bool
	cmd := &cobra.Command{
		Use:   "materialize STACK --out DIR",
		Short: "Write the deterministic engine tree of a stack",
		Long: `Materialize assembles STACK and writes its engine tree to DIR: every
active contribution's Python import closure, namespaced under
cacheon_c_<selected delta digest> with bundle-local imports rewritten,
its CUDA sources and headers, dependency patches, canonical metadata and
entry shims, the runtime manifest.toml and rebuild.json the substrate
loads, and metadata/cacheon_engine_tree.json listing everything. No
contribution code is imported or run.

Each source is copied to a private staging area with two reads that must
agree, checked against the identity the stack names, and inspected again.
The tree is written beside DIR, synced, reopened and verified, and renamed
into place: files 0444, directories 0755, every time at the Unix epoch.
The same stack gives the same bytes and tree digest whatever the working
directory, umask, time zone or locale. DIR must not exist and must not
overlap a source; on any error nothing is left at DIR.

--manifest-out also writes the canonical stack manifest JSON.

A release stack is materialized with its integration review records, one
--integration-record FILE per entry: each must be approved and derive
exactly the integrated reference the stack holds.

Exit codes: 0 written; 2 the stack, a source or the destination was
refused (the message names the file, the target and the rule); 1 a usage
or I/O error.`,
		Example: `  cacheon stack materialize stacks/incumbent.hcl --out /tmp/engine
  cacheon stack materialize --json stacks/reference.hcl --out /tmp/pristine
  cacheon stack materialize stacks/incumbent.hcl --out out/engine --manifest-out out/stack.json \
      --catalog catalog/targets.hcl \
      --contribution //kernels/contributions:silu_and_mul_triton=kernels/contributions/silu_and_mul_triton \
      --contribution //kernels/contributions:rmsnorm_triton=kernels/contributions/rmsnorm_triton`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("--out DIR is required")
			}
			l, err := loadStack(s, args[0], o, deps, jsonOut)
			if err != nil {
				return err
			}
			opts, err := materializeOptions(s, l, deps, quiet || jsonOut)
			if err != nil {
				return err
			}
			if opts.Records, err = loadRecords(records); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Clean(out)), 0o755); err != nil {
				return err
			}
			res, err := materialize.Materialize(l.assembled.Manifest, resolverOf(l.assembled.Dirs), out, opts)
			if err != nil {
				return err
			}
			if manifestOut != "" {
				if err := writeManifest(manifestOut, l.assembled.Manifest); err != nil {
					os.RemoveAll(out)
					return err
				}
			}
			if jsonOut {
				return writeJSON(s.Out, treeDoc(out, string(l.assembled.File.Kind), res))
			}
			fmt.Fprintf(s.Out, "stack %s\ntree  %s\n%d files written to %s\n", res.StackDigest, res.TreeDigest, len(res.Files), out)
			return nil
		},
	}
	o.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "directory to create (must not exist)")
	f.StringVar(&manifestOut, "manifest-out", "", "also write the canonical stack manifest JSON to FILE")
	f.StringArrayVar(&records, "integration-record", nil, "integration review record FILE of a release entry (repeat per entry)")
	f.BoolVar(&jsonOut, "json", false, "print one JSON document")
	f.BoolVar(&quiet, "quiet", false, "do not report progress on stderr")
	return cmd
}

func newStackVerifyCommand(s Streams) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "verify DIR",
		Short: "Check a materialized engine tree and print its digest",
		Long: `Verify reopens the engine tree at DIR as a consumer does before loading
it: every file 0444 and directory 0755 with times at the epoch, no links
or special files, no empty directory, a tree metadata file in canonical
form whose contribution rows recompute (namespace = selected delta) and
whose file inventory equals the tree, and a runtime manifest exactly when
the stack has contributions. It prints the stack digest the tree was
built from and the tree digest.

Exit codes: 0 the tree is well-formed; 2 it is not; 1 an I/O error.`,
		Example: `  cacheon stack verify /tmp/engine
  cacheon stack verify --json bazel-bin/stacks/incumbent`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := os.Stat(args[0]); err != nil {
				return err
			}
			res, err := materialize.Verify(args[0])
			if err != nil {
				return reject.Errorf("%s: %w", args[0], err)
			}
			if jsonOut {
				return writeJSON(s.Out, treeDoc(args[0], "", res))
			}
			fmt.Fprintf(s.Out, "stack %s\ntree  %s\n", res.StackDigest, res.TreeDigest)
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON document")
	return cmd
}

func newStackPlanCommand(s Streams, deps stackDeps) *cobra.Command {
	var o stackInputOptions
	var incumbentPath, candidateDir, candidateLabel, attribution, out string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "plan --incumbent STACK --candidate BUNDLE",
		Short: "Plan a marginal candidate: the incumbent with one target transition",
		Long: `Plan builds the candidate stack a qualification measures: the incumbent
evaluation stack with exactly one target transition, the candidate
bundle's. The validator supplies every other entry.

  - If the bundle's target is active, the bundle replaces that entry. It
    must change what the target executes (its selected delta).
  - Otherwise it joins the stack and displaces the active targets in its
    displacement closure (an atomic target displaces its member
    singletons). A bundle may never break up an active target that
    displaces it: a member proposal cannot decompose an atomic incumbent.
  - The candidate's active targets must satisfy the catalog's rules, and
    the bundle must resolve against the current catalog.

Both stacks are then materialized into temporary directories and the
marginal arm plan binds the three arms B (incumbent), C (candidate) and
B' (incumbent again) to their stack and tree digests; C's tree must differ
from B's. The plan's digest is H(cacheon.stack.marginal-arm-plan, plan).

--attribution is the digest of the candidate's intake attribution; without
it a local attribution derived from the bundle's content hash is used,
which credits no one. --out writes the candidate stack as an HCL file,
only when planning succeeds.

Exit codes: 0 planned; 2 the candidate was rejected (the reason names the
rule); 1 a usage or I/O error.`,
		Example: `  cacheon stack plan --incumbent stacks/incumbent.hcl --candidate ./my-silu-bundle
  cacheon stack plan --json --incumbent stacks/incumbent.hcl \
      --candidate kernels/contributions/moe_epilogue_atomic_torch --out /tmp/candidate.hcl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if incumbentPath == "" || candidateDir == "" {
				return errors.New("--incumbent STACK and --candidate BUNDLE are required")
			}
			if candidateLabel != "" {
				if err := checkDirLabel(candidateLabel); err != nil {
					return fmt.Errorf("--candidate-label: %w", err)
				}
			}
			return runStackPlan(cmd.Context(), s, deps, o, incumbentPath, candidateDir, candidateLabel, attribution, out, jsonOut)
		},
	}
	o.addFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&incumbentPath, "incumbent", "", "the incumbent evaluation stack file")
	f.StringVar(&candidateDir, "candidate", "", "the candidate bundle directory")
	f.StringVar(&candidateLabel, "candidate-label", "", "write the candidate's source in --out as this label (e.g. //kernels/contributions:my_silu) instead of a path; Bazel's cacheon_candidate passes it")
	f.StringVar(&attribution, "attribution", "", "attribution digest of the candidate (64 hex)")
	f.StringVar(&out, "out", "", "write the candidate stack HCL to FILE")
	f.BoolVar(&jsonOut, "json", false, "print one JSON document")
	return cmd
}

type planJSON struct {
	FormatVersion int                   `json:"format_version"`
	PlanDigest    string                `json:"plan_digest"`
	Plan          *plan.MarginalArmPlan `json:"plan"`
	Attribution   string                `json:"attribution"`
	LocalAttrib   bool                  `json:"local_attribution"`
	CandidateOut  *string               `json:"candidate_stack_file"`
	Rejected      *planRejectionJSON    `json:"rejected"`
}

type planRejectionJSON struct {
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// runStackPlan assembles the incumbent, hands the planning to plan.Run
// and prints the result; every refusal is plan's.
func runStackPlan(ctx context.Context, s Streams, deps stackDeps, o stackInputOptions, incumbentPath, candidateDir, candidateLabel, attribution, out string, jsonOut bool) error {
	l, err := loadStack(s, incumbentPath, o, deps, jsonOut)
	if err != nil {
		return err
	}
	opts, err := materializeOptions(s, l, deps, true)
	if err != nil {
		return err
	}
	req := plan.Request{Incumbent: l.assembled, IncumbentPath: incumbentPath, CandidateDir: candidateDir, Attribution: attribution, Materialize: opts}
	if !jsonOut {
		req.Progress = func(format string, args ...any) { fmt.Fprintf(s.Err, "cacheon: "+format+"\n", args...) }
	}
	res, err := plan.Run(ctx, req)
	if err != nil {
		var r *plan.Rejection
		var ae *plan.AttributionError
		switch {
		case errors.As(err, &r):
			return planRejected(s, jsonOut, r)
		case errors.As(err, &ae):
			return fmt.Errorf("--%w", err)
		}
		return err
	}
	if res.Local && !jsonOut {
		fmt.Fprintf(s.Err, "cacheon: no --attribution: using the local attribution %s (credits no one)\n", res.Attribution)
	}
	var outPtr *string
	if out != "" {
		warnings, err := plan.WriteCandidate(out, plan.CandidateFile{Incumbent: l.assembled.File, IncumbentPath: incumbentPath,
			Result: res, CandidateDir: candidateDir, Label: candidateLabel})
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintf(s.Err, "cacheon: %s\n", w)
		}
		outPtr = &out
	}
	if jsonOut {
		return writeJSON(s.Out, planJSON{
			FormatVersion: 1, PlanDigest: res.Digest, Plan: res.Arms, Attribution: res.Attribution, LocalAttrib: res.Local, CandidateOut: outPtr,
		})
	}
	writePlanText(s.Out, res.Arms, res.Digest, out)
	return nil
}

// planRejected reports a refused candidate: with --json as the plan
// document's "rejected" object, otherwise as the error message.
func planRejected(s Streams, jsonOut bool, r *plan.Rejection) error {
	if jsonOut {
		if err := writeJSON(s.Out, map[string]any{"format_version": 1, "rejected": planRejectionJSON{Reason: string(r.Reason), Detail: r.Detail}}); err != nil {
			return err
		}
		return alreadyReported(r)
	}
	return r
}

func writePlanText(w io.Writer, p *plan.MarginalArmPlan, digest, out string) {
	t := p.Transition
	fmt.Fprintf(w, "transition at %s\n", t.TargetID)
	if t.Prior != nil {
		d, _ := t.Prior.RefDigest()
		fmt.Fprintf(w, "  replaces   %s\n", d)
	} else {
		fmt.Fprintf(w, "  new target (nothing active there)\n")
	}
	if len(t.Displaced) > 0 {
		fmt.Fprintf(w, "  displaces  %s\n", strings.Join(t.Displaced, ", "))
	}
	for _, a := range p.Arms {
		fmt.Fprintf(w, "arm %-8s stack %s tree %s\n", a.Role, a.StackDigest, a.TreeDigest)
	}
	fmt.Fprintf(w, "plan %s\n", digest)
	if out != "" {
		fmt.Fprintf(w, "candidate stack written to %s\n", out)
	}
}

// checkDirLabel accepts a label that names a bundle directory.
func checkDirLabel(s string) error {
	l, err := stack.ParseLabel(s)
	if err != nil {
		return err
	}
	_, err = l.DirPath()
	return err
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
		out = append(out, reviewRecord{r})
	}
	return out, nil
}

// reviewRecord reads a review record through the accessors a
// contribution's integrated reference derives from.
type reviewRecord struct{ r *review.Record }

func (v reviewRecord) Digest() (string, error)            { return v.r.Digest() }
func (v reviewRecord) Approved() bool                     { return v.r.Approved }
func (v reviewRecord) TargetID() string                   { return v.r.TargetID }
func (v reviewRecord) TargetSpecDigest() string           { return v.r.TargetSpecDigest }
func (v reviewRecord) IntegratedSourceTreeDigest() string { return v.r.IntegratedSourceTreeDigest }
func (v reviewRecord) SelectedPayloadDigest() string      { return v.r.SelectedPayloadDigest }
func (v reviewRecord) AttributionDigest() string          { return v.r.AttributionDigest }
