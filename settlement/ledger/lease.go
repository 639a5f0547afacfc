package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// The lease chain records who evaluates a proposal and until when. A run
// takes a lease in the transaction that moves the proposal from published
// into flight (TakeLease); the transition that moves it out of flight
// releases it in its own transaction; a lease whose run died is reclaimed
// (Reclaim), which counts the attempt and either returns the proposal to
// the queue (published) with a back-off or, after Policy.MaxAttempts,
// ends it no_decision with an infrastructure reason. Each step is an
// event of its own hash chain (H(cacheon.ledger.lease, body)), verified
// with the other chains on Open and Check.
var leaseChain = chain{"lease_events", identity.DomainLeaseEvent, "lease chain"}

// Lease event types.
const (
	EventLeaseTaken     = "lease_taken"
	EventLeaseRenewed   = "lease_renewed"
	EventLeaseReleased  = "lease_released"
	EventLeaseReclaimed = "lease_reclaimed"
)

// Why a lease was reclaimed.
const (
	// CauseExpired: the lease ran past its expiry with the proposal still
	// in flight.
	CauseExpired = "expired"
	// CauseHolderGone: the holder ran on this host, and the reclaimer holds
	// the writer lock every run on this host holds for its whole run, so
	// the holder's process is gone whatever the expiry says.
	CauseHolderGone = "holder_gone"
	// CauseRunFailed: the holder itself gave the lease up after an
	// infrastructure error (a full disk, Ctrl-C).
	CauseRunFailed = "run_failed"
	// CauseNoLease: the proposal went into flight without a lease (a
	// ledger written before schema 5, or a direct Transition).
	CauseNoLease = "no_lease"
)

// LeasePolicy is how long a lease lasts and what a lost attempt costs.
type LeasePolicy struct {
	// Term is how long a lease holds from when it is taken.
	Term time.Duration
	// MaxAttempts is how many evaluations of one proposal may end without
	// a verdict (reclaimed) before it ends no_decision instead of
	// returning to the queue.
	MaxAttempts int
	// Backoff is the wait after the first lost attempt; it doubles with
	// each further one.
	Backoff time.Duration
}

// DefaultLeasePolicy is the policy qualify --ledger runs under
// (docs/reference/ledger.md): a qualification and its reproduction fit in
// the term with room to spare, and a proposal whose evaluations keep
// dying (a bundle that takes the machine down, say) ends after three.
var DefaultLeasePolicy = LeasePolicy{Term: 6 * time.Hour, MaxAttempts: 3, Backoff: 10 * time.Minute}

func (p LeasePolicy) validate() error {
	if p.Term <= 0 || p.MaxAttempts < 1 || p.Backoff < 0 {
		return fmt.Errorf("%w: lease policy %+v: term must be > 0, max attempts >= 1, back-off >= 0", ErrIllegal, p)
	}
	return nil
}

// backoff is the wait after the n-th lost attempt (n >= 1).
func (p LeasePolicy) backoff(n int) time.Duration {
	d := p.Backoff
	for i := 1; i < n && d < 24*time.Hour; i++ {
		d *= 2
	}
	return d
}

// Holder names a run that holds a lease.
// Run tells two runs apart that share a host and pid (a pid reused, or
// every run pid 1 in its container).
type Holder struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Run     string `json:"run"`
	WorkDir string `json:"work_dir"`
}

func (h Holder) String() string { return fmt.Sprintf("%s pid %d (run %s)", h.Host, h.PID, h.Run) }

func (h Holder) validate() error {
	if h.Host == "" || h.PID <= 0 || h.Run == "" {
		return fmt.Errorf("%w: lease holder %+v: host, a pid > 0 and a run are required", ErrIllegal, h)
	}
	return nil
}

