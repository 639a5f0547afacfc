package bundle

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// AOT export limits (validator policy).
const (
	MaxAOTExportsPerOp      = 16
	MaxAOTProfileInputs     = 16
	MaxAOTFactoryLength     = 128
	MaxAOTProfileInputLen   = 128
	MaxAOTPlanStep          = 255
	MaxArtifactResources    = 32
	MaxArtifactResourceSize = 64 << 30
	MaxArtifactResourceSum  = 128 << 30
	MaxDevicePlanKernels    = 1024
	MaxDevicePlanLaunches   = 256
	MaxDevicePlanBindings   = 64
	MaxDynamicSharedMemory  = 1 << 20
)

// AOTExport is one validator-prebuilt artifact an op row exports. The
// factory is a symbol of the op's source module that only the validator's
// isolated compiler worker ever runs; profile inputs name validator-owned
// values from the provider's allowlist.
type AOTExport struct {
	Provider      string
	Name          string
	Factory       string
	ProfileInputs []string // sorted
	Role          string   // init, prepare, reset, run or destroy
	Plan          string
	Step          int
	Specializes   map[string]any
	// Bindings, Prelaunch, DevicePlan and the sealed capability
	// requirements are kept as parsed TOML data; the provider's call ABI
	// interprets them.
	Bindings                             any
	Prelaunch                            any
	DevicePlan                           map[string]any
	ProviderCapabilityRequirements       any
	SpecializationCapabilityRequirements any
}

// ArtifactProvider is a registered AOT artifact provider as the manifest
// parser needs it.
type ArtifactProvider struct {
	ID                   string
	CompileProfileInputs []string // allowlist
	NeedsDevicePlan      bool     // binding ABI cuda_driver_params.v1
	// RequiredFeatures are the target features a bundle using the provider
	// must be admitted for; RebuildFeature is the prebuild step's feature.
	RequiredFeatures []string
	RebuildFeature   string
}

// CuteCubinProvider is the one registered provider: CuTe DSL kernels
// compiled to CUBIN in the validator's no-network prebuild.
var CuteCubinProvider = ArtifactProvider{
	ID: "cutlass.cute.cubin.v1",
	CompileProfileInputs: []string{
		"max_active_clusters.cluster_size_1",
		"max_active_clusters.cluster_size_16",
		"max_active_clusters.cluster_size_2",
		"max_active_clusters.cluster_size_4",
		"max_active_clusters.cluster_size_8",
	},
	NeedsDevicePlan:  true,
	RequiredFeatures: []string{"aot:cutlass.cute.cubin.v1", "rebuild:build_cute_cubin"},
	RebuildFeature:   "rebuild:build_cute_cubin",
}

// Providers returns the registered AOT providers by id.
func Providers() map[string]ArtifactProvider {
	return map[string]ArtifactProvider{CuteCubinProvider.ID: CuteCubinProvider}
}

var (
	aotNamePattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	aotProviderPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
	aotPlanPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	aotProfileComp     = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
)

// aotRoleRank orders lifecycle roles within a plan.
var aotRoleRank = map[string]int{"init": 0, "prepare": 1, "reset": 2, "run": 3, "destroy": 4}

var aotRequiredKeys = []string{"bindings", "factory", "name", "profile_inputs", "provider"}
var aotOptionalKeys = map[string]bool{
	"device_plan": true, "plan": true, "prelaunch": true, "provider_capability_requirements": true,
	"role": true, "specialization_capability_requirements": true, "specializes": true, "step": true,
}

