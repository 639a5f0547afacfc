package evaluate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
)

// intake takes a copy of a real contribution into a new ledger.
func intake(t *testing.T) (*ledger.Ledger, int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	testtree.Copy(t, "../../kernels/contributions/rmsnorm_torch", dir)
	snap, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	res, err := l.Intake(context.Background(), snap, ledger.IntakeRequest{Hotkey: "5Miner", Position: ledger.Position{Block: 7},
		SelectedPayloadDigest: strings.Repeat("ab", 32)})
	if err != nil {
		t.Fatal(err)
	}
	return l, res.Proposal.ID
}

// reports answers each qualification with the next recorded report (real
// reports that qualifications wrote), edited by edit when it is set and
// written back in canonical form, checking that the reproduction names
// the first and that the bundle is the ledger's checkout. *runs counts
// the qualifications asked for.
func reports(t *testing.T, runs *int, edit func(*qualify.Report), files ...string) Qualifier {
	return func(ctx context.Context, dir string, prior *qualify.Report) (*qualify.Report, []byte, error) {
		t.Helper()
		n := *runs
		if _, err := os.Stat(filepath.Join(dir, "manifest.toml")); err != nil {
			t.Fatalf("the qualifier got no checkout of the published bytes: %v", err)
		}
		if (n == 0) != (prior == nil) {
			t.Fatalf("qualification %d: prior %v", n, prior != nil)
		}
		if n >= len(files) {
			t.Fatalf("qualification %d asked for; the case records %d", n+1, len(files))
		}
		data, err := os.ReadFile(filepath.Join("testdata", files[n]))
		if err != nil {
			return nil, nil, err
		}
		*runs = n + 1
		r, err := qualify.ParseReport(data)
		if err != nil || edit == nil {
			return r, data, err
		}
		edit(r)
		data, err = r.Canonical()
		return r, data, err
	}
}

// testCalibration names a calibration document of the tests' own: a
// policy bound to it is a calibrated one, whose verdicts are evidence.
var testCalibration = strings.Repeat("c0", 32)

// Edits of the recorded reports (their policy is the embedded
// uncalibrated one).
var (
	calibratedPolicy = func(r *qualify.Report) { r.Inputs.Calibration = testCalibration }
	// uncalibratedPolicy binds a report to the embedded uncalibrated policy (the
	// screen FAIL was recorded under another calibration).
	uncalibratedPolicy = func(r *qualify.Report) { r.Inputs.Calibration = qualify.UncalibratedDigest() }
)

