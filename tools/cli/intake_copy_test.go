package cli

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Anti-copy through the commands: intake add refuses copies of an
// earlier proposal of another hotkey and of the seed contributions of
// the ledger's first stack, naming them; clear-copy corrects a verdict.
func TestIntakeAntiCopyAndClearCopy(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { makeWritable(dir) })
	ws := incumbentWorkspace(t, dir)
	db := filepath.Join(dir, "ledger.db")
	honest := repoCopy(t, "kernels/contributions/rmsnorm_torch")
	copied := repoCopy(t, "kernels/contributions/rmsnorm_torch")
	must(t, os.WriteFile(filepath.Join(copied, "README.md"), []byte("my own kernel\n"), 0o644))
	seedCopy := repoCopy(t, "kernels/contributions/rmsnorm_triton")
	must(t, os.WriteFile(filepath.Join(seedCopy, "README.md"), []byte("tuned by me\n"), 0o644))

	steps := []struct {
		name   string
		bundle string
		args   []string
		code   int
		status string
		reason string
		seeds  bool // the ledger has its first stack: the seeds are compared
	}{
		{"an honest proposal", honest, []string{"--hotkey", "hk1", "--block", "10"}, 0, "published", "published", false},
		{"a copy of a seed contribution", seedCopy, []string{"--hotkey", "hk2", "--block", "11"}, 2, "failed",
			"copy_of:seed:" + rmsLabel + ":payload", true},
		{"a copy of the earlier proposal", copied, []string{"--hotkey", "hk3", "--block", "12"}, 2, "failed", "copy_of:1:payload", true},
		{"its author again", copied, []string{"--hotkey", "hk1", "--block", "13"}, 0, "published", "published", true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.bundle == seedCopy {
				// The first stack, recorded in the ledger the first intake
				// made, brings the seeds.
				if code, out, errOut := run(t, "", "settle", "--ledger", db, "--workspace", ws,
					"--init", filepath.Join(ws, "stacks", "incumbent.hcl"), "--init-tree", strings.Repeat("ab", 32)); code != 0 {
					t.Fatalf("init: %d\n%s\n%s", code, out, errOut)
				}
			}
			args := append([]string{"intake", "add", s.bundle, "--ledger", db, "--workspace", ws, "--json"}, s.args...)
			code, out, errOut := run(t, "", args...)
			if code != s.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, s.code, out, errOut)
			}
			var doc struct {
				Proposal struct {
					Status        string `json:"status"`
					Reason        string `json:"reason"`
					Published     bool   `json:"published"`
					Fingerprinted bool   `json:"fingerprinted"`
				} `json:"proposal"`
				Copy  *struct{ Rule, Detail string } `json:"copy"`
				Seeds []string                       `json:"seeds"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("stdout: %v\n%s", err, out)
			}
			p := doc.Proposal
			if p.Status != s.status || p.Reason != s.reason || !p.Published || !p.Fingerprinted || (doc.Copy != nil) != (s.code == 2) {
				t.Errorf("document %s", out)
			}
			if got := strings.Join(doc.Seeds, " "); s.seeds && got != rmsLabel+" "+siluLabel && got != siluLabel+" "+rmsLabel || !s.seeds && got != "" {
				t.Errorf("seeds %q (the first stack's entries: %v)", doc.Seeds, s.seeds)
			}
		})
	}
	// In text, the refusal names what was copied and why.
	code, out, errOut := run(t, "", "intake", "add", copied, "--ledger", db, "--workspace", ws, "--hotkey", "hk4", "--block", "14")
	if code != 2 || !strings.Contains(out, "copies        proposal 1 by payload") ||
		!strings.Contains(errOut, "failed: copy_of:1:payload: it copies proposal 1 (payload: selected payload") {
		t.Errorf("text: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}

	clears := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"a proposal without a copy verdict", []string{"--proposal", "1", "--reason", "x"}, 2, "", "has no copy verdict"},
		{"a wrong verdict", []string{"--proposal", "3", "--reason", "same team, reviewed"}, 0, "proposal 3 at 12/0/0: published (copy_cleared:1)", ""},
		{"the same verdict again", []string{"--proposal", "3", "--reason", "again"}, 2, "", "already cleared by intake event 1"},
		{"a missing ledger", []string{"--ledger", filepath.Join(dir, "none.db"), "--proposal", "3", "--reason", "x"}, 1, "", "none.db"},
	}
	for _, c := range clears {
		t.Run("clear-copy: "+c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", append([]string{"intake", "clear-copy", "--ledger", db}, c.args...)...)
			if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.stderr) {
				t.Errorf("exit %d, want %d\nstdout %s\nstderr %s", code, c.code, out, errOut)
			}
		})
	}
	code, out, errOut = run(t, "", "intake", "clear-copy", "--ledger", db, "--proposal", "2", "--reason", "the seed was vendored by its author", "--json")
	if code != 0 {
		t.Fatalf("clear-copy --json: %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Proposal struct{ Status string } `json:"proposal"`
		Event    struct {
			Sequence  int64  `json:"sequence"`
			EventType string `json:"event_type"`
		} `json:"event"`
		Body map[string]any `json:"body"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Proposal.Status != "published" || doc.Event.Sequence != 2 || doc.Event.EventType != "COPY_CLEARED" || doc.Body["verdict"] != "copy_of:seed:"+rmsLabel+":payload" {
		t.Errorf("document %s", out)
	}
	// Each clearing recorded a checkpoint first: the check is the quick
	// one from the latest.
	if code, out, _ := run(t, "", "ledger", "check", "--ledger", db); code != 0 || !strings.Contains(out, ": ok (schema") || !strings.Contains(out, "quick check     from the checkpoint") {
		t.Errorf("check: %d\n%s", code, out)
	}
}

