package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/internal/writerlock"
)

var (
	// ErrLocked is returned by Open while another process is the writer.
	// It is not a rejection: the ledger is fine, it is only busy.
	ErrLocked = errors.New("ledger is locked by another writer")
	// ErrRefused is the root of every reason a ledger file is refused: not
	// a database, corrupt, a newer or different schema, a broken chain.
	ErrRefused = reject.New("ledger refused")
	// ErrIllegal is the root of every refused write: an illegal status
	// transition, a chain that does not extend the head, a stale stack.
	ErrIllegal = reject.New("ledger write refused")
)

// Options configure Open.
type Options struct {
	// Create makes a new ledger when none exists at the path; without it a
	// missing file is fs.ErrNotExist.
	Create bool
	// Fault, when set, is called with the name of each step of Commit
	// (CommitSteps) and Intake as it is reached. It exists for crash
	// tests, which kill the process there; nothing else sets it.
	Fault func(step string)
	// Host is the name this writer's leases give its host (Self); empty
	// is os.Hostname. Writers on several machines that share a ledger
	// need names that tell the machines apart.
	Host string
}

// Ledger is an open ledger and its writer lock. It is not safe for use by
// several goroutines at once: it is one writer.
type Ledger struct {
	path string
	db   *sql.DB
	lock *writerlock.Lock
	// self is this writer as a lease holder.
	self Holder
	// cp is the latest checkpoint, read at Open and replaced by
	// Checkpoint: the one writer is the only one to write one.
	cp checkpoint
	// checkedAt is the record head of the last checkpoint this writer
	// recorded itself (zero before any): while it is still the record
	// chain's head, nothing was written since that full check.
	checkedAt Head
	// checkpointEvery, when positive, replaces AutoCheckpointRecords
	// (CheckBeforeWrite). Only this package's tests set it, to cross the
	// threshold with a small ledger.
	checkpointEvery int

	// fault, when set, is called at each named step of Commit and Intake.
	// Only this package's tests set it (to kill the process there).
	fault func(step string)
}

// Path is the ledger file.
func (l *Ledger) Path() string { return l.path }

// PublicationsDir is where intake bytes are published beside the ledger.
func (l *Ledger) PublicationsDir() string { return l.path + ".publications" }

// Open opens the ledger at path as its only writer: it takes the writer
// lock, applies pending migrations and verifies the settlement chain.
func Open(ctx context.Context, path string, o Options) (*Ledger, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !o.Create:
		return nil, fmt.Errorf("open ledger %s: %w", path, fs.ErrNotExist)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	case err == nil && fi.Size() == 0:
		// SQLite would take an empty file for a new database and write a
		// fresh ledger into it: a ledger lost to a truncation would come
		// back empty and "ok". A ledger is made only where no file is.
		return nil, fmt.Errorf("open ledger %s: %w: an empty file is not a ledger (a new ledger is made only where no file is; restore a backup once `cacheon ledger check --full --ledger BACKUP` accepts it)", path, ErrRefused)
	}
	existed := err == nil
	lock, err := writerlock.Acquire(abs + ".lock")
	var held *writerlock.HeldError
	if errors.As(err, &held) {
		return nil, fmt.Errorf("open ledger %s: %w: %s", path, ErrLocked, held)
	}
	if err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	self, err := newHolder(o.Host)
	if err != nil {
		lock.Release()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	l := &Ledger{path: abs, lock: lock, fault: o.Fault, self: self}
	if err := l.open(ctx, existed); err != nil {
		l.Close()
		return nil, fmt.Errorf("open ledger %s: %w", path, err)
	}
	return l, nil
}

// open opens the database; existed says a file was there before, which
// must then already be a ledger: its schema is never written into a
// foreign database.
func (l *Ledger) open(ctx context.Context, existed bool) error {
	if existed {
		if err := isLedger(ctx, l.path); err != nil {
			return err
		}
	}
	q := url.Values{}
	// busy_timeout first: a write that cannot take the database lock fails
	// at once rather than waiting behind a writer that bypassed the flock.
	q.Add("_pragma", "busy_timeout(0)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	// FULL: a commit the caller was told about survives power loss too.
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+l.path+"?"+q.Encode())
	if err != nil {
		return err
	}
	// One connection: the pragmas hold for every statement and the writer
	// never races itself.
	db.SetMaxOpenConns(1)
	l.db = db
	if err := db.PingContext(ctx); err != nil {
		return classify(err)
	}
	var fk int
	if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		return classify(err)
	}
	if fk != 1 {
		return errors.New("the SQLite driver did not turn foreign keys on")
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return classify(err)
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	if err := migrate(ctx, db); err != nil {
		return err
	}
	// The chains are verified from the latest checkpoint: what came
	// before it was verified by the full check that wrote it.
	cp, err := latestCheckpoint(ctx, db)
	if err != nil {
		return err
	}
	l.cp = cp
	for _, c := range []chain{settlementChain, intakeChain, leaseChain} {
		if _, err := verifyChainFrom(ctx, db, c, cp.from(c)); err != nil {
			return err
		}
	}
	return nil
}

// Self is this writer as a lease holder: its host, its pid and a run
// identity of its own.
func (l *Ledger) Self() Holder { return l.self }

func newHolder(host string) (Holder, error) {
	if host == "" {
		h, err := os.Hostname()
		if err != nil {
			return Holder{}, fmt.Errorf("host name for leases: %w", err)
		}
		host = h
	}
	var run [8]byte
	if _, err := rand.Read(run[:]); err != nil {
		return Holder{}, err
	}
	return Holder{Host: host, PID: os.Getpid(), Run: hex.EncodeToString(run[:])}, nil
}

// Close releases the database and the writer lock.
func (l *Ledger) Close() error {
	var err error
	if l.db != nil {
		err = l.db.Close()
		l.db = nil
	}
	if e := l.lock.Release(); err == nil {
		err = e
	}
	return err
}

func (l *Ledger) at(step string) {
	if l.fault != nil {
		l.fault(step)
	}
}

// classify turns SQLite's verdicts on the file itself into refusals (a
// damaged or foreign file is a rejected input, exit 2) and a busy database
// into an error naming why; anything else passes through.
func classify(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: the file is damaged or not a ledger: %v", ErrRefused, err)
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("%w: another connection holds the database write lock: %v", ErrLocked, err)
	}
	return err
}

// tx runs fn in one BEGIN IMMEDIATE transaction and commits it; any error
// rolls everything back.
func (l *Ledger) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	t, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	if err := fn(t); err != nil {
		t.Rollback()
		return classify(err)
	}
	if err := t.Commit(); err != nil {
		return classify(err)
	}
	return nil
}

// isLedger checks, read-only, that the database at path holds the
// ledger's schema before anything opens it for writing: the writer's
// connection switches the journal to WAL and migrates, which would write
// into a foreign database.
func isLedger(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(0)")
	if err != nil {
		return err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").Scan(&n); err != nil {
		return classify(err)
	}
	if n != 1 {
		return fmt.Errorf("%w: a SQLite database without the ledger's schema (no schema_version table): not a ledger, or one whose creation was interrupted before it held anything", ErrRefused)
	}
	return nil
}
