package settle_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cacheon/engine/evaluator/qualify"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/settlement/settle"
)

// rmsnorm_torch and silu_and_mul_torch are report.json files `cacheon
// qualify` wrote on an H200 (docs/results/qualify-h200), of schema v1: a
// PASS and a FAIL. cpu-first and cpu-reproduction are the two v2 reports
// of settlement/evaluate's crown test (recorded with its -update flag):
// a real qualification on the CPU lane and its reproduction.
func readReport(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// editReport rewrites a report's JSON and returns it canonical again.
func editReport(t *testing.T, data []byte, edit func(doc map[string]any)) []byte {
	t.Helper()
	v, err := canonjson.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	edit(v.(map[string]any))
	out, err := canonjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var intake = settle.Intake{Lane: settle.LaneRegistered, Arena: "h200-test", Reservation: dg("reservation"),
	Finalized: settle.Position{Block: 12, EventIndex: 1}, Hotkey: "5Hotkey"}

func TestFromReportMapsAV1ReportAndListsWhatItLacks(t *testing.T) {
	data := readReport(t, "rmsnorm_torch.report.json")
	q, err := settle.FromReport(data, intake)
	if got := reasonOf(t, err); got != "missing_field:target_spec" {
		t.Fatalf("reason %q, want missing_field:target_spec (%v)", got, err)
	}
	var r *settle.Rejection
	errors.As(err, &r)
	wantMissing := []string{"target_spec", "members", "qualification_authority", "qualification_plan", "qualification_attempt",
		"selection_commitment", "selection_secret_commitment", "selection_evidence", "proposal", "transition",
		"audit_control", "audit_policy", "audit_evidence", "lane_orientation"}
	if !reflect.DeepEqual(r.Missing, wantMissing) {
		t.Fatalf("missing %v, want %v", r.Missing, wantMissing)
	}

	var doc struct {
		Inputs map[string]string `json:"inputs"`
		Speed  struct {
			Speedup string `json:"speedup"`
		} `json:"speed"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(data, []byte("\n")))
	want := settle.Qualification{
		Lane: intake.Lane, Arena: intake.Arena, Reservation: intake.Reservation, Finalized: intake.Finalized, Hotkey: intake.Hotkey,
		TargetID: "norm.rmsnorm", SelectedDelta: doc.Inputs["selected_delta"], Report: hex.EncodeToString(sum[:]),
		Arm: doc.Inputs["marginal_arm_plan"], IncumbentStack: doc.Inputs["incumbent_stack"], IncumbentTree: doc.Inputs["incumbent_tree"],
		CandidateStack: doc.Inputs["candidate_stack"], CandidateTree: doc.Inputs["candidate_tree"],
		Speedup: "1.0956091854508474", SpeedEvidencePolicy: doc.Inputs["speed_policy"],
	}
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("mapped\n%+v\nwant\n%+v", q, want)
	}
	// What is missing is missing: the partial view never settles.
	if _, err := settle.Pair(q, q); reasonOf(t, err) != "invalid_field:target_spec" {
		t.Fatalf("a partial qualification pairs: %v", err)
	}
}

func TestFromReportRefusals(t *testing.T) {
	pass := readReport(t, "rmsnorm_torch.report.json")
	cases := []struct {
		name   string
		data   []byte
		reason settle.Reason
	}{
		{"a failed qualification", readReport(t, "silu_and_mul_torch.report.json"), "not_passed"},
		{"a report of another schema", editReport(t, pass, func(d map[string]any) { d["schema"] = "cacheon.qualification-report.v0" }), "report_schema"},
		{"a pass without a graded speed stage", editReport(t, pass, func(d map[string]any) { d["speed"] = nil }), "not_passed:speed"},
		{"a pass whose speed stage did not pass", editReport(t, pass, func(d map[string]any) { d["speed"].(map[string]any)["decision"] = "NO_DECISION" }), "not_passed:speed"},
		{"a report without its target", editReport(t, pass, func(d map[string]any) { d["inputs"].(map[string]any)["target_id"] = "" }), "missing_field:target_id"},
		{"a reformatted report", append([]byte(" "), pass...), "invalid_field:report"},
		{"a report with a field the report type does not know", editReport(t, pass, func(d map[string]any) { d["crown"] = true }), "invalid_field:report"},
		{"not JSON", []byte("PASS"), "invalid_field:report"},
		{"a pass graded under the uncalibrated default policy", editReport(t, readReport(t, "cpu-first.report.json"), func(d map[string]any) {
			d["inputs"].(map[string]any)["calibration"] = qualify.UncalibratedDigest()
		}), "uncalibrated_policy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := settle.FromReport(c.data, intake)
			if got := reasonOf(t, err); got != c.reason {
				t.Fatalf("reason %q, want %q (%v)", got, c.reason, err)
			}
		})
	}
	// The canonical bytes without report.json's newline are the same report.
	a, _ := settle.FromReport(pass, intake)
	b, _ := settle.FromReport(bytes.TrimSuffix(pass, []byte("\n")), intake)
	if a.Report == "" || a.Report != b.Report {
		t.Fatalf("report digest %q with the newline, %q without", a.Report, b.Report)
	}
}

// TestRealReportsSettle maps the two real v2 reports onto qualifications
// that validate and pair: every settlement field comes from the report.
func TestRealReportsSettle(t *testing.T) {
	first, second := readReport(t, "cpu-first.report.json"), readReport(t, "cpu-reproduction.report.json")
	a, err := settle.FromReport(first, intake)
	if err != nil {
		t.Fatalf("first: %v", err)
	}
	b, err := settle.FromReport(second, intake)
	if err != nil {
		t.Fatalf("reproduction: %v", err)
	}
	var doc struct {
		Attempt struct {
			Authority, Plan, Digest   string
			SelectionCommitment       string `json:"selection_commitment"`
			SelectionSecretCommitment string `json:"selection_secret_commitment"`
		} `json:"attempt"`
		Transition struct {
			TargetSpec string   `json:"target_spec"`
			Members    []string `json:"members"`
			Proposal   string   `json:"proposal"`
			Prior      string   `json:"prior"`
		} `json:"transition"`
		Audit        struct{ SHA256 string } `json:"audit"`
		AuditControl string                  `json:"audit_control"`
		Quality      struct {
			Receipt string `json:"selection_receipt"`
		} `json:"quality"`
	}
	if err := json.Unmarshal(first, &doc); err != nil {
		t.Fatal(err)
	}
	got := []string{a.Authority, a.Plan, a.Attempt, a.SelectionCommitment, a.SelectionSecretCommitment, a.SelectionEvidence,
		a.TargetSpec, a.Proposal, a.Transition.Prior, a.AuditControl, a.AuditEvidence}
	want := []string{doc.Attempt.Authority, doc.Attempt.Plan, doc.Attempt.Digest, doc.Attempt.SelectionCommitment, doc.Attempt.SelectionSecretCommitment,
		doc.Quality.Receipt, doc.Transition.TargetSpec, doc.Transition.Proposal, doc.Transition.Prior, doc.AuditControl, doc.Audit.SHA256}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(a.Members, doc.Transition.Members) || a.AuditPolicy == nil || a.LaneOrientation != nil {
		t.Fatalf("mapped %+v\nfrom %+v", a, doc)
	}
	c, err := settle.Pair(a, b)
	if err != nil {
		t.Fatalf("the real pair: %v", err)
	}
	if c.Speedup() != a.Speedup && c.Speedup() != b.Speedup {
		t.Fatalf("conservative speedup %s of %s and %s", c.Speedup(), a.Speedup, b.Speedup)
	}

	// A report without a settlement record is refused by name, and a
	// second report of the same attempt is no reproduction.
	for _, e := range []struct {
		name   string
		edit   func(d map[string]any)
		reason settle.Reason
	}{
		{"no attempt record", func(d map[string]any) { d["attempt"] = nil }, "missing_field:qualification_authority"},
		{"no transition", func(d map[string]any) { d["transition"] = nil }, "missing_field:target_spec"},
		{"no selection receipt", func(d map[string]any) { d["quality"].(map[string]any)["selection_receipt"] = "" }, "missing_field:selection_evidence"},
		{"no audit policy", func(d map[string]any) { d["audit_policy"] = nil }, "missing_field:audit_policy"},
		{"no audit evidence", func(d map[string]any) { delete(d, "audit") }, "missing_field:audit_evidence"},
		{"an audit policy of other slots", func(d map[string]any) {
			d["audit_policy"].(map[string]any)["expected_slots"] = []any{"activation.silu_and_mul"}
		}, "invalid_field:audit_policy.expected_slots"},
	} {
		t.Run(e.name, func(t *testing.T) {
			if _, err := settle.FromReport(editReport(t, first, e.edit), intake); reasonOf(t, err) != e.reason {
				t.Fatalf("reason %q, want %q (%v)", reasonOf(t, err), e.reason, err)
			}
		})
	}
	again, err := settle.FromReport(editReport(t, first, func(d map[string]any) { d["seconds"] = "1" }), intake)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := settle.Pair(a, again); reasonOf(t, err) != "shared_authority_digest:authority" {
		t.Fatalf("the same attempt twice pairs: %v", err)
	}
}
