package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/kernels/fingerprint"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/stacks/stack"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// intakeAddOptions are the flags and argument of intake add.
type intakeAddOptions struct {
	bundle    string
	ledger    string
	hotkey    string
	arena     string
	catalog   string
	workspace string
	block     int64
	event     int64
	subevent  int64
	json      bool
	deps      enginecli.BundleDeps
}

func newIntakeAddCommand(s Streams) *cobra.Command {
	o := intakeAddOptions{deps: enginecli.DefaultBundleDeps()}
	cmd := &cobra.Command{
		Use:   "add BUNDLE --ledger DB --hotkey H --block N [--event E --subevent S] [--json]",
		Short: "Reserve a finalized position for a bundle and publish its bytes",
		Long: `Add takes one finalized reveal into the ledger DB (created when missing):
hotkey H revealed BUNDLE at finalized block N, event E, subevent S (both 0
by default), in the arena --arena names (64 hex; empty by default).

The bundle directory is read once, under the intake limits, with guarded
reads; every identity comes from those bytes: the content hashes, and from
the inspection against the catalog (--catalog, default the built-in one)
the target, target-spec, selected payload and selected delta digests.
The bytes are published read-only under DB.publications/, addressed by
content hash; later steps read them from there, never from BUNDLE.

Outcomes, each recorded at the position:
  published  the proposal waits for screening (exit 0)
  failed     duplicate_replay: the same bytes under the same arena already
             ended in a FAIL, so they are not evaluated again (exit 2);
             or the bundle does not inspect, the reason naming the stage
             (exit 2)
  failed     copy_of:<id>:<rule>: anti-copy found that the bundle copies
             proposal <id>, an earlier one (by finalized position) of
             another hotkey at the same arena and target; or
             copy_of:seed:<label>:<rule>, one of the project's seed
             contributions (the entries of the ledger's first evaluation
             stack). The rule is payload, normalized_delta or containment
             (docs/reference/anti-copy.md). The bytes stay published as
             evidence; cacheon intake clear-copy corrects a wrong verdict
             (exit 2)
The anti-copy fingerprint of the selected delta is computed from the same
bytes and stored with the proposal, for the proposals after it. The seed
contributions' //labels resolve against --workspace (default: found above
the working directory); a ledger without an evaluation stack has none.
The same reveal taken in again is a no-op (exit 0, "existing"); another
reveal at a reserved position is refused (exit 2). Another process writing
the ledger makes this fail at once naming it (exit 1).`,
		Example: `  cacheon intake add kernels/contributions/rmsnorm_torch --ledger ledger.db --hotkey 5Fmin3r --block 4100200
  cacheon intake add ./bundle --ledger ledger.db --hotkey 5Fmin3r --block 4100200 --event 3 --subevent 1 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.bundle = args[0]
			return runIntakeAdd(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ledger, "ledger", "", "ledger database file (required)")
	f.StringVar(&o.hotkey, "hotkey", "", "hotkey that revealed the bundle (required)")
	f.Int64Var(&o.block, "block", 0, "finalized block of the reveal (required, > 0)")
	f.Int64Var(&o.event, "event", 0, "event index within the block")
	f.Int64Var(&o.subevent, "subevent", 0, "subevent index within the event")
	f.StringVar(&o.arena, "arena", "", "arena digest (64 hex) the proposal competes in")
	f.StringVar(&o.catalog, "catalog", "", "target catalog HCL file (default: the built-in catalog)")
	f.StringVar(&o.workspace, "workspace", "", "repository root the seed contributions' //labels resolve against")
	f.BoolVar(&o.json, "json", false, "print one JSON document")
	for _, name := range []string{"ledger", "hotkey", "block"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// intakeAddJSON is the --json document of intake add.
type intakeAddJSON struct {
	Proposal    *ledger.Proposal    `json:"proposal"`
	Existing    bool                `json:"existing"`
	Publication string              `json:"publication"`
	Copy        *ledger.CopyVerdict `json:"copy"` // null when the proposal copies nothing
	Seeds       []string            `json:"seeds"`
}

func runIntakeAdd(ctx context.Context, s Streams, o intakeAddOptions) error {
	info, err := os.Stat(o.bundle)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s: not a directory", o.bundle)
	}
	cat, err := enginecli.BundleCatalog(o.catalog)
	if err != nil {
		return err
	}
	snap, err := bundle.Open(o.bundle)
	if err != nil {
		return fmt.Errorf("read %s: %w", o.bundle, err)
	}
	req := ledger.IntakeRequest{Hotkey: o.hotkey, ArenaDigest: o.arena, Position: ledger.Position{Block: o.block, Event: o.event, Subevent: o.subevent}}
	in, err := contribution.InspectSnapshot(snap, contribution.Options{
		Catalog: cat,
		Payload: contribution.PayloadOptions{Closure: o.deps.Closure, CUDACheck: o.deps.CUDACheck},
	})
	var rejected *contribution.RejectedError
	switch {
	case errors.As(err, &rejected):
		req.Refusal = fmt.Sprintf("rejected_at_%s: %v", rejected.Stage, rejected.Err)
	case err != nil:
		return fmt.Errorf("inspect %s: %w", o.bundle, err)
	default:
		req.TargetID, req.TargetSpecDigest = in.Target.TargetID, in.Target.TargetSpecDigest.String()
		req.SelectedPayloadDigest, req.SelectedDeltaDigest = in.SelectedPayloadDigest.String(), in.SelectedDeltaDigest.String()
		if req.Print, err = fingerprint.Of(in); err != nil {
			return fmt.Errorf("fingerprint %s: %w", o.bundle, err)
		}
	}
	l, err := openWritingLedger(ctx, o.ledger, "intake", ledger.Options{Create: true})
	if err != nil {
		return err
	}
	defer l.Close()
	seedNames := []string{}
	if req.Print != nil {
		if req.Seeds, err = seedPrints(ctx, l, o.workspace, o.deps); err != nil {
			return err
		}
		for _, sd := range req.Seeds {
			seedNames = append(seedNames, sd.Name)
		}
	}
	res, err := l.Intake(ctx, snap, req)
	if err != nil {
		return fmt.Errorf("%s: %w", o.bundle, err)
	}
	p := res.Proposal
	cv, err := l.CopyVerdict(ctx, p.ID)
	if err != nil {
		return err
	}
	var verdict error
	if p.Status == ledger.Failed {
		verdict = reject.Errorf("%s: proposal %d at %s failed: %s", o.bundle, p.ID, p.Position, p.Reason)
		if cv != nil && cv.ClearedEvent == 0 {
			verdict = reject.Errorf("%s: proposal %d at %s failed: %s: it copies %s (%s)", o.bundle, p.ID, p.Position, p.Reason, copiedName(cv), cv.Detail)
		}
	}
	if o.json {
		if err := enginecli.WriteJSON(s.Out, intakeAddJSON{Proposal: p, Existing: res.Existing, Publication: res.Publication, Copy: cv, Seeds: seedNames}); err != nil {
			return err
		}
		return enginecli.AlreadyReported(verdict)
	}
	note := ""
	if res.Existing {
		note = " (existing)"
	}
	why := ""
	if p.Reason != string(p.Status) {
		why = " (" + p.Reason + ")"
	}
	fmt.Fprintf(s.Out, "proposal %d%s at %s: %s%s\n", p.ID, note, p.Position, p.Status, why)
	fmt.Fprintf(s.Out, "  content hash  %s\n", p.ContentHash)
	if p.TargetID != "" {
		fmt.Fprintf(s.Out, "  target        %s (spec %s)\n  selected delta %s\n", p.TargetID, p.TargetSpecDigest, p.SelectedDeltaDigest)
	}
	if p.ReplayOf != 0 {
		fmt.Fprintf(s.Out, "  replays       proposal %d\n", p.ReplayOf)
	}
	if cv != nil {
		fmt.Fprintf(s.Out, "  copies        %s by %s\n", copiedName(cv), cv.Rule)
	}
	if res.Publication != "" {
		fmt.Fprintf(s.Out, "  publication   %s\n", res.Publication)
	}
	return verdict
}

// copiedName names what a copy verdict says was copied.
func copiedName(v *ledger.CopyVerdict) string {
	if v.CopyOf != 0 {
		return fmt.Sprintf("proposal %d", v.CopyOf)
	}
	return "seed contribution " + v.Seed
}

// seedPrints fingerprints the project's seed contributions: the entries
// of the ledger's first evaluation stack (the incumbent it was started
// from, whose entries are attributed to the project itself), their
// //labels resolved against workspace ("" finds it above the working
// directory). A ledger without a stack has none. Seeds are read afresh at
// each intake: they are the repository's own, reviewed bytes.
func seedPrints(ctx context.Context, l *ledger.Ledger, workspace string, deps enginecli.BundleDeps) ([]ledger.Seed, error) {
	stacks, err := l.Stacks(ctx)
	if err != nil || len(stacks) == 0 {
		return nil, err
	}
	f, diags := stack.Parse("initial.hcl", []byte(stacks[0].HCL))
	if diags.HasErrors() {
		return nil, reject.Errorf("the ledger's first evaluation stack does not parse: %v", diags)
	}
	if workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if workspace, err = stack.FindWorkspace(wd); err != nil {
			return nil, fmt.Errorf("the seed contributions of the ledger's first stack name //labels, and there is no repository root above %s: pass --workspace ROOT", wd)
		}
	}
	src := stack.Sources{Workspace: workspace}
	catPath, err := src.CatalogPath(f)
	if err != nil {
		return nil, reject.Wrap(err)
	}
	cat, err := enginecli.BundleCatalog(catPath)
	if err != nil {
		return nil, err
	}
	var out []ledger.Seed
	for _, c := range f.Contributions {
		dir, err := src.ContributionDir(f, c)
		if err != nil {
			return nil, fmt.Errorf("seed contribution %s: %w", c.Source, err)
		}
		in, err := contribution.Inspect(dir, contribution.Options{
			Catalog: cat,
			Payload: contribution.PayloadOptions{Closure: deps.Closure, CUDACheck: deps.CUDACheck},
		})
		if err != nil {
			return nil, fmt.Errorf("seed contribution %s (%s): %w", c.Source, dir, err)
		}
		fp, err := fingerprint.Of(in)
		if err != nil {
			return nil, fmt.Errorf("seed contribution %s: %w", c.Source, err)
		}
		out = append(out, ledger.Seed{Name: c.Source, Print: fp})
	}
	return out, nil
}
