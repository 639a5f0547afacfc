package ledger

import (
	"context"
	"fmt"
	"testing"

	"github.com/cacheon/engine/kernels/bundle"
)

// BenchmarkIntake1000Proposals takes 1,000 reveals of distinct bundles into
// a fresh ledger: each one hashed, published (temporary tree, sync,
// re-verify, rename, re-read) and recorded in its own transaction.
func BenchmarkIntake1000Proposals(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	snaps := make([]*bundle.Snapshot, n)
	for i := range snaps {
		snaps[i] = snapshot(b, writeBundle(b, fmt.Sprint("bench", i)))
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l := openNew(b, ledgerPath(b))
		b.StartTimer()
		for j, s := range snaps {
			r := request(fmt.Sprint("hk", j), int64(j+1))
			if _, err := l.Intake(ctx, s, r); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "proposals/s")
}

// BenchmarkCommit1000Events commits 1,000 settlements of one event each
// (one transaction per settlement, synchronous=FULL) to a fresh ledger.
func BenchmarkCommit1000Events(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l := openNew(b, ledgerPath(b))
		b.StartTimer()
		var h Head
		for j := 0; j < n; j++ {
			e, err := NextEvent(h, "HOLD", map[string]any{"reason": "stale_incumbent", "candidate_digest": hex64(fmt.Sprint(j))})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Commit(ctx, Settlement{Events: []Event{e}}); err != nil {
				b.Fatal(err)
			}
			h = e.Head()
		}
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkOpenVerifies1000Events opens a ledger of 1,000 events: Open
// recomputes every digest of the chain.
func BenchmarkOpenVerifies1000Events(b *testing.B) {
	ctx := context.Background()
	path := ledgerPath(b)
	l := openNew(b, path)
	var events []Event
	var h Head
	for j := 0; j < 1000; j++ {
		e, err := NextEvent(h, "HOLD", map[string]any{"reason": "stale_incumbent", "candidate_digest": hex64(fmt.Sprint(j))})
		if err != nil {
			b.Fatal(err)
		}
		events, h = append(events, e), e.Head()
	}
	if _, err := l.Commit(ctx, Settlement{Events: events}); err != nil {
		b.Fatal(err)
	}
	l.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := Open(ctx, path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		l.Close()
	}
}

// BenchmarkCheck1000Crowns runs ledger check over a ledger of 1,000
// crowns (3,000 events, 1,001 stacks, 1,000 crowns, one standing claim
// replaced 1,000 times): integrity_check, the chains and, from schema 4,
// the fold of the row record chain against every bound row.
func BenchmarkCheck1000Crowns(b *testing.B) {
	ctx := context.Background()
	l := openNew(b, ledgerPath(b))
	if _, err := l.InitStack(ctx, stack(0)); err != nil {
		b.Fatal(err)
	}
	var h Head
	for n := 1; n <= 1000; n++ {
		rec, err := l.Commit(ctx, crownSettlement(b, h, n))
		if err != nil {
			b.Fatal(err)
		}
		h = rec.Head
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Check(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// crownHistory builds a ledger of n crowns (3n events, n+1 stacks, n
// crowns, one standing claim replaced n times) and returns its path.
func crownHistory(b *testing.B, n int) string {
	b.Helper()
	ctx := context.Background()
	path := ledgerPath(b)
	l := openNew(b, path)
	if _, err := l.InitStack(ctx, stack(0)); err != nil {
		b.Fatal(err)
	}
	var h Head
	for i := 1; i <= n; i++ {
		rec, err := l.Commit(ctx, crownSettlement(b, h, i))
		if err != nil {
			b.Fatal(err)
		}
		h = rec.Head
	}
	l.Close()
	return path
}

// BenchmarkHistory measures what a command pays on each open as the
// ledger's history grows: "open" is Open (the writer lock, migrations,
// the chains' verification), "open+check" is Open and the Check every
// command that acts on the ledger runs first (settle, weights, qualify
// --ledger, stack export). Each runs on the ledger as built (no
// checkpoint: Check replays everything), then after a checkpoint ("cp/"),
// where "cp/open+full" is Open and CheckFull, what `ledger check --full`
// replays. "noop-settle" is open+check and the ledger reads of a settle
// with nothing queued (apply.Settle: SettlementQueue, CurrentStack,
// Undecided), which settlement/apply cannot be imported here to run.
func BenchmarkHistory(b *testing.B) {
	ctx := context.Background()
	run := func(path string, check func(*Ledger, context.Context) (*Report, error), settle bool) func(*testing.B) {
		return func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				l, err := Open(ctx, path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if check != nil {
					if _, err := check(l, ctx); err != nil {
						b.Fatal(err)
					}
				}
				if settle {
					if _, err := l.SettlementQueue(ctx); err != nil {
						b.Fatal(err)
					}
					if _, err := l.CurrentStack(ctx); err != nil {
						b.Fatal(err)
					}
					if _, err := l.Undecided(ctx); err != nil {
						b.Fatal(err)
					}
				}
				l.Close()
			}
		}
	}
	for _, n := range []int{250, 1000, 2000} {
		b.Run(fmt.Sprintf("crowns=%d", n), func(b *testing.B) {
			path := crownHistory(b, n)
			b.Run("open", run(path, nil, false))
			b.Run("open+check", run(path, (*Ledger).Check, false))
			b.Run("noop-settle", run(path, (*Ledger).Check, true))
			l, err := Open(ctx, path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := l.Checkpoint(ctx); err != nil {
				b.Fatal(err)
			}
			l.Close()
			b.Run("cp/open", run(path, nil, false))
			b.Run("cp/open+check", run(path, (*Ledger).Check, false))
			b.Run("cp/noop-settle", run(path, (*Ledger).Check, true))
			b.Run("cp/open+full", run(path, (*Ledger).CheckFull, false))
		})
	}
}
