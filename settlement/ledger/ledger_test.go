package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/reject"
)

func TestMigrationsAreNumberedFromOneWithoutGaps(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, SchemaVersion %d", len(ms), SchemaVersion())
	}
}

func TestOpenCreatesAConsistentEmptyLedger(t *testing.T) {
	ctx := context.Background()
	path := ledgerPath(t)
	l := openNew(t, path)
	r, err := l.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Integrity != "ok" || r.SchemaVersion != SchemaVersion() || r.Head != (Head{}) || r.CurrentStack != "" {
		t.Errorf("report %+v", r)
	}
	var mode string
	if err := l.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v", mode, err)
	}
}

func TestOpenWithoutCreateOfAMissingLedgerIsNotExist(t *testing.T) {
	_, err := Open(context.Background(), filepath.Join(t.TempDir(), "none.db"), Options{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want fs.ErrNotExist", err)
	}
}

func TestASecondWriterIsRefusedNamingTheHolder(t *testing.T) {
	path := ledgerPath(t)
	openNew(t, path)
	_, err := Open(context.Background(), path, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v, want ErrLocked", err)
	}
	if reject.Is(err) {
		t.Errorf("a busy ledger is not a rejected input: %v", err)
	}
	for _, want := range []string{"pid ", path + ".lock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestTheLockIsFreeAfterClose(t *testing.T) {
	path := ledgerPath(t)
	l, err := Open(context.Background(), path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	openNew(t, path)
}

// rawDB opens the ledger file behind the ledger's back, as an attacker or
// a broken tool would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestAWriteBehindTheLockFailsAtOnceAsBusy(t *testing.T) {
	ctx := context.Background()
	path := ledgerPath(t)
	l := openNew(t, path)
	raw := rawDB(t, path)
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`INSERT INTO settlement_events (sequence, event_type, previous_event_digest, body, digest) VALUES (99, 'X', '', '{}', ?)`, hex64("x")); err != nil {
		t.Fatal(err)
	}
	_, err = l.InitStack(ctx, stack(0))
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v, want ErrLocked (busy)", err)
	}
}

func TestANewerSchemaIsRefusedWithTheReason(t *testing.T) {
	path := ledgerPath(t)
	l := openNew(t, path)
	l.Close()
	if _, err := rawDB(t, path).Exec(`INSERT INTO schema_version (version, name, sha256) VALUES (?, '0099_future.sql', ?)`, SchemaVersion()+98, hex64("f")); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path, Options{})
	if !errors.Is(err, ErrRefused) || !reject.Is(err) || !strings.Contains(err.Error(), "newer than this build") {
		t.Fatalf("got %v, want a refusal saying the schema is newer", err)
	}
}

func TestAnEditedMigrationRecordIsRefused(t *testing.T) {
	path := ledgerPath(t)
	l := openNew(t, path)
	l.Close()
	if _, err := rawDB(t, path).Exec(`UPDATE schema_version SET sha256 = ? WHERE version = 1`, hex64("other")); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path, Options{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "was applied from") {
		t.Fatalf("got %v", err)
	}
}

func TestStatusTransitions(t *testing.T) {
	for _, tc := range []struct {
		from, to Status
		ok       bool
	}{
		{start, Reserved, true},
		{start, Failed, true},
		{start, Published, false},
		{Reserved, Fetching, true},
		{Fetching, TransportRetry, true},
		{TransportRetry, Held, true},
		{Fetching, Published, true},
		{Published, Screening, true},
		{Published, Qualifying, false},
		{Screening, Promoted, true},
		{Promoted, Qualifying, true},
		{Promoted, NoDecision, true}, // the run died between the screens and the qualification
		{Qualifying, ReproductionPending, true},
		{Qualifying, NoDecision, true}, // an uncalibrated speed verdict
		{NoDecision, Screening, true},
		{ReproductionPending, NoDecision, true}, // a lease reclaimed after its last attempt
		{Qualifying, Published, true},           // a lease reclaimed: back in the queue
		{ReproductionPending, Published, true},
		{Held, Published, false},
		{ReproductionPending, Screening, true},
		{Qualifying, Qualified, true},
		{Screening, Qualified, false},
		{Held, Qualifying, true},
		{Screening, Expired, true},
		{Qualifying, Failed, true},
		{Failed, Reserved, false},
		{Qualified, Failed, false},
		{Expired, Screening, false},
		{Reserved, "bogus", false},
		{"bogus", Failed, false},
	} {
		if got := CanTransition(tc.from, tc.to); got != tc.ok {
			t.Errorf("%q -> %q: %v, want %v", tc.from, tc.to, got, tc.ok)
		}
	}
}

