package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// The row record chain binds every row that decides a payout to a hash
// chain, as the settlement chain binds the events. A write that inserts or
// changes such rows appends, in the same transaction, one record whose body
// holds the rows' exact bound columns as the database reads them back:
//
//	{"event_type": "settlement", "sequence": 7, "previous_event_digest": "…",
//	 "rows": {"standing_claims": {"<arena>/<target>": {…}}, "crowns": {…}}}
//
// Folding the records in order (a later record's row replaces an earlier
// one under the same table and key) gives exactly the bound rows the
// ledger must hold; Check compares the two and names every row that
// differs, is missing or that no record binds. So a hand edit of a hotkey,
// a settlement view, a stack's HCL or its current flag is refused unless
// the editor also rewrites every record after it, which moves the record
// head an outside party pins (`ledger check --json` prints it).
var recordChain = chain{"row_records", identity.DomainLedgerRecord, "row record chain"}

// rowRecordsSchema is the schema version that made the row record chain.
const rowRecordsSchema = 4

// Record types: which write left the record.
const (
	RecordIntake        = "intake"
	RecordAttempt       = "attempt"
	RecordStackInit     = "stack_init"
	RecordSettlement    = "settlement"
	RecordCopyCleared   = "copy_cleared"
	RecordSchemaUpgrade = "schema_upgrade"
	RecordTransition    = "transition"
)

// transitionsBoundSchema is the schema version that added the proposal
// transitions to the row record chain.
const transitionsBoundSchema = 7

// boundTable is one table whose rows the record chain binds: an SQL
// expression naming a row, and the JSON object of its bound columns.
// Columns a later write changes without a record (a proposal's status and
// reason) are left out: they are checked against the proposal's last
// transition, and every transition is bound.
type boundTable struct {
	name string
	key  string
	row  string
}

var boundTables = []boundTable{
	{"proposals", `CAST(id AS TEXT)`, `json_object('id', id, 'arena_digest', arena_digest, 'content_hash', content_hash,
		'committed_content_hash', committed_content_hash, 'hotkey', hotkey, 'block', block, 'event_index', event_index,
		'subevent_index', subevent_index, 'target_id', target_id, 'target_spec_digest', target_spec_digest,
		'selected_payload_digest', selected_payload_digest, 'selected_delta_digest', selected_delta_digest,
		'published', published, 'replay_of', replay_of, 'fingerprint', fingerprint)`},
	{"proposal_transitions", `proposal_id || '/' || seq`, `json_object('proposal_id', proposal_id, 'seq', seq,
		'from_status', from_status, 'to_status', to_status, 'reason', reason)`},
	{"attempts", `proposal_id || '/' || seq`, `json_object('proposal_id', proposal_id, 'seq', seq, 'stage', stage,
		'report_digest', report_digest, 'evidence_address', evidence_address, 'decision', decision, 'reason', reason,
		'settlement', settlement)`},
	{"evaluation_stacks", `CAST(id AS TEXT)`, `json_object('id', id, 'stack_digest', stack_digest, 'tree_digest', tree_digest,
		'hcl', hcl, 'event_sequence', event_sequence, 'current', current)`},
	{"crowns", `CAST(event_sequence AS TEXT)`, `json_object('event_sequence', event_sequence, 'arena_digest', arena_digest,
		'target_id', target_id, 'contribution_digest', contribution_digest, 'proposal_id', proposal_id, 'hotkey', hotkey,
		'speedup', speedup)`},
	{"standing_claims", `arena_digest || '/' || target_id`, `json_object('arena_digest', arena_digest, 'target_id', target_id,
		'target_spec_digest', target_spec_digest, 'contribution_digest', contribution_digest, 'hotkey', hotkey,
		'speedup_ppm', speedup_ppm, 'crowned_block', crowned_block, 'evidence_digest', evidence_digest,
		'event_sequence', event_sequence)`},
	{"discovery_claims", `CAST(event_sequence AS TEXT)`, `json_object('event_sequence', event_sequence, 'arena_digest', arena_digest,
		'contribution_digest', contribution_digest, 'hotkey', hotkey, 'speedup_ppm', speedup_ppm,
		'awarded_block', awarded_block, 'evidence_digest', evidence_digest)`},
	{"settlement_outcomes", `proposal_id || '/' || seq`, `json_object('proposal_id', proposal_id, 'seq', seq,
		'plan_digest', plan_digest, 'candidate_digest', candidate_digest, 'outcome', outcome, 'reason', reason,
		'event_sequence', event_sequence)`},
}