// Lease is the lease state of one proposal, folded from its lease events.
type Lease struct {
	Proposal int64 `json:"proposal"`
	// Live says the last lease taken is neither released nor reclaimed.
	Live      bool      `json:"live"`
	Holder    Holder    `json:"holder"`
	TakenAt   time.Time `json:"taken_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Attempts counts the leases taken (evaluations started); Lost those
	// that ended reclaimed, without a verdict.
	Attempts int `json:"attempts"`
	Lost     int `json:"lost"`
	// NotBefore is the end of the back-off after the last lost attempt:
	// no lease is taken before it. Zero when there is none.
	NotBefore time.Time `json:"not_before"`
}

// ErrLeased is a proposal another run holds a live lease on. Like
// ErrLocked it is not a rejection: the proposal is fine, only busy.
var ErrLeased = errors.New("proposal is leased by another run")

// ErrBackingOff is a proposal whose back-off after a lost attempt has not
// ended.
var ErrBackingOff = errors.New("proposal is backing off after a lost attempt")

// LeasedError says which run holds the lease, and until when.
type LeasedError struct{ Lease Lease }

func (e *LeasedError) Error() string {
	return fmt.Sprintf("proposal %d is leased by %s until %s (attempt %d)", e.Lease.Proposal, e.Lease.Holder, e.Lease.ExpiresAt.Format(time.RFC3339), e.Lease.Attempts)
}

func (e *LeasedError) Unwrap() error { return ErrLeased }

// stamp is how the lease chain writes a time: UTC, whole seconds.
func stamp(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// leased reports whether a proposal in s is in flight under a lease: from
// its screens to its last qualification.
func leased(s Status) bool {
	return s == Screening || s == Promoted || s == Qualifying || s == ReproductionPending
}

// LeaseOf folds proposal id's lease events.
func (l *Ledger) LeaseOf(ctx context.Context, id int64) (Lease, error) {
	return l.leaseOf(ctx, l.db, id)
}

// leaseOf folds proposal id's lease state. After a checkpoint it starts
// from the state the checkpoint recorded for a live proposal and folds
// only the events after the checkpoint's lease head, so no lease event the
// quick path did not verify feeds a decision; without one it folds every
// event.
func (l *Ledger) leaseOf(ctx context.Context, q querier, id int64) (Lease, error) {
	if base, ok := l.cp.leases[id]; ok {
		return foldLease(ctx, q, base, l.cp.heads[leaseChain.table].Sequence)
	}
	return foldLease(ctx, q, Lease{Proposal: id}, 0)
}

// foldLease folds the lease events of ls.Proposal after sequence after
// into ls.
func foldLease(ctx context.Context, q querier, ls Lease, after int64) (Lease, error) {
	rows, err := q.QueryContext(ctx, `SELECT sequence, body FROM lease_events WHERE proposal_id = ? AND sequence > ? ORDER BY sequence`, ls.Proposal, after)
	if err != nil {
		return Lease{}, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var body string
		if err := rows.Scan(&seq, &body); err != nil {
			return Lease{}, classify(err)
		}
		if err := ls.apply([]byte(body)); err != nil {
			return Lease{}, fmt.Errorf("%w: lease chain: event %d: %v", ErrRefused, seq, err)
		}
	}
	return ls, classify(rows.Err())
}

// leaseFields is a lease state as a checkpoint records it.
func leaseFields(ls Lease) map[string]any {
	m := map[string]any{"live": ls.Live, "holder": holderFields(ls.Holder), "attempts": ls.Attempts, "lost": ls.Lost,
		"taken_at": "", "expires_at": "", "not_before": ""}
	if !ls.TakenAt.IsZero() {
		m["taken_at"], m["expires_at"] = stamp(ls.TakenAt), stamp(ls.ExpiresAt)
	}
	if !ls.NotBefore.IsZero() {
		m["not_before"] = stamp(ls.NotBefore)
	}
	return m
}

// parseLeaseFields reads a lease state a checkpoint recorded.
func parseLeaseFields(id int64, v any) (Lease, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Lease{}, errors.New("not an object")
	}
	ls := Lease{Proposal: id}
	num := func(m map[string]any, k string) int64 {
		if n, ok := m[k].(*big.Int); ok && n.IsInt64() {
			return n.Int64()
		}
		return 0
	}
	ls.Live, _ = m["live"].(bool)
	ls.Attempts, ls.Lost = int(num(m, "attempts")), int(num(m, "lost"))
	if h, ok := m["holder"].(map[string]any); ok {
		ls.Holder.Host, _ = h["host"].(string)
		ls.Holder.Run, _ = h["run"].(string)
		ls.Holder.WorkDir, _ = h["work_dir"].(string)
		ls.Holder.PID = int(num(h, "pid"))
	}
	for _, f := range []struct {
		key string
		dst *time.Time
	}{{"taken_at", &ls.TakenAt}, {"expires_at", &ls.ExpiresAt}, {"not_before", &ls.NotBefore}} {
		if s, _ := m[f.key].(string); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return Lease{}, fmt.Errorf("%s %q: %v", f.key, s, err)
			}
			*f.dst = t
		}
	}
	return ls, nil
}

// leaseBody is what every lease event body holds besides the chain fields.
type leaseBody struct {
	EventType  string `json:"event_type"`
	ProposalID int64  `json:"proposal_id"`
	Holder     Holder `json:"holder"`
	At         string `json:"at"`
	ExpiresAt  string `json:"expires_at"`
	Attempt    int    `json:"attempt"`
	NotBefore  string `json:"not_before"`
}

func parseLeaseBody(body []byte) (leaseBody, error) {
	var b leaseBody
	v, err := canonjson.Parse(body)
	if err != nil {
		return b, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return b, errors.New("not an object")
	}
	str := func(k string) string { s, _ := obj[k].(string); return s }
	num := func(m map[string]any, k string) int64 {
		if n, ok := m[k].(*big.Int); ok && n.IsInt64() {
			return n.Int64()
		}
		return 0
	}
	b.EventType, b.At, b.ExpiresAt, b.NotBefore = str("event_type"), str("at"), str("expires_at"), str("not_before")
	b.ProposalID, b.Attempt = num(obj, "proposal_id"), int(num(obj, "attempt"))
	if h, ok := obj["holder"].(map[string]any); ok {
		b.Holder.Host, _ = h["host"].(string)
		b.Holder.WorkDir, _ = h["work_dir"].(string)
		b.Holder.Run, _ = h["run"].(string)
		b.Holder.PID = int(num(h, "pid"))
	}
	if b.ProposalID < 1 {
		return b, errors.New("proposal_id is not an integer >= 1")
	}
	return b, nil
}

// apply folds one lease event into ls, refusing an event that does not
// follow from the state before it.
func (ls *Lease) apply(body []byte) error {
	b, err := parseLeaseBody(body)
	if err != nil {
		return err
	}
	if b.ProposalID != ls.Proposal {
		return fmt.Errorf("body names proposal %d, the row %d", b.ProposalID, ls.Proposal)
	}
	var at time.Time
	if b.EventType != EventLeaseReleased {
		if at, err = time.Parse(time.RFC3339, b.At); err != nil {
			return fmt.Errorf("at %q: %v", b.At, err)
		}
	}
	switch b.EventType {
	case EventLeaseTaken:
		if ls.Live {
			return errors.New("a lease taken while another is live")
		}
		exp, err := time.Parse(time.RFC3339, b.ExpiresAt)
		if err != nil || !exp.After(at) {
			return fmt.Errorf("expires_at %q is not a time after %q", b.ExpiresAt, b.At)
		}
		if b.Attempt != ls.Attempts+1 {
			return fmt.Errorf("attempt %d, want %d", b.Attempt, ls.Attempts+1)
		}
		ls.Live, ls.Holder, ls.TakenAt, ls.ExpiresAt, ls.Attempts = true, b.Holder, at, exp, b.Attempt
	case EventLeaseRenewed:
		if !ls.Live || b.Holder != ls.Holder {
			return errors.New("renews no live lease of its holder")
		}
		exp, err := time.Parse(time.RFC3339, b.ExpiresAt)
		if err != nil || !exp.After(at) {
			return fmt.Errorf("expires_at %q is not a time after %q", b.ExpiresAt, b.At)
		}
		ls.ExpiresAt = exp
	case EventLeaseReleased:
		if !ls.Live || b.Holder != ls.Holder {
			return errors.New("releases no live lease of its holder")
		}
		ls.Live = false
	case EventLeaseReclaimed:
		if b.Attempt != ls.Lost+1 {
			return fmt.Errorf("lost attempt %d, want %d", b.Attempt, ls.Lost+1)
		}
		ls.Live, ls.Lost, ls.NotBefore = false, b.Attempt, time.Time{}
		if b.NotBefore != "" {
			if ls.NotBefore, err = time.Parse(time.RFC3339, b.NotBefore); err != nil {
				return fmt.Errorf("not_before %q: %v", b.NotBefore, err)
			}
		}
	default:
		return fmt.Errorf("unknown lease event %q", b.EventType)
	}
	return nil
}

// appendLease chains one lease event in t.
func appendLease(ctx context.Context, t *sql.Tx, id int64, eventType string, fields map[string]any) error {
	h, err := headOf(ctx, t, leaseChain)
	if err != nil {
		return err
	}
	fields["proposal_id"] = id
	ev, err := nextEvent(leaseChain.domain, h, eventType, fields)
	if err != nil {
		return err
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO lease_events (sequence, event_type, previous_event_digest, body, digest, proposal_id) VALUES (?, ?, ?, ?, ?, ?)`,
		ev.Sequence, ev.EventType, ev.PreviousEventDigest, string(ev.Body), ev.Digest, id); err != nil {
		return fmt.Errorf("insert lease event %d: %w", ev.Sequence, err)
	}
	return nil
}

