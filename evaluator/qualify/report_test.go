package qualify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/evidence"
)

// TestRegradeAgreesAndCatchesEdits publishes a real speed stage, re-grades
// its report from the store, then edits the report and the evidence one
// way at a time: each edit must be caught.
func TestRegradeAgreesAndCatchesEdits(t *testing.T) {
	f := enginetest.New(t)
	ev := runSpeedV8(context.Background(), f.Iso, arms(f), smoke(t), testPolicy(), nil)
	if ev.Grade == nil {
		t.Fatalf("no grade: %+v", ev.Outcome)
	}
	store, err := evidence.Open(filepath.Join(t.TempDir(), "evidence"), 0)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := publishSpeed(store, ev)
	if err != nil {
		t.Fatal(err)
	}
	policyDigest, _ := ev.Policy.Digest()
	report := func() *Report {
		sp := *sp // each report edits its own copy
		return &Report{Schema: ReportSchema, Decision: ev.Decision, Reason: ev.Reason, Inputs: Inputs{Policy: policyDigest},
			Stages: []Stage{{Name: "speed", Decision: ev.Decision, Reason: ev.Reason}}, Speed: &sp}
	}
	if err := Regrade(store, report()); err != nil {
		t.Fatalf("regrade of an untouched report: %v", err)
	}
	// Another decision than the one graded, whichever that was (a loaded
	// machine's reads may well drift into NO_DECISION).
	flip := map[Decision]Decision{Pass: Fail, Fail: Pass, NoDecision: Pass}
	other := map[Decision]Decision{Pass: NoDecision, Fail: NoDecision, NoDecision: Fail}
	edits := []struct {
		name string
		edit func(r *Report)
		want error
	}{
		{"decision flipped", func(r *Report) {
			r.Decision = flip[r.Decision]
			r.Stages[0].Decision = flip[r.Stages[0].Decision]
			r.Speed.Decision = flip[r.Speed.Decision]
		}, ErrRegrade},
		{"speedup edited", func(r *Report) { r.Speed.Speedup = "1.5" }, ErrRegrade},
		{"aggregate edited", func(r *Report) { r.Decision = other[r.Decision] }, ErrRegrade},
		{"another policy named", func(r *Report) { r.Inputs.Policy = otherDigest(r.Inputs.Policy) }, ErrRegrade},
		{"reads missing", func(r *Report) { r.Speed.Reads.SHA256 = otherDigest(r.Speed.Reads.SHA256) }, evidence.ErrMissing},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			r := report()
			e.edit(r)
			if err := Regrade(store, r); !errors.Is(err, e.want) {
				t.Fatalf("regrade: %v, want %v", err, e.want)
			}
		})
	}
	// The stored reads themselves rewritten: the store refuses them.
	path := store.Path(sp.Reads.SHA256)
	os.Chmod(path, 0o644)
	os.WriteFile(path, []byte(`{"reads":[]}`), 0o444)
	if err := Regrade(store, report()); !errors.Is(err, evidence.ErrCorrupt) {
		t.Fatalf("regrade over rewritten reads: %v, want ErrCorrupt", err)
	}
}

// otherDigest is d with its first hex digit changed: always a different
// digest, whatever d starts with.
func otherDigest(d string) string {
	if d[0] == '0' {
		return "1" + d[1:]
	}
	return "0" + d[1:]
}
