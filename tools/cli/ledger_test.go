package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/cacheon/engine/settlement/ledger"
)

func TestIntakeAddAndLedgerCheck(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { makeWritable(dir) })
	db := filepath.Join(dir, "ledger.db")
	bundle := repoCopy(t, "kernels/contributions/rmsnorm_torch")
	steps := []struct {
		name   string
		args   []string
		code   int
		status string
		stderr string
	}{
		{"first reveal", []string{"--hotkey", "hk1", "--block", "10"}, 0, "published", ""},
		{"the same reveal again", []string{"--hotkey", "hk1", "--block", "10"}, 0, "published", ""},
		{"another reveal at a reserved position", []string{"--hotkey", "hk2", "--block", "10"}, 2, "", "already reserved by proposal 1"},
		{"the same bytes later by its hotkey", []string{"--hotkey", "hk1", "--block", "11", "--event", "2", "--subevent", "1"}, 0, "published", ""},
		{"the same bytes later by another hotkey", []string{"--hotkey", "hk2", "--block", "12"}, 2, "", ""},
		{"a position that is not one", []string{"--hotkey", "hk2", "--block", "0"}, 2, "", "block must be > 0"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			args := append([]string{"intake", "add", bundle, "--ledger", db, "--json"}, s.args...)
			code, out, errOut := run(t, "", args...)
			if code != s.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, s.code, out, errOut)
			}
			if s.stderr != "" && !strings.Contains(errOut, s.stderr) {
				t.Errorf("stderr %q does not say %q", errOut, s.stderr)
			}
			var doc struct {
				Proposal struct {
					Status   string `json:"status"`
					TargetID string `json:"target_id"`
				} `json:"proposal"`
				Publication string `json:"publication"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
			}
			if s.status != "" && (doc.Proposal.Status != s.status || doc.Proposal.TargetID != "norm.rmsnorm" || doc.Publication == "") {
				t.Errorf("document %s", out)
			}
		})
	}
	code, out, errOut := run(t, "", "ledger", "check", "--ledger", db, "--json")
	if code != 0 {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errOut)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format_version", "ok", "ledger", "schema_version", "integrity", "head", "record_head", "current_stack", "counts", "problems"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("ledger check --json lacks %q: %s", k, out)
		}
	}
	if rep["ok"] != true || rep["counts"].(map[string]any)["proposals"] != 3.0 {
		t.Errorf("report %s", out)
	}
	code, out, _ = run(t, "", "ledger", "check", "--ledger", db)
	if code != 0 || !strings.Contains(out, "ok (schema 7, integrity ok)") {
		t.Errorf("text check: exit %d\n%s", code, out)
	}
	// --full replays everything and records a checkpoint; the next check
	// is the quick one from it.
	code, out, _ = run(t, "", "ledger", "check", "--ledger", db, "--full")
	if code != 0 || !strings.Contains(out, "every event and row replayed; checkpoint recorded at row record 4") {
		t.Errorf("full check: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "", "ledger", "check", "--ledger", db, "--json")
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep["full"] != false ||
		rep["checkpoint"].(map[string]any)["sequence"] != 4.0 || !strings.HasPrefix(rep["integrity"].(string), "not checked") {
		t.Errorf("quick check: exit %d\n%s", code, out)
	}
	// A backup is a ledger that checks; one over an existing file is refused.
	backup := filepath.Join(dir, "ledger.bak")
	if code, out, errOut := run(t, "", "ledger", "backup", "--ledger", db, backup); code != 0 || !strings.Contains(out, "ok (schema 7, chain head 0, 3 proposals") {
		t.Fatalf("backup: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "", "ledger", "check", "--ledger", backup, "--json"); code != 0 || !strings.Contains(out, `"proposals": 3`) {
		t.Fatalf("check of the backup: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "ledger", "backup", "--ledger", db, backup); code != 1 || !strings.Contains(errOut, "file already exists") {
		t.Fatalf("backup over a file: exit %d %s", code, errOut)
	}
}

func TestLedgerCheckRefusals(t *testing.T) {
	newLedger := func(t *testing.T) string {
		dir := t.TempDir()
		t.Cleanup(func() { makeWritable(dir) })
		db := filepath.Join(dir, "ledger.db")
		if code, out, errOut := run(t, "", "intake", "add", repoCopy(t, "kernels/contributions/rmsnorm_torch"), "--ledger", db, "--hotkey", "hk", "--block", "1"); code != 0 {
			t.Fatalf("intake: %d\n%s\n%s", code, out, errOut)
		}
		return db
	}
	exec := func(t *testing.T, db, stmt string) {
		raw, err := sql.Open("sqlite", "file:"+db)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		spoil  func(t *testing.T, db string)
		code   int
		stderr string
	}{
		{"missing", func(t *testing.T, db string) { os.Remove(db) }, 1, "does not exist"},
		{"not a database", func(t *testing.T, db string) { os.WriteFile(db, []byte(strings.Repeat("junk", 1024)), 0o644) }, 2, "damaged or not a ledger"},
		{"newer schema", func(t *testing.T, db string) {
			exec(t, db, `INSERT INTO schema_version (version, name, sha256) VALUES (50, '0050_x.sql', '`+strings.Repeat("ab", 32)+`')`)
		}, 2, "newer than this build"},
		{"a status no transition led to", func(t *testing.T, db string) { exec(t, db, `UPDATE proposals SET status = 'qualified'`) }, 2, "its last transition went to"},
		{"a forged event", func(t *testing.T, db string) {
			exec(t, db, `INSERT INTO settlement_events (sequence, event_type, previous_event_digest, body, digest) VALUES (1, 'CROWN', '', '{"event_type":"CROWN","previous_event_digest":"","sequence":1}', '`+strings.Repeat("cd", 32)+`')`)
		}, 2, "does not match its body"},
		// The row record chain binds the hotkey a crown would pay.
		{"a hotkey edited by hand", func(t *testing.T, db string) { exec(t, db, `UPDATE proposals SET hotkey = 'thief'`) }, 2, "proposals row 1: column hotkey differs from row record 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newLedger(t)
			tc.spoil(t, db)
			code, out, errOut := run(t, "", "ledger", "check", "--ledger", db, "--json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errOut)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q does not say %q", errOut, tc.stderr)
			}
			if tc.code == 2 {
				var doc struct {
					OK *bool `json:"ok"`
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.OK == nil || *doc.OK {
					t.Errorf("--json refusal document %q (%v)", out, err)
				}
				// What the check refuses, weights and settle refuse too:
				// no weights from it, no settlement onto it, no intake
				// whose anti-copy and replay verdicts read its proposals,
				// and no cleared copy verdict (which runs the full check).
				for _, args := range [][]string{
					{"intake", "add", repoCopy(t, "kernels/contributions/rmsnorm_triton"), "--ledger", db, "--hotkey", "hk2", "--block", "2"},
					{"weights", "--ledger", db, "--block", "100", "--metagraph", repoDir("docs/examples/weights/members.json"),
						"--validator", "5Fvalidator", "--policy", repoDir("docs/examples/weights/policy.json")},
					{"settle", "--ledger", db},
					{"stack", "export", "--ledger", db, "--out", filepath.Join(t.TempDir(), "stack.hcl")},
					{"intake", "clear-copy", "--ledger", db, "--proposal", "1", "--reason", "reviewed"},
				} {
					if code, out, errOut := run(t, "", args...); code != 2 || !strings.Contains(errOut, tc.stderr) {
						t.Errorf("%s on it: exit %d\n%s\n%s", args[0], code, out, errOut)
					}
				}
			}
		})
	}
}

func makeWritable(root string) {
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
}

// TestLedgerWritersCheckpointPastTheThreshold: a ledger whose operator
// never runs "ledger check --full" still gets checkpoints: a command that
// writes, opening a ledger with ledger.AutoCheckpointRecords chain
// records or more since the latest checkpoint (here none), runs the full
// check and records one before it writes. Its next run, with fewer since,
// records none. (qualify --ledger opens the ledger through the same
// helper; it needs a Python with torch to get that far, so it is not run
// here.)
func TestLedgerWritersCheckpointPastTheThreshold(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(t *testing.T, db string) []string
	}{
		{"intake add", func(t *testing.T, db string) []string {
			return []string{"intake", "add", repoCopy(t, "kernels/contributions/rmsnorm_torch"), "--ledger", db, "--hotkey", "hk", "--block", "1"}
		}},
		{"settle", func(t *testing.T, db string) []string { return []string{"settle", "--ledger", db} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			t.Cleanup(func() { makeWritable(dir) })
			db := filepath.Join(dir, "ledger.db")
			l, err := ledger.Open(ctx, db, ledger.Options{Create: true})
			if err != nil {
				t.Fatal(err)
			}
			// One settlement of held events, as many as the threshold.
			var events []ledger.Event
			var h ledger.Head
			for j := 0; j < ledger.AutoCheckpointRecords; j++ {
				e, err := ledger.NextEvent(h, "HOLD", map[string]any{"reason": "stale_incumbent", "candidate_digest": fmt.Sprintf("%064x", j)})
				if err != nil {
					t.Fatal(err)
				}
				events, h = append(events, e), e.Head()
			}
			if _, err := l.Commit(ctx, ledger.Settlement{Events: events}); err != nil {
				t.Fatal(err)
			}
			l.Close()
			checkpoints := func() (n int, last int64) {
				t.Helper()
				raw, err := sql.Open("sqlite", "file:"+db)
				if err != nil {
					t.Fatal(err)
				}
				defer raw.Close()
				if err := raw.QueryRow(`SELECT count(*), coalesce(max(record_sequence), 0) FROM checkpoints`).Scan(&n, &last); err != nil {
					t.Fatal(err)
				}
				return n, last
			}
			if n, _ := checkpoints(); n != 0 {
				t.Fatalf("%d checkpoints before the write", n)
			}
			for i, want := range []int{1, 1} {
				if code, out, errOut := run(t, "", tc.args(t, db)...); code != 0 {
					t.Fatalf("run %d: exit %d\n%s\n%s", i+1, code, out, errOut)
				}
				if n, last := checkpoints(); n != want || last == 0 {
					t.Fatalf("after run %d: %d checkpoints (the latest at row record %d), want %d", i+1, n, last, want)
				}
			}
			// The next check is the quick one from that checkpoint.
			code, out, errOut := run(t, "", "ledger", "check", "--ledger", db, "--json")
			var rep struct {
				Full       bool        `json:"full"`
				Checkpoint ledger.Head `json:"checkpoint"`
			}
			if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Full || rep.Checkpoint.Sequence == 0 {
				t.Fatalf("ledger check after the writes: exit %d (%v)\n%s\n%s", code, err, out, errOut)
			}
		})
	}
}