func holderFields(h Holder) map[string]any {
	return map[string]any{"host": h.Host, "pid": h.PID, "run": h.Run, "work_dir": h.WorkDir}
}

// TakeLease moves proposal id from published into flight (screening)
// under a lease held by h from now until now+p.Term, in one transaction.
// It is refused with a *LeasedError when another run's lease is live,
// and with ErrBackingOff before the back-off of a lost attempt ends.
//
// The holder is this process (Self) with workDir, the run's work
// directory, recorded for whoever reclaims the lease.
func (l *Ledger) TakeLease(ctx context.Context, id int64, workDir string, now time.Time, p LeasePolicy) (Lease, error) {
	h := l.self
	h.WorkDir = workDir
	if err := h.validate(); err != nil {
		return Lease{}, err
	}
	if err := p.validate(); err != nil {
		return Lease{}, err
	}
	now = now.UTC().Truncate(time.Second)
	var out Lease
	err := l.tx(ctx, func(t *sql.Tx) error {
		ls, err := l.leaseOf(ctx, t, id)
		if err != nil {
			return err
		}
		if ls.Live {
			return &LeasedError{Lease: ls}
		}
		if now.Before(ls.NotBefore) {
			return fmt.Errorf("proposal %d: %w until %s (%d of %d attempts lost)", id, ErrBackingOff, stamp(ls.NotBefore), ls.Lost, p.MaxAttempts)
		}
		pr, err := l.proposal(ctx, t, id)
		if err != nil {
			return err
		}
		if pr.Status != Published {
			return fmt.Errorf("%w: proposal %d is %s; a lease is taken on a published proposal", ErrIllegal, id, pr.Status)
		}
		exp := now.Add(p.Term)
		if err := appendLease(ctx, t, id, EventLeaseTaken, map[string]any{
			"holder": holderFields(h), "at": stamp(now), "expires_at": stamp(exp), "attempt": ls.Attempts + 1,
		}); err != nil {
			return err
		}
		if err := l.transition(ctx, t, pr, Screening, ""); err != nil {
			return err
		}
		out = ls
		out.Live, out.Holder, out.TakenAt, out.ExpiresAt, out.Attempts = true, h, now, exp, ls.Attempts+1
		return nil
	})
	if err != nil {
		return Lease{}, err
	}
	return out, nil
}

