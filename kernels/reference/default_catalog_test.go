package reference_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/evaluator/worker"
)

var update = flag.Bool("update", false, "rewrite "+defaultCatalogFile+" from catalog/targets.hcl")

// defaultCatalogFile holds the default catalog's slot contracts for Python
// code that runs outside a verify worker (the engine substrate's tests, this
// package's own tests). Verify workers never read it: the controller sends
// them the contract it reads from the catalog in use. It sits in a
// subdirectory the binary does not embed, so a worker cannot fall back to it.
const defaultCatalogFile = "cacheon_reference/default_catalog/__init__.py"

const regenerate = "go test ./kernels/reference -run TestDefaultCatalogContractsAreCurrent -update"

// TestDefaultCatalogContractsAreCurrent fails when catalog/targets.hcl and
// the generated contracts disagree, naming each slot, field and both values.
func TestDefaultCatalogContractsAreCurrent(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderDefaultCatalog(cat)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := writeAtomic(defaultCatalogFile, want); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(defaultCatalogFile)
	if err != nil {
		t.Fatalf("%v (generate it with: %s)", err, regenerate)
	}
	if diffs, err := contractDiffs(cat, got); err != nil {
		t.Fatalf("%s: %v (regenerate it with: %s)", defaultCatalogFile, err, regenerate)
	} else if len(diffs) > 0 {
		t.Fatalf("%s is stale against %s (regenerate it with: %s):\n  %s", defaultCatalogFile, catalog.DefaultFile,
			regenerate, strings.Join(diffs, "\n  "))
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s holds the catalog's values but not in generated form (regenerate it with: %s)", defaultCatalogFile, regenerate)
	}
}

// TestContractDiffsNameSlotFieldAndValues edits a copy of the default
// catalog and checks that the comparison against the generated file reports
// exactly the edited slot and field with both values.
func TestContractDiffsNameSlotFieldAndValues(t *testing.T) {
	generated, err := os.ReadFile(defaultCatalogFile)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		old, new string // a unique span of targets.hcl and its replacement
		want     []string
	}{
		{"tolerance", `float32  = { atol = "0.00001", rtol = "0.00001" }`, `float32  = { atol = "0.0001", rtol = "0.00001" }`,
			[]string{`activation.silu_and_mul: tolerances.float32.atol: catalog "0.0001", ` + defaultCatalogFile + ` "0.00001"`}},
		{"min_ratio", "mode      = \"matched_ratio\"\n    min_ratio = \"0.97\"\n  }\n  tolerances = tolerance_set.standard\n\n  shape_params = [\"M\", \"E\", \"H\", \"I\", \"K\"]\n  shapes = [\n    [4, 8, 256, 128, 2],\n    [16, 32, 512, 256, 4],\n    [8, 4, 384, 192, 1],\n    [33",
			"mode      = \"matched_ratio\"\n    min_ratio = \"0.95\"\n  }\n  tolerances = tolerance_set.standard\n\n  shape_params = [\"M\", \"E\", \"H\", \"I\", \"K\"]\n  shapes = [\n    [4, 8, 256, 128, 2],\n    [16, 32, 512, 256, 4],\n    [8, 4, 384, 192, 1],\n    [33",
			[]string{`moe.fused_experts: correctness.min_ratio: catalog "0.95", ` + defaultCatalogFile + ` "0.97"`}},
		{"shape", `shapes       = [[1, 1024], [8, 1024],`, `shapes       = [[2, 1024], [8, 1024],`,
			[]string{`activation.silu_and_mul: shapes[0]: catalog [2,1024], ` + defaultCatalogFile + ` [1,1024]`}},
		{"graph-dynamic inputs", `graph_dynamic_inputs = ["x", "residual"]`, `graph_dynamic_inputs = ["x"]`,
			[]string{`collective.ar_residual_rmsnorm: graph_dynamic_inputs: catalog ["x"], ` + defaultCatalogFile + ` ["x","residual"]`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := string(catalog.DefaultSource())
			if n := strings.Count(src, tc.old); n != 1 {
				t.Fatalf("the edit's span occurs %d times in %s; the test needs it exactly once", n, catalog.DefaultFile)
			}
			cat, diags := catalog.Parse([]byte(strings.Replace(src, tc.old, tc.new, 1)), "edited-targets.hcl")
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			diffs, err := contractDiffs(cat, generated)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				found := false
				for _, d := range diffs {
					found = found || d == w
				}
				if !found {
					t.Errorf("diffs lack %q; got:\n  %s", w, strings.Join(diffs, "\n  "))
				}
			}
			if tc.name != "tolerance" && len(diffs) != len(tc.want) {
				t.Errorf("got %d differences, want %d:\n  %s", len(diffs), len(tc.want), strings.Join(diffs, "\n  "))
			}
		})
	}
}