func (p *parser) parseAOTExports(op *Op, raw any) ([]AOTExport, error) {
	field := op.Key("aot_exports")
	arr, ok := raw.([]any)
	if !ok {
		return nil, p.errorf(field, "must be an array of tables, got %s", tomlType(raw))
	}
	if len(arr) > MaxAOTExportsPerOp {
		return nil, p.errorf(field, "has %d exports; at most %d are allowed", len(arr), MaxAOTExportsPerOp)
	}
	providers := Providers()
	var exports []AOTExport
	names := map[string]bool{}
	for j, r := range arr {
		key := fmt.Sprintf("%s[%d]", field, j)
		t, ok := r.(map[string]any)
		if !ok {
			return nil, p.errorf(key, "must be a table")
		}
		var missing, unknown []string
		for _, k := range aotRequiredKeys {
			if _, ok := t[k]; !ok {
				missing = append(missing, k)
			}
		}
		for k := range t {
			if !aotOptionalKeys[k] && !contains(aotRequiredKeys, k) {
				unknown = append(unknown, k)
			}
		}
		sort.Strings(unknown)
		if len(missing) > 0 || len(unknown) > 0 {
			return nil, p.errorf(key, "fields mismatch: missing %q, unknown %q", missing, unknown)
		}
		var e AOTExport
		e.Provider, _ = t["provider"].(string)
		if !aotProviderPattern.MatchString(e.Provider) {
			return nil, p.errorf(key+".provider", "%q must be a bounded canonical identifier", e.Provider)
		}
		prov, registered := providers[e.Provider]
		if !registered {
			return nil, p.errorf(key+".provider", "provider %q is not registered", e.Provider)
		}
		e.Name, _ = t["name"].(string)
		if !aotNamePattern.MatchString(e.Name) {
			return nil, p.errorf(key+".name", "%q must match %s", e.Name, aotNamePattern)
		}
		if names[e.Name] {
			return nil, p.errorf(key+".name", "duplicate AOT export name %q", e.Name)
		}
		names[e.Name] = true
		e.Factory, _ = t["factory"].(string)
		if len(e.Factory) > MaxAOTFactoryLength || !isASCII(e.Factory) || !IsPythonIdentifier(e.Factory) || pythonKeywords[e.Factory] {
			return nil, p.errorf(key+".factory", "%q must be an ASCII Python identifier (not a keyword) of at most %d characters", e.Factory, MaxAOTFactoryLength)
		}
		inputs, ok := t["profile_inputs"].([]any)
		if !ok {
			return nil, p.errorf(key+".profile_inputs", "must be an array of strings")
		}
		if len(inputs) > MaxAOTProfileInputs {
			return nil, p.errorf(key+".profile_inputs", "has %d entries; at most %d are allowed", len(inputs), MaxAOTProfileInputs)
		}
		seenInput := map[string]bool{}
		for k, v := range inputs {
			ik := fmt.Sprintf("%s.profile_inputs[%d]", key, k)
			s, _ := v.(string)
			if s == "" || s != strings.TrimSpace(s) || len(s) > MaxAOTProfileInputLen {
				return nil, p.errorf(ik, "must be a non-empty canonical string of at most %d characters", MaxAOTProfileInputLen)
			}
			for _, c := range strings.Split(s, ".") {
				if !aotProfileComp.MatchString(c) {
					return nil, p.errorf(ik, "%q must be dot-separated lowercase identifiers", s)
				}
			}
			if !contains(prov.CompileProfileInputs, s) {
				return nil, p.errorf(ik, "%q is not registered for provider %s (allowed: %s)", s, prov.ID, strings.Join(prov.CompileProfileInputs, ", "))
			}
			if seenInput[s] {
				return nil, p.errorf(ik, "duplicate profile input %q", s)
			}
			seenInput[s] = true
			e.ProfileInputs = append(e.ProfileInputs, s)
		}
		sort.Strings(e.ProfileInputs)
		e.Role = "run"
		if v, ok := t["role"]; ok {
			s, _ := v.(string)
			if _, known := aotRoleRank[s]; !known {
				return nil, p.errorf(key+".role", "%q must be one of init, prepare, reset, run, destroy", s)
			}
			e.Role = s
		}
		e.Plan = "default"
		if v, ok := t["plan"]; ok {
			s, _ := v.(string)
			if !aotPlanPattern.MatchString(s) {
				return nil, p.errorf(key+".plan", "%q must match %s", s, aotPlanPattern)
			}
			e.Plan = s
		}
		if v, ok := t["step"]; ok {
			n, isInt := v.(int64)
			if !isInt || n < 0 || n > MaxAOTPlanStep {
				return nil, p.errorf(key+".step", "must be an integer in [0, %d]", MaxAOTPlanStep)
			}
			e.Step = int(n)
		}
		e.Specializes = map[string]any{}
		if v, ok := t["specializes"]; ok {
			m, isTable := v.(map[string]any)
			if !isTable {
				return nil, p.errorf(key+".specializes", "must be a table")
			}
			e.Specializes = m
		}
		e.Bindings = t["bindings"]
		if _, ok := e.Bindings.([]any); !ok {
			return nil, p.errorf(key+".bindings", "must be an array")
		}
		e.Prelaunch = t["prelaunch"]
		e.ProviderCapabilityRequirements = t["provider_capability_requirements"]
		e.SpecializationCapabilityRequirements = t["specialization_capability_requirements"]
		if v, ok := t["device_plan"]; ok {
			dp, isTable := v.(map[string]any)
			if !isTable {
				return nil, p.errorf(key+".device_plan", "must be a table")
			}
			if err := p.checkDevicePlan(key+".device_plan", dp); err != nil {
				return nil, err
			}
			e.DevicePlan = dp
		} else if prov.NeedsDevicePlan {
			return nil, p.errorf(key+".device_plan", "provider %s requires a device_plan", prov.ID)
		}
		exports = append(exports, e)
	}
	if len(exports) == 0 {
		return nil, nil
	}
	// Declaration order is not authority: canonicalize before every
	// cross-export check so no decision depends on TOML row order.
	sort.Slice(exports, func(a, b int) bool {
		x, y := exports[a], exports[b]
		if x.Provider != y.Provider {
			return x.Provider < y.Provider
		}
		if x.Plan != y.Plan {
			return x.Plan < y.Plan
		}
		if x.Step != y.Step {
			return x.Step < y.Step
		}
		return x.Name < y.Name
	})
	for _, e := range exports[1:] {
		if e.Provider != exports[0].Provider {
			return nil, p.errorf(field, "may not mix artifact providers within one op (%s, %s)", exports[0].Provider, e.Provider)
		}
	}
	plans := map[string][]AOTExport{}
	var planNames []string
	for _, e := range exports {
		if _, ok := plans[e.Plan]; !ok {
			planNames = append(planNames, e.Plan)
		}
		plans[e.Plan] = append(plans[e.Plan], e)
	}
	for _, name := range planNames {
		steps := plans[name]
		hasRun := false
		for k, e := range steps {
			if k > 0 && steps[k-1].Step == e.Step {
				return nil, p.errorf(field, "plan %q repeats step %d", name, e.Step)
			}
			if k > 0 && aotRoleRank[steps[k-1].Role] > aotRoleRank[e.Role] {
				return nil, p.errorf(field, "plan %q orders role %s before %s; roles run init, prepare, reset, run, destroy", name, steps[k-1].Role, e.Role)
			}
			if !reflect.DeepEqual(e.Specializes, steps[0].Specializes) {
				return nil, p.errorf(field, "plan %q has inconsistent specializations", name)
			}
			hasRun = hasRun || e.Role == "run"
		}
		if !hasRun {
			return nil, p.errorf(field, "plan %q has no run step", name)
		}
	}
	// Plans may overlap only as a strict fallback chain; incomparable or
	// identical predicates would make selection depend on ordering.
	for a := 0; a < len(planNames); a++ {
		for b := a + 1; b < len(planNames); b++ {
			l, r := plans[planNames[a]][0].Specializes, plans[planNames[b]][0].Specializes
			if predicatesDisjoint(l, r) || strictSubset(l, r) || strictSubset(r, l) {
				continue
			}
			return nil, p.errorf(field, "plans %q and %q have ambiguous overlapping specialization predicates", planNames[a], planNames[b])
		}
	}
	return exports, nil
}

