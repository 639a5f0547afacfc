package bundle

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// FuzzParseAOTExports feeds the AOT export parser TOML documents whose
// aot_exports value is an op's exports, seeded with a valid export, a
// two-step plan and overlapping plans. Accepted exports must respect the
// limits and come back in canonical order.
func FuzzParseAOTExports(f *testing.F) {
	row := strings.TrimPrefix(aotExport, "\n[[ops.aot_exports]]\n")
	f.Add([]byte("[[aot_exports]]\n" + row))
	f.Add([]byte("[[aot_exports]]\n" + row + "[[aot_exports]]\n" +
		strings.NewReplacer(`name = "silu"`, `name = "init"`, "step = 0", "step = 1\nrole = \"init\"").Replace(row)))
	f.Add([]byte("[[aot_exports]]\n" + row + "plan = \"a\"\nspecializes = {head_dim = 64}\n" +
		"[[aot_exports]]\n" + strings.Replace(row, `"silu"`, `"b"`, 1) + "plan = \"b\"\nspecializes = {head_dim = 64, tp = 2}\n"))
	f.Add([]byte("aot_exports = [{provider = \"cutlass.cute.cubin.v1\", name = \"x\", factory = \"f\", profile_inputs = [], bindings = [], device_plan = {launches = [{dynamic_shared_memory = 1}]}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxManifestBytes || checkTOMLShape(data, FileName) != nil {
			return
		}
		var doc map[string]any
		if toml.Unmarshal(data, &doc) != nil {
			return
		}
		raw, ok := doc["aot_exports"]
		if !ok {
			return
		}
		p := &parser{file: FileName}
		exports, err := p.parseAOTExports(&Op{Index: 0}, raw)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not classed as invalid", err)
			}
			return
		}
		if len(exports) > MaxAOTExportsPerOp {
			t.Fatalf("accepted %d exports", len(exports))
		}
		names := map[string]bool{}
		for i, e := range exports {
			if names[e.Name] {
				t.Fatalf("accepted duplicate export name %q", e.Name)
			}
			names[e.Name] = true
			if !sort.StringsAreSorted(e.ProfileInputs) || len(e.ProfileInputs) > MaxAOTProfileInputs {
				t.Fatalf("profile inputs %q not canonical", e.ProfileInputs)
			}
			if i > 0 && exports[i-1].Plan == e.Plan && exports[i-1].Step >= e.Step {
				t.Fatalf("plan %q steps out of order", e.Plan)
			}
		}
	})
}

// FuzzParseRebuildPlan: the rebuild plan parser accepts only registered
// patchers, each once, in run order.
func FuzzParseRebuildPlan(f *testing.F) {
	f.Add([]byte(`{"steps":[{"type":"repo_python","path":"build_cuda_ext.py"},{"type":"repo_python","path":"cacheon/patchers/apply_dep_patch.py"}]}`))
	f.Add([]byte(`{"steps":[{"type":"bundle_python","path":"build.py"}]}`))
	f.Add([]byte(`{"steps":[]}`))
	f.Add([]byte(`{"steps":[{"type":"repo_python","path":"../build_cuda_ext.py"}]}`))
	f.Add([]byte(`{"steps":[{"type":"repo_python","path":"../build_cuda_ext.py"}],"steps":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseRebuildPlan(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not classed as invalid", err)
			}
			return
		}
		seen := map[string]bool{}
		for i, s := range p.Steps {
			if _, ok := patcherByName(s.Name); !ok || seen[s.Name] {
				t.Fatalf("accepted unregistered or repeated patcher %q", s.Name)
			}
			seen[s.Name] = true
			if i > 0 && p.Steps[i-1].Order > s.Order {
				t.Fatal("steps not in run order")
			}
		}
		p.ObservedFeatures()
	})
}