// RenewLease extends this writer's live lease on proposal id to
// now+p.Term, so a run longer than one term keeps its proposal. It is
// refused when the lease is not live or not this writer's (a run on
// another host reclaimed it after it expired).
func (l *Ledger) RenewLease(ctx context.Context, id int64, now time.Time, p LeasePolicy) (Lease, error) {
	if err := p.validate(); err != nil {
		return Lease{}, err
	}
	now = now.UTC().Truncate(time.Second)
	var out Lease
	err := l.tx(ctx, func(t *sql.Tx) error {
		ls, err := l.leaseOf(ctx, t, id)
		if err != nil {
			return err
		}
		if !ls.Live || ls.Holder.Host != l.self.Host || ls.Holder.PID != l.self.PID || ls.Holder.Run != l.self.Run {
			return fmt.Errorf("%w: proposal %d: no live lease of %s to renew (live %v, holder %s)", ErrIllegal, id, l.self, ls.Live, ls.Holder)
		}
		exp := now.Add(p.Term)
		if err := appendLease(ctx, t, id, EventLeaseRenewed, map[string]any{
			"holder": holderFields(ls.Holder), "at": stamp(now), "expires_at": stamp(exp),
		}); err != nil {
			return err
		}
		out = ls
		out.ExpiresAt = exp
		return nil
	})
	if err != nil {
		return Lease{}, err
	}
	return out, nil
}

