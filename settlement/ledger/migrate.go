package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema file.
type migration struct {
	version int
	name    string
	sql     string
	sha256  string
}

// migrations returns the embedded migrations in order. Their numbers must
// run 1, 2, 3, … without a gap: a gap is a build error, caught by a test.
func migrations() ([]migration, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_what.sql", name)
		}
		data, err := migrationFiles.ReadFile(path.Join("migrations", name))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		out = append(out, migration{version: v, name: name, sql: string(data), sha256: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected number %d", m.name, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the newest schema this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate applies every pending migration in order, each in its own
// transaction together with its schema_version row, after checking that
// the ones already applied are this build's.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY CHECK (version >= 1),
    name    TEXT NOT NULL,
    sha256  TEXT NOT NULL
)`); err != nil {
		return classify(err)
	}
	applied, err := appliedMigrations(ctx, db)
	if err != nil {
		return err
	}
	for v, a := range applied {
		if v > len(ms) {
			return fmt.Errorf("%w: schema version %d is newer than this build's %d (migration %s); use a newer cacheon", ErrRefused, maxKey(applied), len(ms), a.name)
		}
		if m := ms[v-1]; m.sha256 != a.sha256 || m.name != a.name {
			return fmt.Errorf("%w: schema version %d was applied from %s (sha256 %s), this build's is %s (sha256 %s)", ErrRefused, v, a.name, a.sha256, m.name, m.sha256)
		}
	}
	for v := 1; v <= len(applied); v++ {
		if _, ok := applied[v]; !ok {
			return fmt.Errorf("%w: schema_version lacks version %d", ErrRefused, v)
		}
	}
	for _, m := range ms[len(applied):] {
		t, err := db.BeginTx(ctx, nil)
		if err != nil {
			return classify(err)
		}
		if _, err := t.ExecContext(ctx, m.sql); err != nil {
			t.Rollback()
			return fmt.Errorf("apply migration %s: %w", m.name, classify(err))
		}
		// A schema that makes tables bound (4: the row record chain; 7:
		// the proposal transitions) binds the rows a ledger already holds
		// as they stand, in the migration's transaction.
		if tables := boundBySchema[m.version]; len(tables) > 0 {
			if err := bindAll(ctx, t, tables...); err != nil {
				t.Rollback()
				return fmt.Errorf("apply migration %s: %w", m.name, classify(err))
			}
		}
		if _, err := t.ExecContext(ctx, `INSERT INTO schema_version (version, name, sha256) VALUES (?, ?, ?)`, m.version, m.name, m.sha256); err != nil {
			t.Rollback()
			return fmt.Errorf("record migration %s: %w", m.name, classify(err))
		}
		if err := t.Commit(); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, classify(err))
		}
	}
	return nil
}

// boundBySchema names, for a schema version that made tables bound, the
// tables it made bound: applying it binds their rows as they stand. The
// lists are fixed per version rather than read from boundTables, so that
// schema 4 applied to an old ledger binds what schema 4 bound, and a
// later schema adds its own record.
var boundBySchema = map[int][]string{
	rowRecordsSchema:       {"proposals", "attempts", "evaluation_stacks", "crowns", "standing_claims", "discovery_claims", "settlement_outcomes"},
	transitionsBoundSchema: {"proposal_transitions"},
}

func appliedMigrations(ctx context.Context, q querier) (map[int]migration, error) {
	rows, err := q.QueryContext(ctx, `SELECT version, name, sha256 FROM schema_version ORDER BY version`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	out := map[int]migration{}
	for rows.Next() {
		var m migration
		if err := rows.Scan(&m.version, &m.name, &m.sha256); err != nil {
			return nil, classify(err)
		}
		out[m.version] = m
	}
	return out, classify(rows.Err())
}

func maxKey(m map[int]migration) int {
	n := 0
	for k := range m {
		n = max(n, k)
	}
	return n
}

// querier is what reads need of a *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