func TestIntakePublishesAndRecordsTheReservation(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	dir := writeBundle(t, "one")
	res, err := l.Intake(ctx, snapshot(t, dir), request("hk1", 10))
	if err != nil {
		t.Fatal(err)
	}
	p := res.Proposal
	if p.Status != Published || !p.Published || p.ReplayOf != 0 || res.Existing {
		t.Fatalf("proposal %+v", p)
	}
	wantDigest, err := snapshot(t, dir).ContentHash(false)
	want := wantDigest.String()
	if err != nil || p.ContentHash != want {
		t.Fatalf("content hash %s, want %s (%v)", p.ContentHash, want, err)
	}
	if res.Publication != filepath.Join(l.PublicationsDir(), want[:2], want) {
		t.Errorf("publication %s", res.Publication)
	}
	// The miner's path changing afterwards changes nothing published.
	if err := os.WriteFile(filepath.Join(dir, "kernels/op.py"), []byte("evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "co")
	t.Cleanup(func() { writable(out) })
	if err := (Publications{Dir: l.PublicationsDir()}).Checkout(p.ContentHash, out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "kernels/op.py"))
	if err != nil || !strings.Contains(string(data), "# one") {
		t.Errorf("checked-out op.py %q, %v", data, err)
	}
	st, err := os.Stat(filepath.Join(out, "kernels"))
	if err != nil || st.Mode().Perm() != 0o555 {
		t.Errorf("checked-out directory mode %v, %v", st.Mode(), err)
	}
	fst, err := os.Stat(filepath.Join(out, "kernels/op.py"))
	if err != nil || fst.Mode().Perm() != 0o444 {
		t.Errorf("checked-out file mode %v, %v", fst.Mode(), err)
	}
	r, err := l.Check(ctx)
	if err != nil || r.Counts.Proposals != 1 {
		t.Fatalf("check %+v, %v", r, err)
	}
}

func TestATamperedPublicationIsRefusedAtCheckout(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	res, err := l.Intake(ctx, snapshot(t, writeBundle(t, "x")), request("hk", 1))
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(res.Publication, "kernels/op.py")
	os.Chmod(filepath.Dir(f), 0o755)
	os.Chmod(f, 0o644)
	if err := os.WriteFile(f, []byte("swapped\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = (Publications{Dir: l.PublicationsDir()}).Checkout(res.Proposal.ContentHash, filepath.Join(t.TempDir(), "co"))
	if !errors.Is(err, ErrPublication) || !reject.Is(err) {
		t.Fatalf("got %v, want ErrPublication", err)
	}
}

func TestIntakeOfAReservedPosition(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	snap := snapshot(t, writeBundle(t, "a"))
	first, err := l.Intake(ctx, snap, request("hk", 5))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the same reveal again is a no-op", func(t *testing.T) {
		again, err := l.Intake(ctx, snap, request("hk", 5))
		if err != nil || !again.Existing || again.Proposal.ID != first.Proposal.ID {
			t.Fatalf("%+v, %v", again, err)
		}
	})
	t.Run("another reveal there is refused", func(t *testing.T) {
		_, err := l.Intake(ctx, snapshot(t, writeBundle(t, "b")), request("hk", 5))
		if !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), "already reserved by proposal") {
			t.Fatalf("got %v", err)
		}
	})
}

