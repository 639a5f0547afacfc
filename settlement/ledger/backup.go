package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/internal/atomicwrite"
)

// Backup writes a consistent copy of the ledger to out, which must not
// exist, and returns the copy's check. A plain copy of the database file
// misses what is still in the write-ahead log (a committed settlement
// included); SQLite's VACUUM INTO copies the database as one transaction
// sees it, log included. The copy is checked as `ledger check --full`
// checks a ledger (ledger.Open and CheckFull, under its own lock: a
// backup is what a damaged ledger is restored from, so its whole history
// is replayed, checkpoint or not) before it is
// published at out atomically (mode 0600), so a backup that exists is
// one that opens.
func (l *Ledger) Backup(ctx context.Context, out string) (*Report, error) {
	if _, err := os.Lstat(out); err == nil {
		return nil, fmt.Errorf("backup %s: %w", out, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("backup %s: %w", out, err)
	}
	work, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".backup-*")
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", out, err)
	}
	defer os.RemoveAll(work)
	tmp := filepath.Join(work, "ledger.db")
	if _, err := l.db.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		return nil, fmt.Errorf("backup %s: %w", out, classify(err))
	}
	copied, err := Open(ctx, tmp, Options{})
	if err != nil {
		return nil, fmt.Errorf("backup %s: the copy does not open: %w", out, err)
	}
	report, err := copied.CheckFull(ctx)
	// Closing the last connection checkpoints the copy's log into its
	// database file, which then holds the whole ledger on its own.
	if cerr := copied.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return report, fmt.Errorf("backup %s: the copy fails its check: %w", out, err)
	}
	data, err := os.ReadFile(tmp)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", out, err)
	}
	if err := atomicwrite.CreateFile(out, data, 0o600); err != nil {
		return nil, fmt.Errorf("backup %s: %w", out, err)
	}
	return report, nil
}
