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

	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/tools/canonjson"
)

// The two reports are report.json files `cacheon qualify` wrote on an
// H200 (docs/results/qualify-h200): a PASS and a FAIL.
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

func TestFromReportMapsWhatTheReportCarries(t *testing.T) {
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
