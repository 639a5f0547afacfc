package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	leaseT0     = time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	leasePolicy = LeasePolicy{Term: time.Hour, MaxAttempts: 2, Backoff: 5 * time.Minute}
)

// leasedLedger returns a ledger at path holding one published proposal,
// written by this host.
func leasedLedger(t *testing.T) (string, int64) {
	t.Helper()
	path := ledgerPath(t)
	l := openNew(t, path)
	res, err := l.Intake(context.Background(), snapshot(t, writeBundle(t, "lease")), request("hk", 10))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return path, res.Proposal.ID
}

func reopen(t *testing.T, path, host string) *Ledger {
	t.Helper()
	l, err := Open(context.Background(), path, Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestLeaseRefusals: a second lease on a proposal whose lease is live is
// refused naming the holder and the expiry; a lease during the back-off of
// a lost attempt is refused naming its end; a lease on a proposal that is
// not published is illegal; and a proposal in flight goes back to the
// queue only through Reclaim.
func TestLeaseRefusals(t *testing.T) {
	ctx := context.Background()
	path, id := leasedLedger(t)
	l := reopen(t, path, "gpu-7")
	if _, err := l.TakeLease(ctx, id, "/work/run1", leaseT0, leasePolicy); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		do   func() error
		is   error
		want string
	}{
		{"a live lease", func() error { _, err := l.TakeLease(ctx, id, "", leaseT0.Add(59*time.Minute), leasePolicy); return err },
			ErrLeased, "leased by gpu-7 pid"},
		{"its expiry", func() error { _, err := l.TakeLease(ctx, id, "", leaseT0, leasePolicy); return err },
			ErrLeased, "until 2026-12-06T04:00:00Z (attempt 1)"},
		{"back to the queue by hand", func() error { return l.Transition(ctx, id, Published, "") },
			ErrIllegal, "only a lease reclaim"},
		{"a reclaim of a proposal out of flight", func() error {
			if err := l.Transition(ctx, id, Held, "operator"); err != nil {
				return err
			}
			_, err := l.Reclaim(ctx, id, CauseExpired, "", leaseT0, leasePolicy)
			return err
		}, ErrIllegal, "not in flight"},
		{"a lease on a held proposal", func() error { _, err := l.TakeLease(ctx, id, "", leaseT0, leasePolicy); return err },
			ErrIllegal, "a lease is taken on a published proposal"},
		{"during the back-off", func() error {
			if err := l.Transition(ctx, id, Screening, ""); err != nil {
				return err
			}
			if _, err := l.Reclaim(ctx, id, CauseNoLease, "", leaseT0, leasePolicy); err != nil {
				return err
			}
			_, err := l.TakeLease(ctx, id, "", leaseT0.Add(5*time.Minute-time.Second), leasePolicy)
			return err
		}, ErrBackingOff, "until 2026-12-06T03:05:00Z (1 of 2 attempts lost)"},
	} {
		err := c.do()
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.is, c.want)
		}
	}
	// The lease a held proposal's transition released, and the reclaim,
	// leave a ledger that checks; the back-off over, a lease is taken.
	if _, err := l.Check(ctx); err != nil {
		t.Fatal(err)
	}
	ls, err := l.TakeLease(ctx, id, "", leaseT0.Add(5*time.Minute), leasePolicy)
	if err != nil || ls.Attempts != 2 || ls.Lost != 1 {
		t.Fatalf("lease after the back-off: %+v, %v", ls, err)
	}
	// The last attempt lost ends the proposal no_decision.
	r, err := l.Reclaim(ctx, id, CauseExpired, "", leaseT0.Add(2*time.Hour), leasePolicy)
	if err != nil || r.Status != NoDecision || r.Lost != 2 || !strings.HasPrefix(r.Reason, "infrastructure: 2 evaluation attempts ended without a verdict") {
		t.Fatalf("the last reclaim: %+v, %v", r, err)
	}
	if p, err := l.Proposal(ctx, id); err != nil || p.Status != NoDecision || p.Reason != r.Reason {
		t.Fatalf("proposal %+v, %v", p, err)
	}
}

