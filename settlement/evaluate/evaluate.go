// Package evaluate takes the ledger's published proposals through
// evaluation: the screens and the qualification (one evaluator/qualify
// run), then its reproduction with the lane roles exchanged, recording
// every attempt (a passing one with its settlement view, settle.FromReport
// of its report) and moving each proposal through the reservation
// statuses (spec §2.6): published → screening → promoted → qualifying →
// reproduction_pending → qualifying → qualified, or failed / no_decision
// with the stage's reason. A speed verdict under the embedded
// uncalibrated policy (a PASS, or the speed stage's FAIL) is recorded as
// the attempt it is and leaves the proposal in no_decision
// (uncalibrated_policy): noise is neither a crown nor a loss.
//
// The qualification itself is the caller's Qualifier (the command line
// sets up the model, lanes and isolation once); this package owns only
// the ledger's side, so the same steps run whatever the machine.
package evaluate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
)

// Qualifier runs one qualification of the bundle in dir (the ledger's
// published bytes, checked out read-only), reproducing prior when it is
// set, and returns the report with its canonical bytes. An error is a
// qualification that produced no report (the evidence store could not be
// written): the proposal is then left where it was.
type Qualifier func(ctx context.Context, dir string, prior *qualify.Report) (*qualify.Report, []byte, error)

// Options configure Next.
type Options struct {
	Qualify Qualifier
	// Intake is the settlement's view of where proposals come from (lane,
	// arena, reservation); Hotkey and Finalized are filled per proposal.
	Intake settle.Intake
	// WorkDir holds each proposal's checkout; removed afterwards.
	WorkDir  string
	Progress func(format string, args ...any)
	// Lease is the lease policy (zero: ledger.DefaultLeasePolicy); Now the
	// clock leases are taken and reclaimed by (nil: time.Now).
	Lease ledger.LeasePolicy
	Now   func() time.Time
}

