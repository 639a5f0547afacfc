package ledger

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// schema6Ledger writes the schema 6 ledger of
// testdata/schema6-checkpointed.sql (a checkpoint at row record 7, written
// by the schema 6 build) to a fresh path and returns it.
func schema6Ledger(t *testing.T) string {
	t.Helper()
	dump, err := os.ReadFile("testdata/schema6-checkpointed.sql")
	if err != nil {
		t.Fatal(err)
	}
	path := ledgerPath(t)
	db := rawDB(t, path)
	if _, err := db.Exec(string(dump)); err != nil {
		t.Fatal(err)
	}
	var version, cp int
	if err := db.QueryRow(`SELECT (SELECT max(version) FROM schema_version), (SELECT max(record_sequence) FROM checkpoints)`).Scan(&version, &cp); err != nil || version != 6 || cp != 7 {
		t.Fatalf("the fixture is at schema %d with its checkpoint at row record %d (%v), want 6 and 7", version, cp, err)
	}
	db.Close()
	return path
}

// TestASchema6CheckpointedLedgerUpgrades: a ledger the schema 6 build
// wrote, with a checkpoint, opens under this build and migrates: schema 7
// binds its transitions in a schema_upgrade record after the checkpoint.
// The quick check then runs from the schema 6 checkpoint and agrees with
// the full check, the lease state the checkpoint recorded still holds, a
// write's check is the quick one, and clearing its copy verdict records a
// checkpoint of this build. An edit schema 6 could not see, a live
// proposal's status with its last transition, is refused by the quick
// check from the old checkpoint.
func TestASchema6CheckpointedLedgerUpgrades(t *testing.T) {
	ctx := context.Background()
	if SchemaVersion() <= 6 {
		t.Skipf("schema %d: no newer schema to upgrade to", SchemaVersion())
	}
	t.Run("as written", func(t *testing.T) {
		l, err := Open(ctx, schema6Ledger(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if l.cp.record.Sequence != 7 {
			t.Fatalf("the latest checkpoint after the upgrade is %+v, want row record 7", l.cp.record)
		}
		recs, err := eventsOf(ctx, l.db, recordChain, 10, 0)
		if err != nil || len(recs) != 1 || recs[0].EventType != RecordSchemaUpgrade || !strings.Contains(string(recs[0].Body), `"proposal_transitions":{"1/1"`) {
			t.Fatalf("row records after the schema 6 ones: %v (%v), want one schema_upgrade binding the transitions", recs, err)
		}
		quick, err := l.Check(ctx)
		if err != nil || quick.Full || quick.Checkpoint.Sequence != 7 || quick.SchemaVersion != SchemaVersion() || quick.Counts.Proposals != 5 {
			t.Fatalf("quick check after the upgrade: %+v (%v)", quick, err)
		}
		full, err := l.CheckFull(ctx)
		if err != nil || full.Head != quick.Head || full.RecordHead != quick.RecordHead {
			t.Fatalf("full check %+v against quick %+v (%v)", full, quick, err)
		}
		// Proposal 1's lost attempt, recorded in the checkpoint, still
		// counts.
		if ls, err := l.LeaseOf(ctx, 1); err != nil || ls.Live || ls.Attempts != 1 || ls.Lost != 1 || ls.NotBefore.IsZero() {
			t.Fatalf("proposal 1's lease after the upgrade: %+v (%v)", ls, err)
		}
		if r, err := l.CheckBeforeWrite(ctx); err != nil || r.Full || r.Checkpoint.Sequence != 7 {
			t.Fatalf("the check before a write: full %v from %+v (%v), want the quick one from 7", r.Full, r.Checkpoint, err)
		}
		p, _, err := l.ClearCopy(ctx, 4, "the authors are one team")
		if err != nil || p.Status != Published {
			t.Fatalf("clearing proposal 4's copy verdict: %+v (%v)", p, err)
		}
		r, err := l.Check(ctx)
		if err != nil || r.Full || r.Checkpoint.Sequence <= 10 {
			t.Fatalf("quick check after the clearing: full %v from %+v (%v), want a checkpoint after the upgrade", r.Full, r.Checkpoint, err)
		}
	})
	t.Run("a live proposal's status edited with its last transition", func(t *testing.T) {
		path := schema6Ledger(t)
		l, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		if _, err := rawDB(t, path).Exec(`UPDATE proposals SET status = 'qualified' WHERE id = 1;
			UPDATE proposal_transitions SET to_status = 'qualified' WHERE proposal_id = 1 AND seq = (SELECT max(seq) FROM proposal_transitions WHERE proposal_id = 1)`); err != nil {
			t.Fatal(err)
		}
		l, err = Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		r, err := l.Check(ctx)
		if !errors.Is(err, ErrRefused) || r.Full || r.Checkpoint.Sequence != 7 || !strings.Contains(err.Error(), "proposal_transitions row 1/") {
			t.Fatalf("quick check from the schema 6 checkpoint: full %v from %+v: %v; want a refusal naming proposal 1's last transition", r.Full, r.Checkpoint, err)
		}
	})
}