// TestLeaseChainIsTamperEvident: every edit of the lease chain behind the
// writer's back is caught, by Open (a body or a link) or by Check (the
// index column, a lease left live by a deleted release).
func TestLeaseChainIsTamperEvident(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		sql    string
		onOpen bool
		want   string
	}{
		{"a later expiry", `UPDATE lease_events SET body = replace(body, '04:00:00Z', '09:00:00Z') WHERE sequence = 1`, true, "lease chain: event 1: digest"},
		{"another holder", `UPDATE lease_events SET body = replace(body, 'gpu-7', 'gpu-8') WHERE sequence = 1`, true, "lease chain: event 1: digest"},
		{"a lost attempt deleted", `DELETE FROM lease_events WHERE sequence = 2`, true, "lease chain: event 3 follows event 1"},
		{"the index column", `UPDATE lease_events SET proposal_id = proposal_id + 1 WHERE sequence = 3`, false, "its proposal_id column"},
		{"the release deleted", `DELETE FROM lease_events WHERE sequence = 4`, false, "yet the lease of gpu-7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, id := leasedLedger(t)
			l := reopen(t, path, "gpu-7")
			// taken, reclaimed, taken again, released by a hold.
			if _, err := l.TakeLease(ctx, id, "", leaseT0, leasePolicy); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Reclaim(ctx, id, CauseExpired, "", leaseT0.Add(time.Hour), leasePolicy); err != nil {
				t.Fatal(err)
			}
			if _, err := l.TakeLease(ctx, id, "", leaseT0.Add(2*time.Hour), leasePolicy); err != nil {
				t.Fatal(err)
			}
			if err := l.Transition(ctx, id, Held, "operator"); err != nil {
				t.Fatal(err)
			}
			if c.name == "the index column" {
				// A second proposal for the column to point at.
				if _, err := l.Intake(ctx, snapshot(t, writeBundle(t, "other")), request("hk2", 11)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.Check(ctx); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if _, err := rawDB(t, path).Exec(c.sql); err != nil {
				t.Fatal(err)
			}
			l, err := Open(ctx, path, Options{})
			if c.onOpen {
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Open: %v, want a refusal naming %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, err := l.Check(ctx); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check: %v, want a refusal naming %q", err, c.want)
			}
		})
	}
}

// TestRenewLease: the holder renews its live lease to a fresh term, which
// a run on another host then respects; a lease that is not the writer's,
// or not live, is not renewed, and an edited renewal is caught.
func TestRenewLease(t *testing.T) {
	ctx := context.Background()
	path, id := leasedLedger(t)
	l := reopen(t, path, "gpu-7")
	if _, err := l.TakeLease(ctx, id, "", leaseT0, leasePolicy); err != nil {
		t.Fatal(err)
	}
	ls, err := l.RenewLease(ctx, id, leaseT0.Add(50*time.Minute), leasePolicy)
	if err != nil || !ls.ExpiresAt.Equal(leaseT0.Add(110*time.Minute)) {
		t.Fatalf("renewed: %+v, %v", ls, err)
	}
	l.Close()
	other := reopen(t, path, "")
	if _, err := other.RenewLease(ctx, id, leaseT0.Add(time.Hour), leasePolicy); !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), "no live lease of") {
		t.Fatalf("another writer's renewal: %v", err)
	}
	fl, err := other.Stale(ctx, leaseT0.Add(109*time.Minute))
	if err != nil || len(fl) != 1 || fl[0].Cause != "" {
		t.Fatalf("in flight under the renewed lease: %+v, %v", fl, err)
	}
	if fl, err = other.Stale(ctx, leaseT0.Add(110*time.Minute)); err != nil || len(fl) != 1 || fl[0].Cause != CauseExpired {
		t.Fatalf("past the renewed lease: %+v, %v", fl, err)
	}
	if _, err := other.Reclaim(ctx, id, CauseExpired, "", leaseT0.Add(110*time.Minute), leasePolicy); err != nil {
		t.Fatal(err)
	}
	if _, err := other.CheckFull(ctx); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if _, err := rawDB(t, path).Exec(`UPDATE lease_events SET body = replace(body, '04:50:00Z', '09:50:00Z') WHERE event_type = 'lease_renewed'`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "lease chain: event 2: digest") {
		t.Fatalf("Open after an edited renewal: %v", err)
	}
}