// failsAfterSpeed turns a passing report into one whose speed stage
// passed and whose stage after it (the audit or quality) failed.
func failsAfterSpeed(stage, reason string) func(*qualify.Report) {
	return func(r *qualify.Report) {
		uncalibratedPolicy(r)
		if stage == qualify.StageQuality {
			r.Stages = append(r.Stages, qualify.Stage{Name: qualify.StageAudit, Decision: qualify.Pass, Reason: "40 calls recorded", Start: "1", Seconds: "1"})
		}
		r.Stages = append(r.Stages, qualify.Stage{Name: stage, Decision: qualify.Fail, Reason: reason, Start: "1", Seconds: "1"})
		r.Decision, r.Reason = qualify.Fail, stage+": "+reason
	}
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name    string
		reports []string
		edit    func(*qualify.Report)
		runs    int // qualifications run
		status  ledger.Status
		stages  []string // the recorded attempts' stage:decision
		reason  []string // the proposal's reason holds each
	}{
		{"passes and reproduces", []string{"pass.report.json", "pass.report.json"}, calibratedPolicy, 2, ledger.Qualified,
			[]string{"screen:PASS", "qualification:PASS", "qualification:PASS"}, nil},
		{"fails a screen", []string{"screen-fail.report.json"}, nil, 1, ledger.Failed, []string{"screen:FAIL"}, []string{"abi:"}},
		{"fails the speed stage", []string{"speed-fail.report.json"}, calibratedPolicy, 1, ledger.Failed,
			[]string{"screen:PASS", "qualification:FAIL"}, []string{"proven_slower"}},
		{"passes, then its reproduction fails", []string{"pass.report.json", "speed-fail.report.json"}, calibratedPolicy, 2, ledger.Failed,
			[]string{"screen:PASS", "qualification:PASS", "qualification:FAIL"}, []string{"reproduction:"}},

		// Under the embedded uncalibrated policy a speed verdict is noise:
		// neither a crown nor a loss, and no reproduction is run for it.
		{"an uncalibrated pass is no decision, not reproduced", []string{"pass.report.json", "pass.report.json"}, uncalibratedPolicy, 1, ledger.NoDecision,
			[]string{"screen:PASS", "qualification:PASS"}, []string{"uncalibrated_policy: ", "noise, not evidence", "speed stage's PASS", "cacheon qualify calibrate"}},
		{"an uncalibrated speed fail is no decision, not failed", []string{"speed-fail.report.json"}, uncalibratedPolicy, 1, ledger.NoDecision,
			[]string{"screen:PASS", "qualification:FAIL"}, []string{"uncalibrated_policy: ", "speed stage's FAIL, proven_slower"}},
		// A correctness verdict decides no speed threshold: it stands.
		{"an uncalibrated audit fail is failed", []string{"pass.report.json"}, failsAfterSpeed(qualify.StageAudit, "audit violation: norm.rmsnorm rank 0 call 3"), 1, ledger.Failed,
			[]string{"screen:PASS", "qualification:FAIL"}, []string{"audit: audit violation"}},
		{"an uncalibrated quality fail is failed", []string{"pass.report.json"}, failsAfterSpeed(qualify.StageQuality, "C.regression: [3]"), 1, ledger.Failed,
			[]string{"screen:PASS", "qualification:FAIL"}, []string{"quality: C.regression"}},
		{"an uncalibrated screen fail is failed", []string{"screen-fail.report.json"}, uncalibratedPolicy, 1, ledger.Failed,
			[]string{"screen:FAIL"}, []string{"abi:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			l, id := intake(t)
			runs := 0
			res, err := Next(ctx, l, Options{Qualify: reports(t, &runs, c.edit, c.reports...), Intake: settle.Intake{Lane: settle.LaneRegistered}, WorkDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if runs != c.runs {
				t.Errorf("%d qualifications run, want %d", runs, c.runs)
			}
			p, err := l.Proposal(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != c.status || res.Status != c.status || res.Reason != p.Reason {
				t.Fatalf("proposal %s %q (result %s %q), want %s", p.Status, p.Reason, res.Status, res.Reason, c.status)
			}
			for _, want := range c.reason {
				if !strings.Contains(p.Reason, want) {
					t.Errorf("reason %q does not say %q", p.Reason, want)
				}
			}
			attempts, err := l.Attempts(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range attempts {
				got = append(got, a.Stage+":"+a.Decision)
				if len(a.ReportDigest) != 64 {
					t.Errorf("attempt %d names report %q", a.Seq, a.ReportDigest)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.stages, " ") {
				t.Fatalf("attempts %v, want %v", got, c.stages)
			}
			// These recorded reports are of schema v1, written before
			// reports carried the settlement record: a passing attempt says
			// what it lacks instead of carrying a settlement view
			// (TestRealQualificationsCrown records real views).
			for _, st := range res.Steps {
				if st.Decision == "PASS" && st.Attempt.Stage == ledger.StageQualification && (st.Settles || len(st.Missing) == 0) {
					t.Fatalf("a passing attempt without the settlement fields: %+v", st)
				}
			}
			if rep, err := l.Check(ctx); err != nil || rep == nil {
				t.Fatalf("ledger check: %v", err)
			}
			// Nothing is left to evaluate.
			if _, err := Next(ctx, l, Options{Qualify: reports(t, new(int), nil), WorkDir: t.TempDir()}); !errors.Is(err, ErrNothingPublished) {
				t.Fatalf("a second Next: %v", err)
			}
			// Settlement has nothing to crown, and says why: the proposal
			// it left undecided, with its reason. It refuses nothing. (A
			// stand-in stack: nothing here plans against it.)
			if _, err := l.InitStack(ctx, ledger.Stack{StackDigest: strings.Repeat("a1", 32), TreeDigest: strings.Repeat("b2", 32), HCL: "# a stand-in\n"}); err != nil {
				t.Fatal(err)
			}
			sr, err := apply.Settle(ctx, l, apply.Options{})
			if c.status == ledger.Qualified {
				// A qualified v1 pair carries no settlement views: refused.
				var rej *apply.Rejection
				if !errors.As(err, &rej) || rej.Reason != apply.ReasonMissingView {
					t.Fatalf("settle of a qualified pair without views: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("settle: %v", err)
			}
			var undecided []string
			for _, u := range sr.Undecided {
				undecided = append(undecided, fmt.Sprintf("%d %s %s", u.ProposalID, u.Status, u.Reason))
			}
			want := []string(nil)
			if c.status == ledger.NoDecision {
				want = []string{fmt.Sprintf("%d %s %s", id, ledger.NoDecision, p.Reason)}
			}
			if sr.Committed || strings.Join(undecided, "|") != strings.Join(want, "|") {
				t.Errorf("settle: committed %v, undecided %q, want %q", sr.Committed, undecided, want)
			}
		})
	}
}

// TestNoProposalIsStranded: a run that fails with the proposal in flight
// (an infrastructure error: here the disk filling up at the
// qualification) gives its lease up as a lost attempt: the proposal goes
// back to the queue with a back-off that doubles, and after the policy's
// last attempt ends no_decision (infrastructure). The ledger checks at
// every step.
func TestNoProposalIsStranded(t *testing.T) {
	ctx := context.Background()
	l, id := intake(t)
	clock := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	policy := ledger.LeasePolicy{Term: time.Hour, MaxAttempts: 3, Backoff: 10 * time.Minute}
	diskFull := errors.New("write report: no space left on device")
	o := Options{WorkDir: t.TempDir(), Lease: policy, Now: func() time.Time { return clock },
		Qualify: func(context.Context, string, *qualify.Report) (*qualify.Report, []byte, error) {
			return nil, nil, diskFull
		}}
	for _, c := range []struct {
		status  ledger.Status
		reason  string
		backoff time.Duration
	}{
		{ledger.Published, "lease_reclaimed: attempt 1 of 3 ended without a verdict while screening (run_failed: the evaluation ended without a verdict: write report: no space left on device); back in the queue from 2026-12-06T03:10:00Z", 10 * time.Minute},
		{ledger.Published, "lease_reclaimed: attempt 2 of 3", 20 * time.Minute},
		{ledger.NoDecision, "infrastructure: 3 evaluation attempts ended without a verdict (the last while screening: run_failed: the evaluation ended without a verdict: write report: no space left on device)", 0},
	} {
		if _, err := Next(ctx, l, o); !errors.Is(err, diskFull) {
			t.Fatalf("Next: %v, want the run's error", err)
		}
		p, err := l.Proposal(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != c.status || !strings.HasPrefix(p.Reason, c.reason) {
			t.Fatalf("proposal %s %q, want %s %q", p.Status, p.Reason, c.status, c.reason)
		}
		if rep, err := l.Check(ctx); err != nil || len(rep.Stranded) != 0 {
			t.Fatalf("check: stranded %+v, %v", rep.Stranded, err)
		}
		if c.status != ledger.Published {
			continue
		}
		// Not before the back-off ends.
		clock = clock.Add(c.backoff - time.Second)
		if _, err := Next(ctx, l, o); !errors.Is(err, ErrNothingPublished) || !strings.Contains(err.Error(), fmt.Sprintf("proposal %d backs off until", id)) {
			t.Fatalf("Next during the back-off: %v", err)
		}
		clock = clock.Add(time.Second)
	}
	ls, err := l.LeaseOf(ctx, id)
	if err != nil || ls.Live || ls.Attempts != 3 || ls.Lost != 3 {
		t.Fatalf("lease %+v, %v", ls, err)
	}
}

// TestReclaim: a proposal in flight whose run is gone is reclaimed by the
// next run, which holds the writer lock: a lease of another run on this
// host at once (that run is dead), a lease held on another host only once
// it expires, a proposal in flight with no lease at once. Each is back in
// the queue with its lost attempt counted, and the ledger checks clean.
func TestReclaim(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	policy := ledger.LeasePolicy{Term: time.Hour, MaxAttempts: 3, Backoff: time.Minute}
	for _, c := range []struct {
		name    string
		host    string        // the dead run's host; "" this one
		at      ledger.Status // where the run died
		noLease bool
		after   time.Duration // when the next run looks
		cause   string        // "" still leased
	}{
		{"this host, screening", "", ledger.Screening, false, 0, ledger.CauseHolderGone},
		{"this host, promoted", "", ledger.Promoted, false, 0, ledger.CauseHolderGone},
		{"this host, qualifying", "", ledger.Qualifying, false, 0, ledger.CauseHolderGone},
		{"another host, live", "gpu-7", ledger.Qualifying, false, 59 * time.Minute, ""},
		{"another host, expired", "gpu-7", ledger.Qualifying, false, time.Hour, ledger.CauseExpired},
		{"no lease", "", ledger.Qualifying, true, 0, ledger.CauseNoLease},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, id := intake(t)
			path := l.Path()
			l.Close()
			dead, err := ledger.Open(ctx, path, ledger.Options{Host: c.host})
			if err != nil {
				t.Fatal(err)
			}
			if c.noLease {
				err = dead.Transition(ctx, id, ledger.Screening, "")
			} else {
				_, err = dead.TakeLease(ctx, id, "", now, policy)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []ledger.Status{ledger.Promoted, ledger.Qualifying} {
				if c.at == ledger.Screening || (c.at == ledger.Promoted && s == ledger.Qualifying) {
					break
				}
				if err := dead.Transition(ctx, id, s, ""); err != nil {
					t.Fatal(err)
				}
			}
			dead.Close()

			next, err := ledger.Open(ctx, path, ledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			o := Options{Lease: policy, Now: func() time.Time { return now.Add(c.after) }}
			reclaimed, leased, err := Reclaim(ctx, next, o)
			if err != nil {
				t.Fatal(err)
			}
			p, err := next.Proposal(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if c.cause == "" {
				if len(reclaimed) != 0 || len(leased) != 1 || leased[0].Lease.Holder.Host != c.host || p.Status != c.at {
					t.Fatalf("reclaimed %+v, leased %+v, proposal %s", reclaimed, leased, p.Status)
				}
				if _, err := next.TakeLease(ctx, id, "", now.Add(c.after), policy); !errors.Is(err, ledger.ErrLeased) ||
					!strings.Contains(err.Error(), "leased by gpu-7 pid") || !strings.Contains(err.Error(), "until 2026-12-06T04:00:00Z") {
					t.Fatalf("a second lease: %v", err)
				}
				return
			}
			if len(reclaimed) != 1 || reclaimed[0].Cause != c.cause || reclaimed[0].Was != c.at || reclaimed[0].Lost != 1 || len(leased) != 0 {
				t.Fatalf("reclaimed %+v, leased %+v", reclaimed, leased)
			}
			if p.Status != ledger.Published || !strings.Contains(p.Reason, "lease_reclaimed: attempt 1 of 3") || !strings.Contains(p.Reason, c.cause) {
				t.Fatalf("proposal %s %q", p.Status, p.Reason)
			}
			if again, _, err := Reclaim(ctx, next, o); err != nil || len(again) != 0 {
				t.Fatalf("a second reclaim: %+v, %v", again, err)
			}
			if rep, err := next.Check(ctx); err != nil || len(rep.Stranded) != 0 {
				t.Fatalf("after the reclaim: stranded %+v, %v", rep.Stranded, err)
			}
		})
	}
}