func predicatesDisjoint(l, r map[string]any) bool {
	for k, v := range l {
		if w, ok := r[k]; ok && !reflect.DeepEqual(v, w) {
			return true
		}
	}
	return false
}

func strictSubset(l, r map[string]any) bool {
	if len(l) >= len(r) {
		return false
	}
	for k, v := range l {
		if w, ok := r[k]; !ok || !reflect.DeepEqual(v, w) {
			return false
		}
	}
	return true
}

// checkDevicePlan enforces the size limits of a device launch plan.
func (p *parser) checkDevicePlan(key string, dp map[string]any) error {
	for _, lim := range []struct {
		field string
		max   int
	}{{"kernels", MaxDevicePlanKernels}, {"launches", MaxDevicePlanLaunches}, {"bindings", MaxDevicePlanBindings}} {
		v, ok := dp[lim.field]
		if !ok {
			continue
		}
		arr, isArr := v.([]any)
		if !isArr {
			return p.errorf(key+"."+lim.field, "must be an array")
		}
		if len(arr) > lim.max {
			return p.errorf(key+"."+lim.field, "has %d entries; at most %d are allowed", len(arr), lim.max)
		}
	}
	if launches, ok := dp["launches"].([]any); ok {
		for i, l := range launches {
			t, _ := l.(map[string]any)
			if n, ok := t["dynamic_shared_memory"].(int64); ok && (n < 0 || n > MaxDynamicSharedMemory) {
				return p.errorf(fmt.Sprintf("%s.launches[%d].dynamic_shared_memory", key, i), "%d bytes is outside [0, %d]", n, MaxDynamicSharedMemory)
			}
		}
	}
	return nil
}

