package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/settlement/evaluate"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/stacks/stack"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// qualifyLedgerJSON is qualify --ledger's --json document.
type qualifyLedgerJSON struct {
	Proposal int64           `json:"proposal"`
	Status   string          `json:"status"`
	Reason   string          `json:"reason"`
	Steps    []evaluate.Step `json:"steps"`
	Reports  []string        `json:"reports"`
}

// runQualifyLedger takes the ledger's first published proposal through
// its qualification and the reproduction (evaluate.Next), writing each
// report under OUT/proposal-N/.
func runQualifyLedger(ctx context.Context, s Streams, o qualifyOptions) error {
	if o.candidate != "" || o.reproduce != "" {
		return fmt.Errorf("--ledger takes the candidate from the ledger: drop --candidate and --reproduce")
	}
	if o.proposal < 0 {
		return fmt.Errorf("--proposal %d: a proposal id is >= 1", o.proposal)
	}
	progress := func(format string, args ...any) {
		if !o.json {
			fmt.Fprintf(s.Err, "cacheon: "+format+"\n", args...)
		}
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	storeDir := o.evidence
	if storeDir == "" {
		storeDir = filepath.Join(out, "evidence")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	store, err := evidence.Open(storeDir, 0)
	if err != nil {
		return err
	}
	doc := qualifyLedgerJSON{Steps: []evaluate.Step{}, Reports: []string{}}
	l, err := openWritingLedger(ctx, o.ledger, "qualification", ledger.Options{})
	if err != nil {
		return err
	}
	defer l.Close()
	// This run holds the ledger's writer lock: a proposal in flight under
	// the lease of a run on this host was left by a run that died, and
	// one past its lease by a run that died anywhere. Each is reclaimed.
	reclaimed, leased, err := evaluate.Reclaim(ctx, l, evaluate.Options{})
	if err != nil {
		return err
	}
	for _, r := range reclaimed {
		progress("proposal %d: %s: %s", r.Proposal, r.Status, r.Reason)
	}
	for _, f := range leased {
		progress("proposal %d: %s, leased by %s until %s", f.Proposal, f.Status, f.Lease.Holder, f.Lease.ExpiresAt.Format(time.RFC3339))
	}
	if o.env.auditKey != "" {
		// One secret is one authority: settlement pairs only two
		// independent qualifications (docs/reference/settlement.md).
		progress("both qualifications run under the one --audit-secret: one authority, whose two attempts settlement does not pair")
	}
	o.env.quiet = o.json
	env, err := setUpQualification(ctx, s, o.env)
	if err != nil {
		return err
	}
	defer env.close()
	// The proposal is measured over the ledger's own incumbent: a report
	// over any other stack is a measurement settlement could never use.
	if err := sameAsLedgerIncumbent(ctx, l, o.ledger, o.env.incumbent, env.stack.Assembled); err != nil {
		return err
	}
	if doc.Proposal, err = chooseProposal(ctx, l, o); err != nil {
		return err
	}
	runs := 0
	qualifier := func(ctx context.Context, dir string, prior *qualify.Report) (*qualify.Report, []byte, error) {
		runs++
		runDir := filepath.Join(env.run, fmt.Sprintf("run%d", runs))
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			return nil, nil, err
		}
		res, err := qualify.Run(ctx, env.options(o.env.incumbent, dir, store, runDir, progress, prior))
		if err != nil {
			return nil, nil, err
		}
		data, err := res.Report.Canonical()
		if err != nil {
			return nil, nil, err
		}
		path := filepath.Join(out, fmt.Sprintf("proposal-%d", doc.Proposal), fmt.Sprintf("report-%d.json", runs))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, nil, err
		}
		if err := atomicwrite.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			return nil, nil, err
		}
		page, err := qualify.HTML(store, res.Report)
		if err != nil {
			return nil, nil, err
		}
		if err := atomicwrite.WriteFile(path[:len(path)-len(".json")]+".html", page, 0o644); err != nil {
			return nil, nil, err
		}
		doc.Reports = append(doc.Reports, path)
		return res.Report, data, nil
	}
	chosen, err := l.Proposal(ctx, doc.Proposal)
	if err != nil {
		return err
	}
	res, err := evaluate.Evaluate(ctx, l, doc.Proposal, evaluate.Options{
		Qualify: qualifier, Intake: settle.Intake{Lane: settle.LaneRegistered, Arena: chosen.ArenaDigest},
		WorkDir: env.run, Progress: progress,
	})
	if err != nil {
		return err
	}
	doc.Status, doc.Reason, doc.Steps = string(res.Status), res.Reason, res.Steps
	if o.json {
		if err := enginecli.WriteJSON(s.Out, doc); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(s.Out, "proposal %d: %s %s\n", doc.Proposal, doc.Status, doc.Reason)
		for _, st := range res.Steps {
			fmt.Fprintf(s.Out, "  attempt %d %-13s %-11s report %s\n", st.Attempt.Seq, st.Attempt.Stage, st.Decision, st.Report)
			switch {
			case st.Settles:
				fmt.Fprintf(s.Out, "    settlement view recorded\n")
			case st.Unsettled != "":
				fmt.Fprintf(s.Out, "    settlement will not pair it: %s\n", st.Unsettled)
			case len(st.Missing) > 0:
				fmt.Fprintf(s.Out, "    settlement cannot pair it: the report lacks %v\n", st.Missing)
			}
		}
		for _, p := range doc.Reports {
			fmt.Fprintf(s.Out, "report %s\n", p)
		}
	}
	switch res.Status {
	case ledger.Failed:
		return enginecli.AlreadyReported(enginecli.ExitWith(qualify.Fail.ExitCode(), errors.New(res.Reason)))
	case ledger.NoDecision:
		return enginecli.AlreadyReported(enginecli.ExitWith(qualify.NoDecision.ExitCode(), errors.New(res.Reason)))
	}
	return nil
}

