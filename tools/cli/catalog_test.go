package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

const goldenCatalogDigest = "171302dde69a419264958499d07cd57f84e84516dee0e89c40a630f807a8152b"

func catalogJSONKeys(t *testing.T, out string) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output is not one JSON document: %v\n%s", err, out)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeBrokenCatalog writes the default catalog with the atomic target no
// longer displacing one of its members, and returns its path and the line
// of the broken member list.
func writeBrokenCatalog(t *testing.T) (string, int) {
	t.Helper()
	src := string(catalog.DefaultSource())
	old := `displaces           = ["collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"]`
	if !strings.Contains(src, old) {
		t.Fatal("default catalog changed: edit anchor not found")
	}
	src = strings.Replace(src, old, `displaces           = ["collective.ar_residual_rmsnorm"]`, 1)
	line := 0
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, `members             = ["collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"]`) {
			line = i + 1
		}
	}
	path := filepath.Join(t.TempDir(), "broken.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, line
}

func TestCatalogCheck(t *testing.T) {
	broken, line := writeBrokenCatalog(t)
	def := filepath.Join(t.TempDir(), "targets.hcl")
	os.WriteFile(def, catalog.DefaultSource(), 0o644)
	tests := []struct {
		name  string
		args  []string
		code  int
		inOut string
		inErr string
	}{
		{"embedded default", []string{"catalog", "check"}, 0, "catalog digest " + goldenCatalogDigest, ""},
		{"default file", []string{"catalog", "check", def}, 0, "12 targets (11 slot, 1 atomic)", ""},
		{"broken file names rule and position", []string{"catalog", "check", broken}, 2, "",
			fmt.Sprintf("%s:%d:60: error: Member not displaced [atomic-members-displaced]", broken, line)},
		{"missing file is I/O", []string{"catalog", "check", filepath.Join(t.TempDir(), "nope.hcl")}, 1, "", "nope.hcl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.code, out, errOut)
			}
			if !strings.Contains(out, tt.inOut) || !strings.Contains(errOut, tt.inErr) {
				t.Fatalf("stdout %q / stderr %q, want %q / %q", out, errOut, tt.inOut, tt.inErr)
			}
		})
	}
}