func (p *parser) parseArtifactResources(op *Op, arr []any) ([]map[string]any, error) {
	field := op.Key("artifact_resources")
	if len(arr) > MaxArtifactResources {
		return nil, p.errorf(field, "has %d resources; at most %d are allowed", len(arr), MaxArtifactResources)
	}
	var total int64
	names := map[string]bool{}
	out := make([]map[string]any, 0, len(arr))
	for i, r := range arr {
		key := fmt.Sprintf("%s[%d]", field, i)
		t, ok := r.(map[string]any)
		if !ok {
			return nil, p.errorf(key, "must be a table")
		}
		name, _ := t["name"].(string)
		if !aotNamePattern.MatchString(name) {
			return nil, p.errorf(key+".name", "%q must match %s", name, aotNamePattern)
		}
		if names[name] {
			return nil, p.errorf(key+".name", "duplicate artifact resource %q", name)
		}
		names[name] = true
		if v, ok := t["bytes"]; ok {
			n, isInt := v.(int64)
			if !isInt || n <= 0 || n > MaxArtifactResourceSize {
				return nil, p.errorf(key+".bytes", "must be an integer in [1, %d]", int64(MaxArtifactResourceSize))
			}
			total += n
			if total > MaxArtifactResourceSum {
				return nil, p.errorf(field, "resources total more than %d bytes", int64(MaxArtifactResourceSum))
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// checkAOTUnique rejects two exports with one (slot, variant, name).
func checkAOTUnique(p *parser, ops []Op) error {
	seen := map[[3]string]bool{}
	for _, op := range ops {
		for _, e := range op.AOTExports {
			k := [3]string{op.Slot, op.Variant, e.Name}
			if seen[k] {
				return p.errorf(op.Key("aot_exports"), "duplicate AOT export %q for slot %q variant %q", e.Name, op.Slot, op.Variant)
			}
			seen[k] = true
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