func boundTableNamed(name string) boundTable {
	for _, b := range boundTables {
		if b.name == name {
			return b
		}
	}
	panic("ledger: no bound table " + name) // a programming error: the names are this file's
}

// boundRows maps table → key → row.
type boundRows map[string]map[string]any

// selection picks the rows of one bound table a write touched.
type selection struct {
	table string
	where string
	args  []any
}

// readBound reads the bound columns of the rows sel picks, as the record
// chain holds them.
func readBound(ctx context.Context, q querier, sel selection, into boundRows) error {
	b := boundTableNamed(sel.table)
	query := `SELECT ` + b.key + `, ` + b.row + ` FROM ` + b.name
	if sel.where != "" {
		query += ` WHERE ` + sel.where
	}
	rows, err := q.QueryContext(ctx, query, sel.args...)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, text string
		if err := rows.Scan(&key, &text); err != nil {
			return classify(err)
		}
		v, err := canonjson.Parse([]byte(text))
		if err != nil {
			return fmt.Errorf("%s row %s: %w", b.name, key, err)
		}
		if into[b.name] == nil {
			into[b.name] = map[string]any{}
		}
		into[b.name][key] = v
	}
	return classify(rows.Err())
}

// bindRows appends a record of the rows sels pick, read back inside the
// write's transaction t, to the row record chain. A write that touched no
// bound row appends nothing.
func bindRows(ctx context.Context, t *sql.Tx, recordType string, sels ...selection) error {
	rows := boundRows{}
	for _, s := range sels {
		if err := readBound(ctx, t, s, rows); err != nil {
			return fmt.Errorf("row record: %w", err)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	h, err := headOf(ctx, t, recordChain)
	if err != nil {
		return err
	}
	ev, err := nextEvent(recordChain.domain, h, recordType, map[string]any{"rows": rows})
	if err != nil {
		return fmt.Errorf("row record: %w", err)
	}
	if _, err := t.ExecContext(ctx, `INSERT INTO row_records (sequence, event_type, previous_event_digest, body, digest) VALUES (?, ?, ?, ?, ?)`,
		ev.Sequence, ev.EventType, ev.PreviousEventDigest, string(ev.Body), ev.Digest); err != nil {
		return fmt.Errorf("insert row record %d: %w", ev.Sequence, err)
	}
	return nil
}

// bindAll binds every row of tables as it stands, in one record: run
// once, when the schema that made them bound is applied to a ledger
// written before it (schema 4 for the tables it made bound, schema 7 for
// the proposal transitions).
func bindAll(ctx context.Context, t *sql.Tx, tables ...string) error {
	sels := make([]selection, len(tables))
	for i, name := range tables {
		sels[i] = selection{table: boundTableNamed(name).name}
	}
	return bindRows(ctx, t, RecordSchemaUpgrade, sels...)
}

// checkRows folds the row record chain and compares it with the bound
// rows the ledger holds, adding a problem for every row that differs, is
// missing, or that no record binds. It returns the record chain's head.
func (l *Ledger) checkRows(ctx context.Context, r *Report) (Head, error) {
	h, err := verifyChainOf(ctx, l.db, recordChain)
	if err != nil {
		r.Problems = append(r.Problems, strings.TrimPrefix(err.Error(), ErrRefused.Error()+": "))
		return Head{}, nil
	}
	recs, err := eventsOf(ctx, l.db, recordChain, 1, 0)
	if err != nil {
		return h, err
	}
	want, bound, problems := foldRecords(recs)
	r.Problems = append(r.Problems, problems...)
	have := boundRows{}
	for _, b := range boundTables {
		if err := readBound(ctx, l.db, selection{table: b.name}, have); err != nil {
			return h, err
		}
	}
	for _, b := range boundTables {
		keys := map[string]bool{}
		for k := range want[b.name] {
			keys[k] = true
		}
		for k := range have[b.name] {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			w, inChain := want[b.name][k]
			g, inTable := have[b.name][k]
			switch {
			case !inChain:
				r.Problems = append(r.Problems, fmt.Sprintf("%s row %s: no row record binds it (a row added by hand?)", b.name, k))
			case !inTable:
				r.Problems = append(r.Problems, fmt.Sprintf("%s row %s: missing, bound by row record %d", b.name, k, bound[b.name][k]))
			default:
				if !sameJSON(w, g) {
					r.Problems = append(r.Problems, fmt.Sprintf("%s row %s: %s differs from row record %d", b.name, k, differingColumns(w, g), bound[b.name][k]))
				}
			}
		}
	}
	for table := range want {
		if !isBoundTable(table) {
			r.Problems = append(r.Problems, fmt.Sprintf("row record chain binds rows of %q, which is not a bound table", table))
		}
	}
	return h, nil
}

// foldRecords folds row records in order: table → key → the row the last
// record binding it holds, and the record that bound it.
func foldRecords(recs []Event) (boundRows, map[string]map[string]int64, []string) {
	want := boundRows{}
	bound := map[string]map[string]int64{}
	var problems []string
	for _, e := range recs {
		v, err := canonjson.Parse(e.Body)
		if err != nil {
			problems = append(problems, fmt.Sprintf("row record %d: %v", e.Sequence, err))
			continue
		}
		tables, ok := v.(map[string]any)["rows"].(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("row record %d: no rows object", e.Sequence))
			continue
		}
		for table, keyed := range tables {
			m, ok := keyed.(map[string]any)
			if !ok {
				problems = append(problems, fmt.Sprintf("row record %d: %s is not an object", e.Sequence, table))
				continue
			}
			if want[table] == nil {
				want[table], bound[table] = map[string]any{}, map[string]int64{}
			}
			for k, row := range m {
				want[table][k], bound[table][k] = row, e.Sequence
			}
		}
	}
	return want, bound, problems
}

func sortedKeys(keys map[string]bool) []string {
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameJSON reports whether two parsed JSON values encode alike.
func sameJSON(a, b any) bool {
	ab, err1 := canonjson.Marshal(a)
	bb, err2 := canonjson.Marshal(b)
	return err1 == nil && err2 == nil && string(ab) == string(bb)
}

func trimRefused(err error) string { return strings.TrimPrefix(err.Error(), ErrRefused.Error()+": ") }

func isBoundTable(name string) bool {
	for _, b := range boundTables {
		if b.name == name {
			return true
		}
	}
	return false
}

// differingColumns names the columns whose values differ between two row
// objects, for the problem line.
func differingColumns(want, got any) string {
	w, ok1 := want.(map[string]any)
	g, ok2 := got.(map[string]any)
	if !ok1 || !ok2 {
		return "the row"
	}
	var cols []string
	for k := range w {
		wb, _ := canonjson.Marshal(w[k])
		gb, _ := canonjson.Marshal(g[k])
		if string(wb) != string(gb) {
			cols = append(cols, k)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			cols = append(cols, k)
		}
	}
	if len(cols) == 0 {
		return "the row"
	}
	sort.Strings(cols)
	return "column " + strings.Join(cols, ", ")
}