func TestCatalogCheckJSON(t *testing.T) {
	broken, line := writeBrokenCatalog(t)
	code, out, _ := run(t, "", "catalog", "check", broken, "--json")
	if code != enginecli.ExitRejected {
		t.Fatalf("exit %d, want %d", code, enginecli.ExitRejected)
	}
	want := []string{"artifact_providers", "atomic_targets", "composition_rules", "diagnostics", "embedded", "error_count", "file", "format_version", "slot_targets", "slots", "valid", "warning_count"}
	if got := catalogJSONKeys(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	var view struct {
		Valid       bool `json:"valid"`
		ErrorCount  int  `json:"error_count"`
		Diagnostics []struct {
			Rule  string `json:"rule"`
			Range struct {
				Filename string `json:"filename"`
				Start    struct{ Line, Column int }
			} `json:"range"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &view); err != nil {
		t.Fatal(err)
	}
	if view.Valid || view.ErrorCount != 1 || len(view.Diagnostics) != 1 {
		t.Fatalf("view %+v, want one error", view)
	}
	d := view.Diagnostics[0]
	if d.Rule != "atomic-members-displaced" || d.Range.Filename != broken || d.Range.Start.Line != line || d.Range.Start.Column != 60 {
		t.Errorf("diagnostic %+v, want atomic-members-displaced at %s:%d:60", d, broken, line)
	}

	code, out, _ = run(t, "", "catalog", "check", "--json")
	if code != enginecli.ExitOK {
		t.Fatalf("exit %d for the default catalog", code)
	}
	want = []string{"artifact_providers", "atomic_targets", "catalog_digest", "composition_rules", "diagnostics", "embedded", "error_count", "file", "format_version", "slot_targets", "slots", "valid", "warning_count"}
	if got := catalogJSONKeys(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	if !strings.Contains(out, `"diagnostics": []`) {
		t.Errorf("a valid catalog must report an empty diagnostics array, not null:\n%s", out)
	}
}

func TestCatalogDigest(t *testing.T) {
	code, out, _ := run(t, "", "catalog", "digest")
	if code != 0 || out != goldenCatalogDigest+"\n" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	code, out, _ = run(t, "", "catalog", "digest", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := []string{"artifact_provider_registry_digest", "binding_contract_digests", "catalog_digest", "embedded", "file", "format_version", "targets"}
	if got := catalogJSONKeys(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	var view struct {
		Targets map[string]struct {
			TargetSpecDigest string `json:"target_spec_digest"`
		} `json:"targets"`
		Bindings map[string]string `json:"binding_contract_digests"`
	}
	json.Unmarshal([]byte(out), &view)
	if d := view.Targets["activation.silu_and_mul"].TargetSpecDigest; !strings.HasPrefix(d, "ad6ce779") || !strings.HasSuffix(d, "5350") {
		t.Errorf("silu target-spec digest %q", d)
	}
	if d := view.Bindings["sglang.moe.reduce-first.v1"]; !strings.HasPrefix(d, "abc63bc0") {
		t.Errorf("binding contract digest %q", d)
	}
	broken, _ := writeBrokenCatalog(t)
	if code, out, _ := run(t, "", "catalog", "digest", broken); code != enginecli.ExitRejected || out != "" {
		t.Errorf("digest of a broken catalog: exit %d, stdout %q", code, out)
	}
}

func TestCatalogSnapshotHashesToDigest(t *testing.T) {
	code, out, _ := run(t, "", "catalog", "snapshot")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	payload, err := canonjson.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if d := identity.MustH("cacheon.target-catalog", payload).String(); d != goldenCatalogDigest {
		t.Errorf("snapshot hashes to %s, want %s", d, goldenCatalogDigest)
	}
}

func TestCatalogShow(t *testing.T) {
	code, out, _ := run(t, "", "catalog", "show", "collective.moe_epilogue.v1")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"target collective.moe_epilogue.v1 (atomic)",
		"target-spec digest  21177ee8",
		"slot collective.moe_finalize_ar_rmsnorm (collective)",
		"call                moe_finalize_ar_rmsnorm(gemm_out, row_map, scales, residual, weight, eps, out_norm, out_residual, group)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, "", "catalog", "show", "attention.msa_prefill_block_score", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got, want := catalogJSONKeys(t, out), []string{"format_version", "slots", "target_id", "target_spec", "target_spec_digest"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	var view struct {
		TargetSpec json.RawMessage `json:"target_spec"`
		Digest     string          `json:"target_spec_digest"`
		Slots      []struct {
			KL     *string   `json:"kl_threshold"`
			Shapes [][]int64 `json:"shapes"`
		} `json:"slots"`
	}
	json.Unmarshal([]byte(out), &view)
	row, err := canonjson.Parse(view.TargetSpec)
	if err != nil {
		t.Fatal(err)
	}
	if d := identity.MustH("cacheon.target-spec", row).String(); d != view.Digest || !strings.HasPrefix(d, "36180581") {
		t.Errorf("target_spec hashes to %s, reported %s", d, view.Digest)
	}
	if len(view.Slots) != 1 || view.Slots[0].KL == nil || *view.Slots[0].KL != "0.03" || len(view.Slots[0].Shapes) != 11 || view.Slots[0].Shapes[4][4] != 1 {
		t.Errorf("slot view %+v", view.Slots)
	}
	code, _, errOut := run(t, "", "catalog", "show", "activation.silu")
	if code != enginecli.ExitRejected || !strings.Contains(errOut, "activation.silu_and_mul") {
		t.Errorf("unknown target: exit %d, stderr %q", code, errOut)
	}
}

func TestSlots(t *testing.T) {
	code, out, _ := run(t, "", "slots")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "Registered op-slots (the submission ABI):" || len(lines) != 12 {
		t.Fatalf("slots output:\n%s", out)
	}
	if f := strings.Fields(lines[1]); f[0] != "activation.silu_and_mul" || f[1] != "op" {
		t.Errorf("first slot line %q", lines[1])
	}
	code, out, _ = run(t, "", "slots", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if got, want := catalogJSONKeys(t, out), []string{"catalog_digest", "count", "embedded", "file", "format_version", "slots"}; !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	var view struct {
		Count int              `json:"count"`
		Slots []map[string]any `json:"slots"`
	}
	json.Unmarshal([]byte(out), &view)
	if view.Count != 11 || len(view.Slots) != 11 {
		t.Fatalf("count %d, %d slots", view.Count, len(view.Slots))
	}
	var keys []string
	for k := range view.Slots[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"binding_family_id", "call", "correctness", "entry", "graph_dynamic_inputs", "input_abi_id", "kind", "kl_threshold", "output_abi_id", "outputs", "prepare", "reference_id", "shape_flags", "shape_params", "shapes", "slot_id", "summary", "tolerances", "verification_profile_id"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("slot keys %v, want %v", keys, want)
	}
}

func TestCatalogHelpTeaches(t *testing.T) {
	for _, args := range [][]string{
		{"catalog", "--help"}, {"catalog", "check", "--help"}, {"catalog", "digest", "--help"},
		{"catalog", "show", "--help"}, {"catalog", "snapshot", "--help"}, {"slots", "--help"},
	} {
		code, out, _ := run(t, "", args...)
		if code != 0 || len(out) < 200 {
			t.Errorf("%v: exit %d, %d bytes of help", args, code, len(out))
		}
		if !strings.Contains(out, "Examples:") {
			t.Errorf("%v: help has no examples", args)
		}
	}
}