// chooseProposal is --proposal, which must be published, not leased and
// not backing off, or else the first queued proposal.
func chooseProposal(ctx context.Context, l *ledger.Ledger, o qualifyOptions) (int64, error) {
	if o.proposal == 0 {
		id, err := evaluate.Queued(ctx, l, time.Now())
		if err != nil {
			return 0, fmt.Errorf("%s: %w", o.ledger, err)
		}
		return id, nil
	}
	p, err := l.Proposal(ctx, o.proposal)
	if err != nil {
		return 0, err
	}
	ls, err := l.LeaseOf(ctx, p.ID)
	if err != nil {
		return 0, err
	}
	switch {
	case ls.Live:
		return 0, fmt.Errorf("%s: %w", o.ledger, &ledger.LeasedError{Lease: ls})
	case p.Status != ledger.Published:
		return 0, reject.Wrap(fmt.Errorf("%s: proposal %d is %s (%s); qualify takes a published proposal", o.ledger, p.ID, p.Status, p.Reason))
	case time.Now().Before(ls.NotBefore):
		return 0, fmt.Errorf("%s: proposal %d: %w until %s (%d attempts lost)", o.ledger, p.ID, ledger.ErrBackingOff, ls.NotBefore.Format(time.RFC3339), ls.Lost)
	}
	return p.ID, nil
}

// sameAsLedgerIncumbent refuses an incumbent file that does not assemble
// to the ledger's current evaluation stack.
func sameAsLedgerIncumbent(ctx context.Context, l *ledger.Ledger, db, path string, a *stack.Assembled) error {
	cur, err := l.CurrentStack(ctx)
	if err != nil {
		return err
	}
	if cur == nil {
		return reject.Wrap(fmt.Errorf("%s: no evaluation stack yet: record the first one with cacheon settle --ledger %s --init STACK.hcl --init-tree DIGEST", db, db))
	}
	d, err := a.Manifest.Digest()
	if err != nil {
		return err
	}
	if d.String() != cur.StackDigest {
		return reject.Wrap(fmt.Errorf("%s assembles to stack %s, but the current evaluation stack of %s is %s: qualify over the ledger's incumbent (cacheon stack export --ledger %s --out FILE, then --incumbent FILE)",
			path, d, db, cur.StackDigest, db))
	}
	return nil
}
