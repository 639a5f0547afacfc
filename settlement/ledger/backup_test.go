package ledger

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestBackupHoldsWhatIsStillInTheLog: with the writer still open (its last
// commits in the write-ahead log, where a plain copy of the database file
// misses them), the backup holds every committed row, checks, and is
// refused over an existing file.
func TestBackupHoldsWhatIsStillInTheLog(t *testing.T) {
	ctx := context.Background()
	path := ledgerPath(t)
	l := openNew(t, path)
	for i, hk := range []string{"hk1", "hk2"} {
		if _, err := l.Intake(ctx, snapshot(t, writeBundle(t, hk)), request(hk, int64(10+i))); err != nil {
			t.Fatal(err)
		}
	}
	// What a plain copy of the file alone gets: the log's commits are not
	// in it yet.
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no write-ahead log beside the open ledger: %v", err)
	}
	out := filepath.Join(t.TempDir(), "backup.db")
	report, err := l.Backup(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if report.Counts.Proposals != 2 {
		t.Fatalf("the backup's check counts %d proposals, want 2", report.Counts.Proposals)
	}
	for _, leftover := range []string{out + "-wal", out + ".lock"} {
		if _, err := os.Stat(leftover); err == nil {
			t.Errorf("%s left beside the backup", leftover)
		}
	}
	if _, err := l.Backup(ctx, out); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second backup over the first: %v, want fs.ErrExist", err)
	}
	b, err := Open(ctx, out, Options{})
	if err != nil {
		t.Fatalf("the backup does not open: %v", err)
	}
	defer b.Close()
	r, err := b.Check(ctx)
	if err != nil || r.Counts.Proposals != 2 {
		t.Fatalf("the backup: %+v, %v", r.Counts, err)
	}
}