// renderDefaultCatalog is the generated Python module: the catalog's
// contracts in wire form, as JSON the module parses at import.
func renderDefaultCatalog(cat *catalog.Catalog) ([]byte, error) {
	body, err := json.MarshalIndent(contractsOf(cat), "", " ")
	if err != nil {
		return nil, err
	}
	// The JSON goes into a raw triple-quoted string; neither a backslash
	// nor a triple quote may occur in it.
	if bytes.Contains(body, []byte(`\`)) || bytes.Contains(body, []byte(`"""`)) {
		return nil, fmt.Errorf("the contracts' JSON holds a backslash or a triple quote and cannot be embedded")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Code generated from %s by `%s`. DO NOT EDIT.\n", catalog.DefaultFile, regenerate)
	b.WriteString(`"""The slot contracts of the default catalog, by slot id, in the wire form a
verify worker receives them (see docs/reference/worker-protocol.md).

For Python code that runs outside a verify worker and needs a slot's catalog
values: cacheon_reference.get(name) binds them. Verify workers never read
this module: the controller sends them the contract of the catalog in use.
"""

import json

CONTRACTS = json.loads(r"""
`)
	b.Write(body)
	b.WriteString("\n\"\"\")\n")
	return b.Bytes(), nil
}

func contractsOf(cat *catalog.Catalog) map[string]worker.SlotContract {
	out := map[string]worker.SlotContract{}
	for _, s := range cat.Slots() {
		out[s.ID] = worker.ContractOf(s)
	}
	return out
}

// contractDiffs compares the catalog's contracts with those in a generated
// module, one line per differing field: "slot: field: catalog X, file Y".
func contractDiffs(cat *catalog.Catalog, module []byte) ([]string, error) {
	start := bytes.Index(module, []byte(`r"""`))
	end := bytes.LastIndex(module, []byte(`"""`))
	if start < 0 || end <= start+4 {
		return nil, fmt.Errorf("no r\"\"\"…\"\"\" JSON block")
	}
	var file map[string]any
	if err := json.Unmarshal(module[start+4:end], &file); err != nil {
		return nil, fmt.Errorf("contracts JSON: %w", err)
	}
	raw, err := json.Marshal(contractsOf(cat))
	if err != nil {
		return nil, err
	}
	var want map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		return nil, err
	}
	var diffs []string
	for _, slot := range unionKeys(want, file) {
		w, inCat := want[slot]
		f, inFile := file[slot]
		switch {
		case !inFile:
			diffs = append(diffs, fmt.Sprintf("%s: registered in the catalog, missing from %s", slot, defaultCatalogFile))
		case !inCat:
			diffs = append(diffs, fmt.Sprintf("%s: in %s, not registered in the catalog", slot, defaultCatalogFile))
		default:
			diffValues(slot+": ", "", w, f, &diffs)
		}
	}
	return diffs, nil
}

// diffValues appends one line per leaf where want and got differ. Lists of
// scalars differ as a whole (an inserted name is one difference, not a
// cascade); lists of lists and objects are compared element by element.
func diffValues(prefix, path string, want, got any, out *[]string) {
	wm, wIsMap := want.(map[string]any)
	gm, gIsMap := got.(map[string]any)
	if wIsMap && gIsMap {
		for _, k := range unionKeys(wm, gm) {
			diffValues(prefix, join(path, k), wm[k], gm[k], out)
		}
		return
	}
	wl, wIsList := want.([]any)
	gl, gIsList := got.([]any)
	if wIsList && gIsList && len(wl) == len(gl) && len(wl) > 0 && !scalars(wl) {
		for i := range wl {
			diffValues(prefix, fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i], out)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		*out = append(*out, fmt.Sprintf("%s%s: catalog %s, %s %s", prefix, path, compact(want), defaultCatalogFile, compact(got)))
	}
}

func scalars(xs []any) bool {
	for _, x := range xs {
		switch x.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func unionKeys[V any](a, b map[string]V) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
