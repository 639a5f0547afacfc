package evaluate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/bundle"
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
// reports that qualifications wrote), checking that the reproduction
// names the first and that the bundle is the ledger's checkout.
func reports(t *testing.T, files ...string) Qualifier {
	n := 0
	return func(ctx context.Context, dir string, prior *qualify.Report) (*qualify.Report, []byte, error) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(dir, "manifest.toml")); err != nil {
			t.Fatalf("the qualifier got no checkout of the published bytes: %v", err)
		}
		if (n == 0) != (prior == nil) {
			t.Fatalf("qualification %d: prior %v", n, prior != nil)
		}
		data, err := os.ReadFile(filepath.Join("testdata", files[n]))
		if err != nil {
			return nil, nil, err
		}
		n++
		r, err := qualify.ParseReport(data)
		return r, data, err
	}
}

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name    string
		reports []string
		status  ledger.Status
		stages  []string // the recorded attempts' stage:decision
		reason  string
	}{
		{"passes and reproduces", []string{"pass.report.json", "pass.report.json"}, ledger.Qualified,
			[]string{"screen:PASS", "qualification:PASS", "qualification:PASS"}, ""},
		{"fails a screen", []string{"screen-fail.report.json"}, ledger.Failed, []string{"screen:FAIL"}, "abi:"},
		{"fails the speed stage", []string{"speed-fail.report.json"}, ledger.Failed,
			[]string{"screen:PASS", "qualification:FAIL"}, "proven_slower"},
		{"passes, then its reproduction fails", []string{"pass.report.json", "speed-fail.report.json"}, ledger.Failed,
			[]string{"screen:PASS", "qualification:PASS", "qualification:FAIL"}, "reproduction:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, id := intake(t)
			res, err := Next(context.Background(), l, Options{Qualify: reports(t, c.reports...), Intake: settle.Intake{Lane: settle.LaneRegistered}, WorkDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			p, err := l.Proposal(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != c.status || res.Status != c.status || !strings.Contains(p.Reason, c.reason) {
				t.Fatalf("proposal %s %q (result %s), want %s with %q", p.Status, p.Reason, res.Status, c.status, c.reason)
			}
			attempts, err := l.Attempts(context.Background(), id)
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
			if rep, err := l.Check(context.Background()); err != nil || rep == nil {
				t.Fatalf("ledger check: %v", err)
			}
			// Nothing is left to evaluate.
			if _, err := Next(context.Background(), l, Options{Qualify: reports(t), WorkDir: t.TempDir()}); !errors.Is(err, ErrNothingPublished) {
				t.Fatalf("a second Next: %v", err)
			}
		})
	}
}
