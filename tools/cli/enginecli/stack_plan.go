package enginecli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// stackPlanOptions are the inputs of stack plan.
type stackPlanOptions struct {
	input          StackInputOptions
	deps           StackDeps
	incumbent      string // the incumbent stack file
	candidate      string // the candidate bundle directory
	candidateLabel string
	attribution    string
	out            string
	incumbentTree  string // reuse this published tree as B
	treeOut        string // publish C here
	manifestOut    string // and C's canonical stack manifest here
	json           bool
}

func newStackPlanCommand(s Streams, deps StackDeps) *cobra.Command {
	o := stackPlanOptions{deps: deps}
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
from B's. The plan's digest is H(cacheon.stack.marginal-arm-plan, plan),
and the --json document's "plan" object is that payload, with upstream's
keys: baseline_before (B), challenger (C), baseline_after (B').

--attribution is the digest of the candidate's intake attribution; without
it a local attribution derived from the bundle's content hash is used,
which credits no one. --out writes the candidate stack as an HCL file,
only when planning succeeds.

--incumbent-tree reuses a tree the incumbent was already materialized
into (such as //stacks:incumbent's) as B instead of materializing it
again: the tree is verified as a consumer would verify it, and its
metadata must name the incumbent's stack digest. Its bytes are taken as
that materialization, so give only a tree cacheon wrote. --tree-out
publishes the candidate's tree C (with --manifest-out, its canonical stack
manifest JSON), which is what Bazel's cacheon_candidate does, so the
candidate is materialized once.

Exit codes: 0 planned; 2 the candidate was rejected (the reason names the
rule); 1 a usage or I/O error.`,
		Example: `  cacheon stack plan --incumbent stacks/incumbent.hcl --candidate ./my-silu-bundle
  cacheon stack plan --json --incumbent stacks/incumbent.hcl \
      --candidate kernels/contributions/moe_epilogue_atomic_torch --out /tmp/candidate.hcl
  cacheon stack plan --incumbent stacks/incumbent.hcl --candidate ./my-silu-bundle \
      --incumbent-tree bazel-bin/stacks/incumbent.tree --tree-out /tmp/candidate.tree`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStackPlan(cmd.Context(), s, o)
		},
	}
	o.input.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.incumbent, "incumbent", "", "the incumbent evaluation stack file")
	f.StringVar(&o.candidate, "candidate", "", "the candidate bundle directory")
	f.StringVar(&o.candidateLabel, "candidate-label", "", "write the candidate's source in --out as this label (e.g. //kernels/contributions:my_silu) instead of a path; Bazel's cacheon_candidate passes it")
	f.StringVar(&o.attribution, "attribution", "", "attribution digest of the candidate (64 hex)")
	f.StringVar(&o.out, "out", "", "write the candidate stack HCL to FILE")
	f.StringVar(&o.incumbentTree, "incumbent-tree", "", "the incumbent's published tree DIR, verified and used as B instead of materializing the incumbent again")
	f.StringVar(&o.treeOut, "tree-out", "", "publish the candidate's tree C at DIR (must not exist)")
	f.StringVar(&o.manifestOut, "manifest-out", "", "with --tree-out, also write the candidate's canonical stack manifest JSON to FILE")
	f.BoolVar(&o.json, "json", false, "print one JSON document")
	return cmd
}

// planFormatVersion is the stack plan document's format. Version 2 writes
// the plan with upstream's keys (baseline_before, challenger,
// baseline_after, policy_version) where version 1 had an "arms" list, so
// the plan object is exactly the payload plan_digest hashes.
const planFormatVersion = 2

type planJSON struct {
	FormatVersion int                   `json:"format_version"`
	PlanDigest    identity.Digest       `json:"plan_digest"`
	Plan          *plan.MarginalArmPlan `json:"plan"`
	Attribution   identity.Digest       `json:"attribution"`
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
func runStackPlan(ctx context.Context, s Streams, o stackPlanOptions) (err error) {
	if o.incumbent == "" || o.candidate == "" {
		return errors.New("--incumbent STACK and --candidate BUNDLE are required")
	}
	if o.manifestOut != "" && o.treeOut == "" {
		return errors.New("--manifest-out needs --tree-out")
	}
	if o.candidateLabel != "" {
		if err := checkDirLabel(o.candidateLabel); err != nil {
			return fmt.Errorf("--candidate-label: %w", err)
		}
	}
	l, err := LoadStack(s, o.incumbent, o.input, o.deps, o.json)
	if err != nil {
		return err
	}
	opts, err := MaterializeOptions(s, l, o.deps, true)
	if err != nil {
		return err
	}
	req := plan.Request{Incumbent: l.Assembled, IncumbentPath: o.incumbent, CandidateDir: o.candidate, Attribution: o.attribution, Materialize: opts,
		IncumbentTree: o.incumbentTree, CandidateTree: o.treeOut}
	if o.treeOut != "" {
		if err := os.MkdirAll(filepath.Dir(filepath.Clean(o.treeOut)), 0o755); err != nil {
			return err
		}
	}
	if !o.json {
		req.Progress = func(format string, args ...any) { fmt.Fprintf(s.Err, "cacheon: "+format+"\n", args...) }
	}
	res, err := plan.Run(ctx, req)
	if err == nil && res.CandidateTree != "" {
		// Anything failing from here on leaves no candidate tree behind.
		defer func() {
			if err != nil {
				os.RemoveAll(res.CandidateTree)
			}
		}()
	}
	if err != nil {
		var r *plan.Rejection
		var ae *plan.AttributionError
		switch {
		case errors.As(err, &r):
			return planRejected(s, o.json, r)
		case errors.As(err, &ae):
			return fmt.Errorf("--%w", err)
		}
		return err
	}
	if res.Local && !o.json {
		fmt.Fprintf(s.Err, "cacheon: no --attribution: using the local attribution %s (credits no one)\n", res.Attribution)
	}
	if o.manifestOut != "" {
		if err := WriteManifest(o.manifestOut, res.Candidate.Stack); err != nil {
			return err
		}
	}
	var outPtr *string
	if o.out != "" {
		warnings, err := plan.WriteCandidate(o.out, plan.CandidateFile{Incumbent: l.Assembled.File, IncumbentPath: o.incumbent,
			Result: res, CandidateDir: o.candidate, Label: o.candidateLabel})
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintf(s.Err, "cacheon: %s\n", w)
		}
		outPtr = &o.out
	}
	if o.json {
		return WriteJSON(s.Out, planJSON{
			FormatVersion: planFormatVersion, PlanDigest: res.Digest, Plan: res.Arms, Attribution: res.Attribution, LocalAttrib: res.Local, CandidateOut: outPtr,
		})
	}
	writePlanText(s.Out, res.Arms, res.Digest, o.out)
	return nil
}

// planRejected reports a refused candidate: with --json as the plan
// document's "rejected" object, otherwise as the error message.
func planRejected(s Streams, jsonOut bool, r *plan.Rejection) error {
	if jsonOut {
		if err := WriteJSON(s.Out, map[string]any{"format_version": planFormatVersion, "rejected": planRejectionJSON{Reason: string(r.Reason), Detail: r.Detail}}); err != nil {
			return err
		}
		return AlreadyReported(r)
	}
	return r
}

func writePlanText(w io.Writer, p *plan.MarginalArmPlan, digest identity.Digest, out string) {
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
	for _, a := range p.RoleArms() {
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