// Reclaimed says what Reclaim did with a proposal.
type Reclaimed struct {
	Proposal int64  `json:"proposal"`
	Was      Status `json:"was"`
	Cause    string `json:"cause"`
	Holder   Holder `json:"holder"`
	// Lost is this lost attempt's number; Status where the proposal went:
	// published (back in the queue, not before NotBefore) or no_decision
	// (Policy.MaxAttempts reached).
	Lost      int       `json:"lost"`
	Status    Status    `json:"status"`
	Reason    string    `json:"reason"`
	NotBefore time.Time `json:"not_before"`
}

// Reclaim ends the lease on proposal id, which must be in flight, as a
// lost attempt with cause (CauseExpired, CauseHolderGone, CauseRunFailed,
// CauseNoLease; detail says more, may be empty). In one transaction it
// records the reclaim and moves the proposal back to published with a
// back-off, or, once p.MaxAttempts attempts are lost, to no_decision with
// an infrastructure reason. It does not judge the cause: Stale does.
func (l *Ledger) Reclaim(ctx context.Context, id int64, cause, detail string, now time.Time, p LeasePolicy) (*Reclaimed, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	now = now.UTC().Truncate(time.Second)
	var out *Reclaimed
	err := l.tx(ctx, func(t *sql.Tx) error {
		pr, err := l.proposal(ctx, t, id)
		if err != nil {
			return err
		}
		if !leased(pr.Status) {
			return fmt.Errorf("%w: proposal %d is %s, not in flight: nothing to reclaim", ErrIllegal, id, pr.Status)
		}
		ls, err := l.leaseOf(ctx, t, id)
		if err != nil {
			return err
		}
		r := &Reclaimed{Proposal: id, Was: pr.Status, Cause: cause, Holder: ls.Holder, Lost: ls.Lost + 1}
		if !ls.Live {
			r.Holder = Holder{}
		}
		why := cause
		if detail != "" {
			why += ": " + detail
		}
		fields := map[string]any{"holder": holderFields(r.Holder), "at": stamp(now), "attempt": r.Lost, "cause": cause,
			"max_attempts": p.MaxAttempts, "status": string(pr.Status)}
		if r.Lost < p.MaxAttempts {
			r.NotBefore = now.Add(p.backoff(r.Lost))
			r.Status = Published
			r.Reason = fmt.Sprintf("lease_reclaimed: attempt %d of %d ended without a verdict while %s (%s); back in the queue from %s",
				r.Lost, p.MaxAttempts, pr.Status, why, stamp(r.NotBefore))
			fields["not_before"] = stamp(r.NotBefore)
		} else {
			r.Status = NoDecision
			r.Reason = fmt.Sprintf("infrastructure: %d evaluation attempts ended without a verdict (the last while %s: %s)", r.Lost, pr.Status, why)
		}
		fields["outcome"] = string(r.Status)
		if err := appendLease(ctx, t, id, EventLeaseReclaimed, fields); err != nil {
			return err
		}
		if err := l.transition(ctx, t, pr, r.Status, r.Reason); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// InFlight is a proposal in flight with its lease, and whether it is
// stale: past its lease, or leased by a run that is provably gone.
type InFlight struct {
	Proposal int64  `json:"proposal"`
	Status   Status `json:"status"`
	Lease    Lease  `json:"lease"`
	// Cause is why the proposal is stale (a Cause* constant), "" while
	// its lease is live.
	Cause string `json:"cause"`
}

// Stale lists every proposal in flight, each with its lease and, when its
// run is gone, the cause. The caller holds the writer lock (Self): a lease
// held on this host by another run is of a run that died, since every
// evaluating run holds the lock for its whole run; a lease held on another
// host is stale only once it expires.
func (l *Ledger) Stale(ctx context.Context, now time.Time) ([]InFlight, error) {
	self := l.self
	rows, err := l.db.QueryContext(ctx, `SELECT id, status FROM proposals WHERE status IN (?, ?, ?, ?) ORDER BY id`,
		string(Screening), string(Promoted), string(Qualifying), string(ReproductionPending))
	if err != nil {
		return nil, classify(err)
	}
	var out []InFlight
	for rows.Next() {
		var f InFlight
		var s string
		if err := rows.Scan(&f.Proposal, &s); err != nil {
			rows.Close()
			return nil, classify(err)
		}
		f.Status = Status(s)
		out = append(out, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	for i := range out {
		f := &out[i]
		if f.Lease, err = l.leaseOf(ctx, l.db, f.Proposal); err != nil {
			return nil, err
		}
		switch {
		case !f.Lease.Live:
			f.Cause = CauseNoLease
		case !now.Before(f.Lease.ExpiresAt):
			f.Cause = CauseExpired
		case f.Lease.Holder.Host == self.Host && (f.Lease.Holder.PID != self.PID || f.Lease.Holder.Run != self.Run):
			f.Cause = CauseHolderGone
		}
	}
	return out, nil
}

// releaseIfLeaving releases the live lease on pr in t when pr leaves
// flight for to by its run's own transition (a verdict, a hold).
func (l *Ledger) releaseIfLeaving(ctx context.Context, t *sql.Tx, pr *Proposal, to Status) error {
	if !leased(pr.Status) || leased(to) {
		return nil
	}
	ls, err := l.leaseOf(ctx, t, pr.ID)
	if err != nil || !ls.Live {
		return err
	}
	return appendLease(ctx, t, pr.ID, EventLeaseReleased, map[string]any{
		"holder": holderFields(ls.Holder), "status": string(to),
	})
}

// checkLeases verifies that every lease event's proposal_id column is its
// body's, that every proposal's lease events fold, and that no proposal
// out of flight holds a live lease.
func (l *Ledger) checkLeases(ctx context.Context, r *Report) error {
	rows, err := l.db.QueryContext(ctx, `SELECT sequence, proposal_id, body FROM lease_events ORDER BY sequence`)
	if err != nil {
		return classify(err)
	}
	ids := map[int64]bool{}
	var order []int64
	for rows.Next() {
		var seq, id int64
		var body string
		if err := rows.Scan(&seq, &id, &body); err != nil {
			rows.Close()
			return classify(err)
		}
		if b, err := parseLeaseBody([]byte(body)); err != nil || b.ProposalID != id {
			r.Problems = append(r.Problems, fmt.Sprintf("lease chain: event %d: its proposal_id column %d is not its body's", seq, id))
		}
		if !ids[id] {
			ids[id] = true
			order = append(order, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	for _, id := range order {
		ls, err := foldLease(ctx, l.db, Lease{Proposal: id}, 0)
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("proposal %d: %v", id, err))
			continue
		}
		p, err := l.proposal(ctx, l.db, id)
		if err != nil {
			return err
		}
		if ls.Live && !leased(p.Status) {
			r.Problems = append(r.Problems, fmt.Sprintf("proposal %d is %s, yet the lease of %s is live", id, p.Status, ls.Holder))
		}
	}
	return nil
}
