package bundle

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Patcher is a validator-reviewed rebuild patcher a bundle's rebuild.json
// may select by file name. Bundles never ship or run their own build code.
type Patcher struct {
	Name    string // file name, e.g. "build_cuda_ext.py"
	ID      string // stable identifier, e.g. "cacheon.build-cuda-ext.v1"
	Order   int    // steps run in this order whatever the plan lists
	Feature string // the observed feature a step with this patcher adds
}

// PatcherDir is where reviewed patchers live, relative to the validator's
// source tree; a plan may name a patcher bare or under this directory.
const PatcherDir = "cacheon/patchers"

// Patchers are the registered rebuild patchers, in run order.
var Patchers = []Patcher{
	{Name: "apply_dep_patch.py", ID: "cacheon.apply-dep-patch.v1", Order: 0, Feature: "rebuild:apply_dep_patch"},
	{Name: "build_cuda_ext.py", ID: "cacheon.build-cuda-ext.v1", Order: 1, Feature: "rebuild:build_cuda_ext"},
	{Name: "build_cute_cubin.py", ID: "cacheon.build-cute-cubin.v1", Order: 2, Feature: "rebuild:build_cute_cubin"},
}

func patcherByName(name string) (Patcher, bool) {
	for _, p := range Patchers {
		if p.Name == name {
			return p, true
		}
	}
	return Patcher{}, false
}

// RebuildPlan is a parsed rebuild.json: the reviewed patchers to run, in
// run order.
type RebuildPlan struct {
	Steps []Patcher
}

// ObservedFeatures returns the rebuild features the plan proves, sorted.
func (p *RebuildPlan) ObservedFeatures() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.Steps))
	for _, s := range p.Steps {
		out = append(out, s.Feature)
	}
	sort.Strings(out)
	return out
}

// ParseRebuildPlan parses rebuild.json text: exactly {"steps": [...]},
// each step exactly {"type": "repo_python", "path": <registered patcher>},
// no duplicate patcher. "bundle_python" steps (a bundle running its own
// code) are refused by name.
func ParseRebuildPlan(data []byte) (*RebuildPlan, error) {
	bad := func(key, format string, args ...any) error {
		return newError(ErrSchema, RebuildPlanName, key, format, args...)
	}
	if len(data) > MaxRebuildPlanBytes {
		return nil, newError(ErrLimit, RebuildPlanName, "", "rebuild plan is %d bytes; at most %d are allowed", len(data), MaxRebuildPlanBytes)
	}
	doc, err := decodeJSONObject(data)
	if err != nil {
		return nil, newError(ErrSyntax, RebuildPlanName, "", "invalid JSON: %v", err)
	}
	if len(doc) != 1 || doc["steps"] == nil {
		return nil, bad("", "must contain exactly the \"steps\" key")
	}
	raw, ok := doc["steps"].([]any)
	if !ok {
		return nil, bad("steps", "must be a list")
	}
	plan := &RebuildPlan{}
	seen := map[string]bool{}
	for i, r := range raw {
		key := fmt.Sprintf("steps[%d]", i)
		step, ok := r.(map[string]any)
		if !ok {
			return nil, bad(key, "must be an object")
		}
		if len(step) != 2 || step["type"] == nil || step["path"] == nil {
			return nil, bad(key, "must contain exactly \"type\" and \"path\"")
		}
		switch step["type"] {
		case "repo_python":
		case "bundle_python":
			return nil, bad(key+".type", "\"bundle_python\" is not allowed: a bundle may not execute its own code")
		default:
			return nil, bad(key+".type", "unsupported step type %s", jsonText(step["type"]))
		}
		rel, _ := step["path"].(string)
		name, err := patcherName(rel)
		if err != nil {
			return nil, bad(key+".path", "%v", err)
		}
		if seen[name] {
			return nil, bad(key+".path", "duplicate rebuild patcher %q", name)
		}
		seen[name] = true
		p, _ := patcherByName(name)
		plan.Steps = append(plan.Steps, p)
	}
	sort.SliceStable(plan.Steps, func(a, b int) bool { return plan.Steps[a].Order < plan.Steps[b].Order })
	return plan, nil
}

func patcherName(rel string) (string, error) {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return "", fmt.Errorf("patcher path %q must be a relative string", rel)
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == ".." {
			return "", fmt.Errorf("patcher path %q must not contain traversal", rel)
		}
	}
	name := path.Base(rel)
	if len(parts) != 1 && path.Dir(rel) != PatcherDir {
		return "", fmt.Errorf("patcher path %q must name a registered file under %s", rel, PatcherDir)
	}
	if _, ok := patcherByName(name); !ok {
		return "", fmt.Errorf("unregistered rebuild patcher %q", name)
	}
	return name, nil
}

// LoadRebuildPlan reads rebuild.json at the bundle root; a bundle without
// one has a nil plan.
func LoadRebuildPlan(dir string) (*RebuildPlan, error) {
	return loadRebuildPlan(source{dir: dir})
}

func loadRebuildPlan(src source) (*RebuildPlan, error) {
	dir := src.dir
	p := filepath.Join(dir, RebuildPlanName)
	if err := src.contained(RebuildPlanName); err != nil {
		if _, statErr := os.Lstat(p); os.IsNotExist(statErr) {
			return nil, nil
		}
		return nil, newError(ErrPath, RebuildPlanName, "", "%v", err)
	}
	data, err := src.read(RebuildPlanName, MaxRebuildPlanBytes, ErrLimit, "rebuild plan")
	if err != nil {
		return nil, err
	}
	return ParseRebuildPlan(data)
}
