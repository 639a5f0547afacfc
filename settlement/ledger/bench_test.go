package ledger

import (
	"context"
	"fmt"
	"os"
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

// copyLedger copies the closed ledger at path (and its write-ahead log,
// if any is left) to a fresh path and returns it.
func copyLedger(b *testing.B, path string) string {
	b.Helper()
	out := ledgerPath(b)
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(path + suffix)
		if suffix != "" && os.IsNotExist(err) {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(out+suffix, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return out
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
// command that acts on the ledger runs first (weights, stack export; the
// writers ran it too before CheckBeforeWrite). Each runs on the ledger as
// built (no checkpoint: Check replays everything), then after a
// checkpoint ("cp/"), where "cp/open+full" is Open and CheckFull, what
// `ledger check --full` replays. "noop-settle" is open+check and the
// ledger reads of a settle with nothing queued (apply.Settle:
// SettlementQueue, CurrentStack, Undecided), which settlement/apply cannot
// be imported here to run.
//
// "write/first" is Open and CheckBeforeWrite, the check a writer (settle,
// qualify --ledger, intake add) runs, on a copy of the ledger as built:
// past AutoCheckpointRecords chain records it is the full check and a new
// checkpoint, below it the check that replays everything (a ledger with
// no checkpoint). "write/later" is the same on the ledger after that
// first write: the quick check from the checkpoint it recorded, if any.
func BenchmarkHistory(b *testing.B) {
	ctx := context.Background()
	once := func(b *testing.B, path string, check func(*Ledger, context.Context) (*Report, error), settle bool) {
		l, err := Open(ctx, path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
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
	}
	run := func(path string, check func(*Ledger, context.Context) (*Report, error), settle bool) func(*testing.B) {
		return func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				once(b, path, check, settle)
			}
		}
	}
	for _, n := range []int{250, 1000, 2000} {
		b.Run(fmt.Sprintf("crowns=%d", n), func(b *testing.B) {
			path := crownHistory(b, n)
			b.Run("open", run(path, nil, false))
			b.Run("open+check", run(path, (*Ledger).Check, false))
			b.Run("noop-settle", run(path, (*Ledger).Check, true))
			b.Run("write/first", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					first := copyLedger(b, path)
					b.StartTimer()
					once(b, first, (*Ledger).CheckBeforeWrite, false)
				}
			})
			once(b, path, (*Ledger).CheckBeforeWrite, false)
			b.Run("write/later", run(path, (*Ledger).CheckBeforeWrite, false))
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