// drive moves a published proposal through screening and qualification,
// recording an attempt with each decision.
func drive(t *testing.T, l *Ledger, id int64, decisions ...string) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Transition(ctx, id, Screening, ""))
	for i, d := range decisions {
		stage := StageQualification
		if i == 0 {
			stage = StageScreen
		}
		_, err := l.RecordAttempt(ctx, id, Attempt{Stage: stage, ReportDigest: hex64(d + stage), EvidenceAddress: hex64("ev" + d), Decision: d, Reason: strings.ToLower(d)})
		must(err)
		if d == "FAIL" {
			must(l.Transition(ctx, id, Failed, "screen_rejected"))
			return
		}
		if i == 0 {
			must(l.Transition(ctx, id, Promoted, ""))
			must(l.Transition(ctx, id, Qualifying, ""))
		}
	}
}

func TestDuplicateReplay(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		history []string // decisions of the first proposal's attempts
		arena   string
		replay  bool
	}{
		{"a terminal FAIL is replayed", []string{"FAIL"}, "", true},
		{"a FAIL after a PASS is not replayed", []string{"PASS", "FAIL"}, "", false},
		{"a proposal still qualifying is not replayed", []string{"PASS"}, "", false},
		{"another arena's FAIL is not replayed", []string{"FAIL"}, hex64("other arena"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openNew(t, ledgerPath(t))
			dir := writeBundle(t, "same")
			first, err := l.Intake(ctx, snapshot(t, dir), request("hk1", 1))
			if err != nil {
				t.Fatal(err)
			}
			drive(t, l, first.Proposal.ID, tc.history...)
			r := request("hk2", 2)
			if tc.arena != "" {
				r.ArenaDigest = tc.arena
			}
			second, err := l.Intake(ctx, snapshot(t, dir), r)
			if err != nil {
				t.Fatal(err)
			}
			p := second.Proposal
			if tc.replay {
				if p.Status != Failed || p.Reason != ReasonDuplicateReplay || p.ReplayOf != first.Proposal.ID || p.Published {
					t.Fatalf("replay %+v", p)
				}
				if err := l.Transition(ctx, p.ID, Screening, ""); !errors.Is(err, ErrIllegal) {
					t.Errorf("a replay was moved to screening: %v", err)
				}
			} else if p.Status != Published || p.ReplayOf != 0 {
				t.Fatalf("not a replay, got %+v", p)
			}
			if _, err := l.Check(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTransitionsNeedTheirEvidence(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	res, err := l.Intake(ctx, snapshot(t, writeBundle(t, "e")), request("hk", 1))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Proposal.ID
	if _, err := l.RecordAttempt(ctx, id, Attempt{Stage: StageQualification, ReportDigest: hex64("r"), EvidenceAddress: hex64("e"), Decision: "PASS"}); !errors.Is(err, ErrIllegal) {
		t.Errorf("a qualification attempt on a published proposal: %v", err)
	}
	drive(t, l, id, "PASS")
	if err := l.Transition(ctx, id, ReproductionPending, ""); !errors.Is(err, ErrIllegal) {
		t.Errorf("reproduction_pending without a passing qualification: %v", err)
	}
	if _, err := l.RecordAttempt(ctx, id, Attempt{Stage: StageQualification, ReportDigest: hex64("q1"), EvidenceAddress: hex64("e1"), Decision: "PASS"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Transition(ctx, id, Qualified, ""); !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), "needs 2 passing") {
		t.Errorf("qualified after one pass: %v", err)
	}
	if err := l.Transition(ctx, id, ReproductionPending, ""); err != nil {
		t.Fatal(err)
	}
	if err := l.Transition(ctx, id, Qualifying, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordAttempt(ctx, id, Attempt{Stage: StageQualification, ReportDigest: hex64("q2"), EvidenceAddress: hex64("e2"), Decision: "PASS"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Transition(ctx, id, Qualified, ""); err != nil {
		t.Fatal(err)
	}
	if err := l.Transition(ctx, id, Failed, "late"); !errors.Is(err, ErrIllegal) {
		t.Errorf("a qualified proposal failed: %v", err)
	}
	as, err := l.Attempts(ctx, id)
	if err != nil || len(as) != 3 {
		t.Fatalf("attempts %+v, %v", as, err)
	}
}

// TestUndecidedListsEveryProposalNotTerminal: the proposals a settlement
// with nothing queued names, in finalized order with their reasons.
func TestUndecidedListsEveryProposalNotTerminal(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	cases := []struct {
		name   string
		drive  func(id int64)
		status Status // "" when not listed
		reason string
	}{
		{"published", func(int64) {}, Published, "published"},
		{"failed at its screen", func(id int64) { drive(t, l, id, "FAIL") }, "", ""},
		{"no decision", func(id int64) {
			drive(t, l, id, "PASS", "PASS")
			if err := l.Transition(ctx, id, NoDecision, "uncalibrated_policy: noise"); err != nil {
				t.Fatal(err)
			}
		}, NoDecision, "uncalibrated_policy: noise"},
		{"qualified", func(id int64) {
			drive(t, l, id, "PASS", "PASS")
			for _, to := range []Status{ReproductionPending, Qualifying} {
				if err := l.Transition(ctx, id, to, ""); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.RecordAttempt(ctx, id, Attempt{Stage: StageQualification, ReportDigest: hex64("q2"), EvidenceAddress: hex64("e2"), Decision: "PASS"}); err != nil {
				t.Fatal(err)
			}
			if err := l.Transition(ctx, id, Qualified, ""); err != nil {
				t.Fatal(err)
			}
		}, "", ""},
		{"held", func(id int64) {
			drive(t, l, id, "PASS", "PASS")
			if err := l.Transition(ctx, id, Held, "operator"); err != nil {
				t.Fatal(err)
			}
		}, Held, "operator"},
	}
	var want []string
	for i, c := range cases {
		res, err := l.Intake(ctx, snapshot(t, writeBundle(t, c.name)), request(fmt.Sprintf("hk%d", i), int64(100-i)))
		if err != nil {
			t.Fatal(err)
		}
		c.drive(res.Proposal.ID)
		if c.status != "" {
			// Later cases sit at earlier blocks: finalized order is the reverse.
			want = append([]string{fmt.Sprintf("%d %s %q", res.Proposal.ID, c.status, c.reason)}, want...)
		}
	}
	undecided, err := l.Undecided(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range undecided {
		got = append(got, fmt.Sprintf("%d %s %q", p.ID, p.Status, p.Reason))
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("undecided %v, want %v", got, want)
	}
}

// settle commits n crown settlements after the initial stack.
func settle(t *testing.T, l *Ledger, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := l.InitStack(ctx, stack(0)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		h, err := l.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Commit(ctx, crownSettlement(t, h, i)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCommitMovesTheStackAndUpsertsTheClaim(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	settle(t, l, 2)
	r, err := l.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Head.Sequence != 6 || r.CurrentStack != stack(2).StackDigest || r.Counts.Stacks != 3 || r.Counts.Crowns != 2 || r.Counts.StandingClaims != 1 {
		t.Fatalf("report %+v", r)
	}
	claims, err := l.StandingClaims(ctx)
	if err != nil || len(claims) != 1 || claims[0].EventSequence != 4 {
		t.Fatalf("claims %+v, %v", claims, err)
	}
	stacks, err := l.Stacks(ctx)
	if err != nil || len(stacks) != 3 || !stacks[2].Current || stacks[0].Current || stacks[2].EventSequence != 6 {
		t.Fatalf("stacks %+v, %v", stacks, err)
	}
}

func TestAFailedCommitLeavesTheOldStackCurrent(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		edit  func(s *Settlement)
		match string
	}{
		{"stale incumbent", func(s *Settlement) { s.FromStack = hex64("someone else's") }, "planned against stack"},
		{"an event out of sequence", func(s *Settlement) { s.Events = s.Events[1:] }, "contiguous"},
		{"an event with a forged digest", func(s *Settlement) { s.Events[1].Digest = hex64("forged") }, "does not match its body"},
		{"a claim the schema refuses", func(s *Settlement) { s.StandingClaims[0].SpeedupPPM = 999 }, "CHECK constraint"},
		{"a crown naming another settlement's event", func(s *Settlement) { s.Crowns[0].EventSequence = 1 }, "not one of this settlement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openNew(t, ledgerPath(t))
			settle(t, l, 1)
			before, err := l.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := l.Head(ctx)
			s := crownSettlement(t, h, 2)
			tc.edit(&s)
			_, err = l.Commit(ctx, s)
			if err == nil || !strings.Contains(err.Error(), tc.match) {
				t.Fatalf("got %v, want an error saying %q", err, tc.match)
			}
			after, err := l.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if after.Head != before.Head || after.CurrentStack != before.CurrentStack || after.Counts != before.Counts {
				t.Errorf("a failed commit changed the ledger:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

func TestInitStackOnlyOnce(t *testing.T) {
	l := openNew(t, ledgerPath(t))
	settle(t, l, 0)
	if _, err := l.InitStack(context.Background(), stack(9)); !errors.Is(err, ErrIllegal) {
		t.Fatalf("got %v", err)
	}
}

func TestATamperedChainIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, sql, match string
	}{
		{"body", `UPDATE settlement_events SET body = replace(body, 'qualified_win', 'qualified_wim') WHERE sequence = 2`, "does not match its body"},
		{"digest", `UPDATE settlement_events SET digest = '` + hex64("d") + `' WHERE sequence = 3`, "does not match its body"},
		{"column against body", `UPDATE settlement_events SET event_type = 'RETIREMENT' WHERE sequence = 1`, "body says event_type"},
		{"a removed event", `DELETE FROM settlement_events WHERE sequence = 5`, "contiguous"},
		{"non-canonical body", `UPDATE settlement_events SET body = body || ' ' WHERE sequence = 5`, "not canonical"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ledgerPath(t)
			l := openNew(t, path)
			settle(t, l, 2)
			l.Close()
			raw := rawDB(t, path)
			if _, err := raw.Exec(`PRAGMA foreign_keys = OFF`); err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			_, err := Open(context.Background(), path, Options{})
			if !errors.Is(err, ErrRefused) || !reject.Is(err) || !strings.Contains(err.Error(), tc.match) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.match)
			}
		})
	}
}

func TestACorruptedFileIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset func(size int64) int64
		length int
	}{
		{"header", func(int64) int64 { return 0 }, 100},
		{"a page in the middle", func(size int64) int64 { return size / 2 / 4096 * 4096 }, 4096},
		{"the last page", func(size int64) int64 { return size - 4096 }, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ledgerPath(t)
			l := openNew(t, path)
			settle(t, l, 40)
			l.Close()
			if _, err := os.Stat(path + "-wal"); err == nil {
				if st, _ := os.Stat(path + "-wal"); st.Size() > 0 {
					t.Fatalf("the WAL was not checkpointed on close (%d bytes)", st.Size())
				}
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			junk := []byte(strings.Repeat("\xa5", tc.length))
			if _, err := f.WriteAt(junk, tc.offset(st.Size())); err != nil {
				t.Fatal(err)
			}
			f.Close()
			l, err = Open(context.Background(), path, Options{})
			if err == nil {
				defer l.Close()
				_, err = l.Check(context.Background())
			}
			if !errors.Is(err, ErrRefused) || !reject.Is(err) {
				t.Fatalf("got %v, want the corrupted ledger refused", err)
			}
		})
	}
}

func TestADiscoverySettlementLeavesTheStackAndRecordsTheBounty(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	settle(t, l, 1)
	h, err := l.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NextEvent(h, "DISCOVERY_BOUNTY", map[string]any{"reason": "qualified_discovery", "candidate_digest": hex64("discovery")})
	if err != nil {
		t.Fatal(err)
	}
	claim := DiscoveryClaim{EventSequence: e.Sequence, ArenaDigest: hex64("arena"), ContributionDigest: hex64("discovered"), Hotkey: "hk9",
		SpeedupPPM: 1010000, AwardedBlock: 77, EvidenceDigest: hex64("discovery evidence")}
	rec, err := l.Commit(ctx, Settlement{Events: []Event{e}, DiscoveryClaims: []DiscoveryClaim{claim}})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Head != e.Head() || rec.CurrentStack.StackDigest != stack(1).StackDigest {
		t.Errorf("receipt %+v", rec)
	}
	got, err := l.DiscoveryClaims(ctx)
	if err != nil || len(got) != 1 || got[0] != claim {
		t.Fatalf("discovery claims %+v, %v", got, err)
	}
	crowns, err := l.Crowns(ctx)
	if err != nil || len(crowns) != 1 || crowns[0].EventSequence != 1 {
		t.Fatalf("crowns %+v, %v", crowns, err)
	}
	if _, err := l.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestNextEventRefusesToSetTheChainFields(t *testing.T) {
	for _, k := range []string{"event_type", "sequence", "previous_event_digest"} {
		if _, err := NextEvent(Head{}, "CROWN", map[string]any{k: "x"}); !errors.Is(err, ErrIllegal) {
			t.Errorf("%s: got %v", k, err)
		}
	}
	if _, err := NextEvent(Head{}, "CROWN", map[string]any{"speedup": 1.5}); !errors.Is(err, ErrIllegal) {
		t.Errorf("a float in an event body: %v", err)
	}
}

func TestCheckoutOfAProposal(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	dir := writeBundle(t, "co")
	pub, err := l.Intake(ctx, snapshot(t, dir), request("hk", 1))
	if err != nil {
		t.Fatal(err)
	}
	refused, err := l.Intake(ctx, snapshot(t, dir), IntakeRequest{Hotkey: "hk", Position: Position{Block: 2}, Refusal: "rejected_at_load: no manifest"})
	if err != nil || refused.Proposal.Status != Failed || refused.Proposal.Published {
		t.Fatalf("refused intake %+v, %v", refused, err)
	}
	out := filepath.Join(t.TempDir(), "co")
	t.Cleanup(func() { writable(out) })
	if err := l.Checkout(ctx, pub.Proposal.ID, out); err != nil {
		t.Fatal(err)
	}
	if got, err := snapshot(t, out).ContentHash(false); err != nil || got.String() != pub.Proposal.ContentHash {
		t.Errorf("checked-out content hash %s, want %s (%v)", got, pub.Proposal.ContentHash, err)
	}
	if err := l.Checkout(ctx, refused.Proposal.ID, filepath.Join(t.TempDir(), "no")); !errors.Is(err, ErrIllegal) {
		t.Errorf("checkout of a proposal never published: %v", err)
	}
}

// TestAFileThatIsNoLedgerIsRefusedUntouched: an empty file (a truncated
// ledger), a SQLite database of another program and bytes that are no
// database at all are refused, with Create too, and left byte for byte
// as they were: a ledger is never made over a file that is there.
func TestAFileThatIsNoLedgerIsRefusedUntouched(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", "file:"+foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	foreignBytes, err := os.ReadFile(foreign)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"an empty file", nil, "an empty file is not a ledger"},
		{"another program's SQLite database", foreignBytes, "without the ledger's schema"},
		{"no database at all", []byte(strings.Repeat("not a database\n", 300)), "ledger"},
	}
	for _, tt := range tests {
		for _, create := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/create=%v", tt.name, create), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "ledger.db")
				if err := os.WriteFile(path, tt.data, 0o644); err != nil {
					t.Fatal(err)
				}
				l, err := Open(context.Background(), path, Options{Create: create})
				if err == nil {
					l.Close()
					t.Fatal("opened")
				}
				if !reject.Is(err) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want a rejection containing %q", err, tt.want)
				}
				if after, _ := os.ReadFile(path); string(after) != string(tt.data) {
					t.Fatalf("the refused file changed: %d bytes, was %d", len(after), len(tt.data))
				}
			})
		}
	}
}