func (o Options) policy() ledger.LeasePolicy {
	if o.Lease == (ledger.LeasePolicy{}) {
		return ledger.DefaultLeasePolicy
	}
	return o.Lease
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Step is one recorded attempt.
type Step struct {
	Attempt ledger.Attempt `json:"attempt"`
	Report  string         `json:"report"` // the report's SHA-256 (its evidence address)
	Settles bool           `json:"settles"`
	Missing []string       `json:"missing_settlement_fields"`
	// Unsettled says why a passing report has no settlement view when
	// settlement refuses it as a whole (uncalibrated_policy), "" otherwise.
	Unsettled string `json:"unsettled_reason"`
	Decision  string `json:"decision"`
}

// Result is one proposal's evaluation.
type Result struct {
	Proposal ledger.Proposal `json:"proposal"`
	Steps    []Step          `json:"steps"`
	Status   ledger.Status   `json:"status"` // where the proposal ended
	Reason   string          `json:"reason"`
}

// ErrNothingPublished is a ledger with no proposal waiting.
var ErrNothingPublished = errors.New("no published proposal waits for evaluation")

// Next evaluates the first published proposal in finalized order whose
// back-off (after a lost attempt) has ended.
func Next(ctx context.Context, l *ledger.Ledger, o Options) (*Result, error) {
	id, err := Queued(ctx, l, o.now())
	if err != nil {
		return nil, err
	}
	return Evaluate(ctx, l, id, o)
}

// Queued returns the first published proposal in finalized order whose
// back-off has ended by now; ErrNothingPublished, naming the proposals
// still backing off, when there is none.
func Queued(ctx context.Context, l *ledger.Ledger, now time.Time) (int64, error) {
	waiting, err := l.Proposals(ctx, ledger.Published)
	if err != nil {
		return 0, err
	}
	var later []string
	for _, p := range waiting {
		ls, err := l.LeaseOf(ctx, p.ID)
		if err != nil {
			return 0, err
		}
		if now.Before(ls.NotBefore) {
			later = append(later, fmt.Sprintf("proposal %d backs off until %s", p.ID, ls.NotBefore.Format(time.RFC3339)))
			continue
		}
		return p.ID, nil
	}
	if len(later) > 0 {
		return 0, fmt.Errorf("%w (%s)", ErrNothingPublished, strings.Join(later, "; "))
	}
	return 0, ErrNothingPublished
}

// Evaluate takes proposal id (published) through its screens,
// qualification and reproduction under a lease. When the run fails (an
// infrastructure error, a full disk, Ctrl-C) with the proposal in flight,
// the run gives its lease up as a lost attempt (ledger.Reclaim): the
// proposal goes back to the queue with a back-off, or after the policy's
// last attempt ends no_decision with the error as its reason. A machine's
// trouble is never a verdict, and never leaves the proposal stranded.
func Evaluate(ctx context.Context, l *ledger.Ledger, id int64, o Options) (*Result, error) {
	res, err := evaluate(ctx, l, id, o)
	if err != nil {
		// Without the caller's cancellation: an interrupted run records
		// why it ended too. If even this fails (the disk is full), the
		// next run's Reclaim records it.
		_ = giveUp(context.WithoutCancel(ctx), l, id, o, err)
	}
	return res, err
}

// giveUp reclaims this run's lease on proposal id, if the proposal is
// still in flight under it, as a lost attempt.
func giveUp(ctx context.Context, l *ledger.Ledger, id int64, o Options, cause error) error {
	ls, err := l.LeaseOf(ctx, id)
	if err != nil {
		return err
	}
	self := l.Self()
	if !ls.Live || ls.Holder.Host != self.Host || ls.Holder.PID != self.PID || ls.Holder.Run != self.Run {
		return nil
	}
	_, err = l.Reclaim(ctx, id, ledger.CauseRunFailed, "the evaluation ended without a verdict: "+cause.Error(), o.now(), o.policy())
	return err
}

// Reclaim reclaims every proposal in flight whose run is gone
// (ledger.Stale): past its lease, leased by a run on this host that is no
// longer alive (the caller holds the writer lock), or with no lease. Each
// goes back to the queue with a back-off, or, after the policy's last
// attempt, ends no_decision (infrastructure). It returns what it did and
// the proposals still leased by live runs elsewhere.
func Reclaim(ctx context.Context, l *ledger.Ledger, o Options) (reclaimed []ledger.Reclaimed, leased []ledger.InFlight, err error) {
	now := o.now()
	fl, err := l.Stale(ctx, now)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range fl {
		if f.Cause == "" {
			leased = append(leased, f)
			continue
		}
		detail := ""
		switch f.Cause {
		case ledger.CauseExpired:
			detail = fmt.Sprintf("the lease of %s expired at %s", f.Lease.Holder, f.Lease.ExpiresAt.Format(time.RFC3339))
		case ledger.CauseHolderGone:
			detail = fmt.Sprintf("the run holding it, %s, is gone", f.Lease.Holder)
		case ledger.CauseNoLease:
			detail = "no run holds a lease on it"
		}
		r, err := l.Reclaim(ctx, f.Proposal, f.Cause, detail, now, o.policy())
		if err != nil {
			return reclaimed, leased, err
		}
		reclaimed = append(reclaimed, *r)
	}
	return reclaimed, leased, nil
}

func evaluate(ctx context.Context, l *ledger.Ledger, id int64, o Options) (*Result, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	p, err := l.Proposal(ctx, id)
	if err != nil {
		return nil, err
	}
	res := &Result{Proposal: *p, Steps: []Step{}}
	dir, err := os.MkdirTemp(o.WorkDir, "proposal-")
	if err != nil {
		return nil, err
	}
	defer removeReadOnly(dir)
	bundleDir := filepath.Join(dir, "bundle")
	if err := l.Checkout(ctx, id, bundleDir); err != nil {
		return nil, fmt.Errorf("proposal %d: checkout of its published bytes: %w", id, err)
	}
	move := func(to ledger.Status, reason string) error {
		if err := l.Transition(ctx, id, to, reason); err != nil {
			return err
		}
		res.Status, res.Reason = to, reason
		progress("proposal %d: %s %s", id, to, reason)
		return nil
	}
	if _, err := l.TakeLease(ctx, id, dir, o.now(), o.policy()); err != nil {
		return nil, err
	}
	res.Status = ledger.Screening
	progress("proposal %d: %s under a lease of %s", id, ledger.Screening, l.Self())
	in := o.Intake
	in.Hotkey = p.Hotkey
	in.Finalized = settle.Position{Block: uint64(p.Position.Block), EventIndex: uint32(p.Position.Event), SubeventIndex: uint32(p.Position.Subevent)}
	if in.Arena == "" {
		in.Arena = p.ArenaDigest
	}
	if in.Reservation == "" {
		if in.Reservation, err = Reservation(p); err != nil {
			return nil, err
		}
	}

	// The qualification: its screens first, then the speed stage.
	progress("proposal %d: qualifying %s (hotkey %s, target %s)", id, p.ContentHash[:12], p.Hotkey, p.TargetID)
	first, data, err := o.Qualify(ctx, bundleDir, nil)
	if err != nil {
		return nil, err
	}
	if stage := failedScreen(first); stage != "" {
		step, err := record(ctx, l, id, ledger.StageScreen, first, data, in)
		if err != nil {
			return nil, err
		}
		res.Steps = append(res.Steps, step)
		return res, move(statusOf(first.Decision), stage+": "+first.Reason)
	}
	// The screens passed: their receipt is the same report's.
	step, err := record(ctx, l, id, ledger.StageScreen, first, data, in)
	if err != nil {
		return nil, err
	}
	res.Steps = append(res.Steps, step)
	for _, to := range []ledger.Status{ledger.Promoted, ledger.Qualifying} {
		if err := move(to, ""); err != nil {
			return nil, err
		}
	}
	if step, err = record(ctx, l, id, ledger.StageQualification, first, data, in); err != nil {
		return nil, err
	}
	res.Steps = append(res.Steps, step)
	if why := uncalibrated(first); why != "" {
		// No reproduction: under the same unmeasured thresholds it could
		// not turn the first verdict into evidence either way.
		return res, move(ledger.NoDecision, why)
	}
	if first.Decision != qualify.Pass {
		return res, move(statusOf(first.Decision), first.Reason)
	}

	// The reproduction, on exchanged lanes.
	if err := move(ledger.ReproductionPending, "the first qualification passed"); err != nil {
		return nil, err
	}
	if err := move(ledger.Qualifying, ""); err != nil {
		return nil, err
	}
	// A fresh term for the reproduction: the first qualification may
	// have used most of the one taken with the lease.
	if _, err := l.RenewLease(ctx, id, o.now(), o.policy()); err != nil {
		return nil, err
	}
	progress("proposal %d: reproducing on exchanged lanes", id)
	second, data, err := o.Qualify(ctx, bundleDir, first)
	if err != nil {
		return nil, err
	}
	step, err = record(ctx, l, id, ledger.StageQualification, second, data, in)
	if err != nil {
		return nil, err
	}
	res.Steps = append(res.Steps, step)
	if why := uncalibrated(second); why != "" {
		return res, move(ledger.NoDecision, "reproduction: "+why)
	}
	if second.Decision != qualify.Pass {
		return res, move(statusOf(second.Decision), "reproduction: "+second.Reason)
	}
	return res, move(ledger.Qualified, "")
}

// Reservation is the reservation digest of a ledger proposal, for an
// intake that names none: H(cacheon.settlement.reservation.v1, {arena,
// block, event_index, subevent_index, hotkey, committed_content_hash}).
// It is what the chain finalized and the ledger took in, one per
// finalized position (the ledger's unique key), so two proposals never
// share it and both qualifications of one proposal always do.
func Reservation(p *ledger.Proposal) (string, error) {
	d, err := identity.H(identity.DomainSettlementReservation, map[string]any{
		"arena": p.ArenaDigest, "block": p.Position.Block, "event_index": p.Position.Event, "subevent_index": p.Position.Subevent,
		"hotkey": p.Hotkey, "committed_content_hash": p.CommittedContentHash,
	})
	if err != nil {
		return "", fmt.Errorf("proposal %d: reservation: %w", p.ID, err)
	}
	return d.String(), nil
}

// failedScreen names the screen a report stopped at, "" when every screen
// passed (the speed stage, and any after it, decided).
func failedScreen(r *qualify.Report) string {
	screens := map[string]bool{qualify.ScreenStatic: true, qualify.ScreenBuild: true, qualify.ScreenABI: true, qualify.ScreenGraph: true, qualify.ScreenServing: true}
	for _, s := range r.Stages {
		if screens[s.Name] && s.Decision != qualify.Pass && s.Decision != qualify.NotApplicable {
			return s.Name
		}
	}
	if len(r.Stages) > 0 && screens[r.Stages[len(r.Stages)-1].Name] {
		return r.Stages[len(r.Stages)-1].Name // stopped after the screens without a speed stage
	}
	return ""
}

// uncalibrated says why a qualification graded under the embedded
// uncalibrated speed policy (whose PASS settle.FromReport refuses as
// uncalibrated_policy) leaves its proposal undecided: its PASS, or
// a FAIL its speed stage decided, came from thresholds no lane measured,
// so on a shared CPU it may be the machine's noise. Such a verdict is no
// crown (settlement never pairs it) and, for the same reason, no loss:
// the proposal waits in no_decision, eligible again once the lanes are
// calibrated. A speed stage FAIL the thresholds did not decide (a
// candidate engine's fault) is held with it: a qualification under a
// calibrated policy sees it again and ends the proposal then. A FAIL of a
// screen or of a correctness stage (the audit, quality) depends on no
// speed threshold and stays terminal. "" for every attempt that is
// evidence as it stands.
func uncalibrated(r *qualify.Report) string {
	if r.Inputs.Calibration != qualify.UncalibratedDigest() {
		return ""
	}
	if r.Decision != qualify.Pass && (r.Decision != qualify.Fail || r.DecidedBy() != qualify.StageSpeed) {
		return ""
	}
	verdict := string(r.Decision)
	for _, s := range r.Stages {
		if s.Name == qualify.StageSpeed {
			verdict = fmt.Sprintf("the speed stage's %s, %s", s.Decision, s.Reason)
		}
	}
	return fmt.Sprintf("%s: a speed verdict under thresholds no lane measured is noise, not evidence (%s); "+
		"calibrate the lanes (cacheon qualify calibrate) and qualify again under the policy it supports",
		settle.ReasonUncalibratedPolicy, verdict)
}

// statusOf is where a decided attempt leaves its proposal: a FAIL is
// terminal, anything else (NO_DECISION) waits for a retry.
func statusOf(d qualify.Decision) ledger.Status {
	if d == qualify.Fail {
		return ledger.Failed
	}
	return ledger.NoDecision
}

// record writes one attempt, with its settlement view when the report
// carries every field settlement needs.
func record(ctx context.Context, l *ledger.Ledger, id int64, stage string, r *qualify.Report, data []byte, in settle.Intake) (Step, error) {
	// The report's evidence address: the SHA-256 of its canonical bytes.
	sum := sha256.Sum256(bytes.TrimSuffix(data, []byte("\n")))
	digest := hex.EncodeToString(sum[:])
	decision := r.Decision
	if stage == ledger.StageScreen && failedScreen(r) == "" {
		decision = qualify.Pass // every screen passed; the speed stage is the qualification's
	}
	a := ledger.Attempt{Stage: stage, ReportDigest: digest, EvidenceAddress: digest, Decision: string(decision), Reason: r.Reason}
	step := Step{Report: digest, Decision: string(decision), Missing: []string{}}
	if stage == ledger.StageQualification && r.Decision == qualify.Pass {
		q, err := settle.FromReport(data, in)
		var rej *settle.Rejection
		switch {
		case err == nil:
			view, err := canonjson.Marshal(&q)
			if err != nil {
				return Step{}, err
			}
			a.Settlement, step.Settles = view, true
		case errors.As(err, &rej) && len(rej.Missing) > 0:
			step.Missing = rej.Missing
		case errors.As(err, &rej) && rej.Reason == settle.ReasonUncalibratedPolicy:
			// A PASS under thresholds nobody measured: recorded as
			// the attempt it is, never as something settlement pairs.
			step.Unsettled = err.Error()
		default:
			return Step{}, fmt.Errorf("proposal %d: the settlement view of report %s: %w", id, digest, err)
		}
	}
	seq, err := l.RecordAttempt(ctx, id, a)
	if err != nil {
		return Step{}, err
	}
	a.Seq = seq
	step.Attempt = a
	return step, nil
}

// removeReadOnly removes a checkout the ledger wrote read-only.
func removeReadOnly(dir string) {
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}
