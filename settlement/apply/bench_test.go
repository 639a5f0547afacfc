package apply_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/apply/applytest"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle/settletest"
)

// queued1000 is a ledger template holding 1,000 qualified proposals
// against one incumbent: nine in ten at norm.rmsnorm, one in ten at
// activation.silu_and_mul, and one in ten of all measured over an older
// incumbent. Building it takes most of the benchmark's setup, so it is
// built once.
var queued1000 struct {
	once          sync.Once
	path, ws      string
	err           error
	cleanup       func()
	proposalCount int
}

func buildQueued1000(b *testing.B) {
	dir, err := os.MkdirTemp("", "apply-bench-")
	if err != nil {
		queued1000.err = err
		return
	}
	queued1000.cleanup = func() { os.RemoveAll(dir) }
	ws := applytest.Workspace(b, "../..")
	// The workspace copy is removed with this first benchmark run; keep
	// one of our own for every later run.
	keep := filepath.Join(dir, "ws")
	if err := os.CopyFS(keep, os.DirFS(ws)); err != nil {
		queued1000.err = err
		return
	}
	path := filepath.Join(dir, "ledger.db")
	f := applytest.New(b, keep, path)
	rms := f.Intake(b, "rmsnorm_torch", "5Frms0", 1000)
	silu := f.Intake(b, "silu_and_mul_torch", "5Fsilu0", 1001)
	for i := 0; i < 1000; i++ {
		base := rms
		if i%10 == 9 {
			base = silu
		}
		in := base
		if i != 0 && i != 9 {
			in = f.Again(b, base, fmt.Sprintf("5Fhot%04d", i), int64(2000+i))
		}
		if i%10 == 3 {
			in.Candidate.IncumbentStack = settletest.Digest("an older incumbent")
		}
		// Speedups from 1.1 to about 1.2: one greatest current rms row.
		sp := strings.TrimRight(fmt.Sprintf("1.%04d", 1000+i%997), "0")
		in.Candidate.Speedups = [2]string{sp, sp}
		x, y := settletest.Pair(fmt.Sprintf("bench%d", i), in.Candidate)
		f.Qualify(b, in.ID, x, y)
	}
	// Closed, the ledger is all in its file (the WAL checkpointed).
	if err := f.L.Close(); err != nil {
		queued1000.err = err
		return
	}
	queued1000.path, queued1000.ws, queued1000.proposalCount = path, keep, 1000
}

// copyLedger copies the closed template to a fresh ledger file whose
// publications are the template's.
func copyLedger(b *testing.B, src, dir string) string {
	dst := filepath.Join(dir, "ledger.db")
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink(src+".publications", dst+".publications"); err != nil {
		b.Fatal(err)
	}
	return dst
}

// BenchmarkSettle1000 settles 1,000 queued candidates against one
// incumbent: reading the queue and every settlement view, pairing,
// planning, rendering and assembling the winner's stack, and committing
// the events, stack, claim and 1,000 outcomes (999 holds) in one
// transaction with synchronous=FULL.
func BenchmarkSettle1000(b *testing.B) {
	queued1000.once.Do(func() { buildQueued1000(b) })
	if queued1000.err != nil {
		b.Fatal(queued1000.err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := copyLedger(b, queued1000.path, b.TempDir())
		l, err := ledger.Open(ctx, path, ledger.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := apply.Settle(ctx, l, apply.Options{Workspace: queued1000.ws, Payload: applytest.Payload})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if !res.Committed || res.Winner == 0 || len(res.Rows) != queued1000.proposalCount {
			b.Fatalf("committed %v, winner %d, %d rows", res.Committed, res.Winner, len(res.Rows))
		}
		l.Close()
		b.StartTimer()
	}
}

// TestMain removes the benchmark's template ledger after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if queued1000.cleanup != nil {
		queued1000.cleanup()
	}
	os.Exit(code)
}