// TestIntakeRefusesTheStockRebundledFixture: the integrity fixture that
// claims the incumbent's own rmsnorm entry, byte for byte, under a bundle
// id of its own is refused at intake as a copy of that seed
// (docs/reference/integrity.md, the A/A candidate): a new bundle id does
// not make stock code anyone's.
func TestIntakeRefusesTheStockRebundledFixture(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { makeWritable(dir) })
	ws := incumbentWorkspace(t, dir)
	db := filepath.Join(dir, "ledger.db")
	// The first intake makes the ledger; the first stack, recorded in
	// it, brings the seeds.
	if code, out, errOut := run(t, "", "intake", "add", repoCopy(t, "kernels/contributions/rmsnorm_torch"), "--ledger", db, "--workspace", ws,
		"--hotkey", "hk1", "--block", "10"); code != 0 {
		t.Fatalf("honest intake: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "", "settle", "--ledger", db, "--workspace", ws,
		"--init", filepath.Join(ws, "stacks", "incumbent.hcl"), "--init-tree", strings.Repeat("ab", 32)); code != 0 {
		t.Fatalf("init: %d\n%s\n%s", code, out, errOut)
	}
	bundle := repoCopy(t, "kernels/fixtures/rmsnorm_stock_rebundled")
	code, out, errOut := run(t, "", "intake", "add", bundle, "--ledger", db, "--workspace", ws, "--hotkey", "hk2", "--block", "11", "--json")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout %s\nstderr %s", code, out, errOut)
	}
	var doc struct {
		Proposal struct{ Status, Reason string } `json:"proposal"`
		Copy     *struct{ Rule, Detail string }  `json:"copy"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout: %v\n%s", err, out)
	}
	if doc.Proposal.Status != "failed" || !strings.HasPrefix(doc.Proposal.Reason, "copy_of:seed:"+rmsLabel+":") || doc.Copy == nil {
		t.Fatalf("document %s", out)
	}
	t.Logf("refused: %s (%s)", doc.Proposal.Reason, doc.Copy.Detail)
}

// TestIntakeClearCopyRefusesAHandEdit: clearing a copy verdict rebinds
// the proposal's rows, which the quick check skips while the proposal is
// failed. A row of it edited by hand after a checkpoint passes "ledger
// check"; clear-copy runs the full check first, so it refuses (exit 2,
// naming the row), the proposal stays failed, and the edit is not bound:
// "ledger check --full" still names it.
func TestIntakeClearCopyRefusesAHandEdit(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { makeWritable(dir) })
	ws := incumbentWorkspace(t, dir)
	db := filepath.Join(dir, "ledger.db")
	copied := repoCopy(t, "kernels/contributions/rmsnorm_torch")
	must(t, os.WriteFile(filepath.Join(copied, "README.md"), []byte("my own kernel\n"), 0o644))
	for _, step := range []struct {
		bundle string
		args   []string
		code   int
	}{
		{repoCopy(t, "kernels/contributions/rmsnorm_torch"), []string{"--hotkey", "hk1", "--block", "10"}, 0},
		{copied, []string{"--hotkey", "hk2", "--block", "11"}, 2}, // copy_of:1
	} {
		args := append([]string{"intake", "add", step.bundle, "--ledger", db, "--workspace", ws}, step.args...)
		if code, out, errOut := run(t, "", args...); code != step.code {
			t.Fatalf("intake: exit %d, want %d\n%s\n%s", code, step.code, out, errOut)
		}
	}
	if code, out, errOut := run(t, "", "ledger", "check", "--full", "--ledger", db); code != 0 {
		t.Fatalf("check --full: exit %d\n%s\n%s", code, out, errOut)
	}
	raw, err := sql.Open("sqlite", "file:"+db)
	must(t, err)
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE proposals SET hotkey = 'thief' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	const row = "proposals row 2: column hotkey differs from row record"
	if code, out, errOut := run(t, "", "ledger", "check", "--ledger", db); code != 0 {
		t.Fatalf("the quick check reads no failed proposal, yet: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := run(t, "", "intake", "clear-copy", "--ledger", db, "--proposal", "2", "--reason", "same team, reviewed")
	if code != 2 || !strings.Contains(errOut, row) || !strings.Contains(errOut, db) {
		t.Fatalf("clear-copy over a hand edit: exit %d, want 2 naming %s and %q\n%s\n%s", code, db, row, out, errOut)
	}
	var status string
	if err := raw.QueryRow(`SELECT status FROM proposals WHERE id = 2`).Scan(&status); err != nil || status != "failed" {
		t.Fatalf("proposal 2 is %q after the refusal (%v)", status, err)
	}
	if code, out, errOut := run(t, "", "ledger", "check", "--full", "--ledger", db); code != 2 || !strings.Contains(errOut, row) {
		t.Fatalf("check --full after the refusal: exit %d, want 2 naming %q\n%s\n%s", code, row, out, errOut)
	}
}
