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
