package catalog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// ruleBase is a small valid catalog the rule cases extend: three slots of
// one binding family (a.one, a.two, a.three) that cases turn into
// targets, and a fourth slot (a.four, another family) that keeps the
// catalog non-empty.
var ruleBase = `
catalog {
  policy_version = "target-catalog.v1"
}

features {
  vocabulary    = ["entry", "variants", "setup", "cuda_sources", "rebuild:build_cuda_ext"]
  observed_only = ["setup"]
}

tolerance_set "standard" {
  float32 = { atol = "0.00001", rtol = "0.00001" }
}
` + slotOne + slotTwo + slotThree + slotFour + baseTarget

const baseTarget = `
target "a.four" {
  kind             = "slot"
  members          = ["a.four"]
  contract         = "a.four"
  allowed_features = ["entry"]
}
`

var (
	slotOne   = testSlot("a.one", "fam.shared", "")
	slotTwo   = testSlot("a.two", "fam.shared", "")
	slotThree = testSlot("a.three", "fam.shared", "")
	slotFour  = testSlot("a.four", "fam.other", "")
)

// testSlot renders a valid slot block; extra lines are inserted at its end
// and replace the default line with the same attribute name.
func testSlot(id, family, extra string) string {
	lines := []string{
		`kind = "op"`,
		`summary = "test slot"`,
		`entry = "run"`,
		`call = ["x", "out"]`,
		`outputs = ["out"]`,
		`graph_dynamic_inputs = ["x"]`,
		fmt.Sprintf(`binding_family_id = %q`, family),
		fmt.Sprintf(`input_abi_id = "%s.input.v1"`, id),
		fmt.Sprintf(`output_abi_id = "%s.output.v1"`, id),
		fmt.Sprintf(`reference_id = "%s.reference.v1"`, id),
		fmt.Sprintf(`verification_profile_id = "%s.verify.v1"`, id),
		`tolerances = tolerance_set.standard`,
		`shape_params = ["T", "d"]`,
		`shapes = [[1, 64]]`,
	}
	extraLines := strings.Split(strings.TrimSpace(extra), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "\nslot %q {\n", id)
	hasCorrectness := strings.Contains(extra, "correctness {")
	for _, l := range lines {
		name := strings.Fields(l)[0]
		overridden := false
		for _, e := range extraLines {
			if f := strings.Fields(e); len(f) > 1 && f[0] == name && f[1] == "=" {
				overridden = true
			}
		}
		if !overridden {
			b.WriteString("  " + l + "\n")
		}
	}
	if !hasCorrectness {
		b.WriteString("  correctness {\n    mode = \"allclose\"\n  }\n")
	}
	if extra != "" {
		b.WriteString("  " + strings.TrimSpace(extra) + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func slotTarget(id, extra string) string {
	return fmt.Sprintf(`
target %q {
  kind             = "slot"
  members          = [%q]
  contract         = %q
  allowed_features = ["entry"]
  %s
}
`, id, id, id, extra)
}

const moeRule = `
composition_rule "r.one-two" {
  precedence        = ["a.one", "a.two"]
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}
`

type ruleCase struct {
	name    string
	rule    Rule
	snippet string      // appended to ruleBase
	replace [][2]string // edits applied to ruleBase first
}

// ruleCases holds at least one case per rule. Each case breaks exactly
// one rule, and marks the line the diagnostic must point at with
// "# ERROR".
var ruleCases = []ruleCase{
	{name: "brackets nested 100k deep", rule: RuleSourceLimits,
		snippet: "\nx = " + strings.Repeat("[", 100_000) + " # ERROR\n"},
	{name: "interpolations nested 100k deep", rule: RuleSourceLimits,
		snippet: "\nx = " + strings.Repeat(`"${`, 100_000) + " # ERROR\n"},

	{name: "for expression", rule: RuleStaticExpressions, snippet: `
target "a.one" {
  kind             = "slot"
  members          = ["a.one"]
  contract         = "a.one"
  allowed_features = [for f in ["entry"] : f] # ERROR
}
`},
	{name: "function other than concat", rule: RuleStaticExpressions, snippet: `
target "a.one" {
  kind             = "slot"
  members          = ["a.one"]
  contract         = "a.one"
  allowed_features = distinct(["entry"]) # ERROR
}
`},

	{name: "references to a large feature set", rule: RuleExpansionBudget, snippet: expansionBomb()},
	{name: "other policy version", rule: RulePolicyVersion,
		replace: [][2]string{{`policy_version = "target-catalog.v1"`, `policy_version = "target-catalog.v2" # ERROR`}}},

	{name: "target id with a space", rule: RuleIDPattern, snippet: `
target "a one" { # ERROR
  kind = "slot"
  members = ["a.one"]
  contract = "a.one"
  allowed_features = ["entry"]
}`},
	{name: "feature set name that is not an identifier", rule: RuleIDPattern, snippet: `
feature_set "1st" { # ERROR
  features = ["entry"]
}`},

	{name: "target declared twice", rule: RuleUniqueID,
		snippet: slotTarget("a.one", "") + strings.Replace(slotTarget("a.one", ""), `target "a.one" {`, `target "a.one" { # ERROR`, 1)},

	{name: "member listed twice", rule: RuleDuplicateItem, snippet: `
target "x.atomic" {
  kind = "atomic"
  members = ["a.one", "a.one"] # ERROR
  displaces = ["a.one"]
  atomic_semantics_id = "x.sem.v1"
  allowed_features = ["entry"]
}`},

	{name: "threshold written as a number", rule: RuleDecimal,
		snippet: testSlot("b.slot", "fam.b", `kl_threshold = 0.03 # ERROR`)},
	{name: "threshold with exponent", rule: RuleDecimal,
		snippet: testSlot("b.slot", "fam.b", `kl_threshold = "3e-2" # ERROR`)},
	{name: "tolerance written as a number", rule: RuleDecimal, snippet: `
tolerance_set "loose" {
  float16 = { atol = 0.01, rtol = "0.01" } # ERROR
}`},

	{name: "allowed feature outside the vocabulary", rule: RuleFeatureVocabulary,
		snippet: slotTarget("a.one", "") + `
target "a.two" {
  kind = "slot"
  members = ["a.two"]
  contract = "a.two"
  allowed_features = ["entry", "prepare"] # ERROR
}`},
	{name: "observed-only feature outside the vocabulary", rule: RuleFeatureVocabulary,
		replace: [][2]string{{`observed_only = ["setup"]`, `observed_only = ["setup", "teardown"] # ERROR`}}},

	{name: "entry not admitted", rule: RuleFeatureEntry, snippet: `
target "a.one" {
  kind = "slot"
  members = ["a.one"]
  contract = "a.one"
  allowed_features = ["variants"] # ERROR
}`},

	{name: "setup admitted", rule: RuleFeatureObservedOnly, snippet: `
target "a.one" {
  kind = "slot"
  members = ["a.one"]
  contract = "a.one"
  allowed_features = ["entry", "setup"] # ERROR
}`},

	{name: "aot feature without provider", rule: RuleAOTFeatureProvider,
		replace: [][2]string{{`vocabulary    = ["entry",`, `vocabulary    = ["aot:missing.v1", "entry", # ERROR` + "\n"}}},

	{name: "provider without its rebuild feature", rule: RuleProviderFeatures,
		replace: [][2]string{{`vocabulary    = ["entry",`, `vocabulary    = ["aot:p.one", "rebuild:p", "entry",`}},
		snippet: `
artifact_provider "p.one" { # ERROR
  artifact_kind            = "cuda_cubin"
  authoritative            = true
  binding_abi              = "abi.v1"
  build_patcher_id         = "patcher.v1"
  build_phase              = "prebuild"
  load_phase               = "worker"
  publication_directory    = "out"
  crownable                = true
  supports_static_slots    = true
  requires_compile_profile = false
  compile_profile_inputs   = []
  provider_capabilities    = []
  rebuild_feature          = "rebuild:p"
  required_target_features = ["aot:p.one"]
}`},

	{name: "unknown slot kind", rule: RuleSlotKind,
		snippet: testSlot("b.slot", "fam.b", `kind = "kernel" # ERROR`)},

	{name: "entry not a Python identifier", rule: RulePythonIdentifier,
		snippet: testSlot("b.slot", "fam.b", `entry = "run-fast" # ERROR`)},
	{name: "call argument is a keyword", rule: RulePythonIdentifier,
		snippet: testSlot("b.slot", "fam.b", `call = ["x", "out", "lambda"] # ERROR`)},

	{name: "output missing from call", rule: RuleCallSignature,
		snippet: testSlot("b.slot", "fam.b", `outputs = ["result"] # ERROR`)},

	{name: "graph-dynamic input not an argument", rule: RuleGraphDynamicInputs,
		snippet: testSlot("b.slot", "fam.b", `graph_dynamic_inputs = ["y"] # ERROR`)},
	{name: "output listed as graph-dynamic input", rule: RuleGraphDynamicInputs,
		snippet: testSlot("b.slot", "fam.b", `graph_dynamic_inputs = ["x", "out"] # ERROR`)},

	{name: "unknown correctness mode", rule: RuleCorrectnessMode,
		snippet: testSlot("b.slot", "fam.b", "correctness {\n    mode = \"exact\" # ERROR\n  }")},

	{name: "ratio above one", rule: RuleCorrectnessThreshold,
		snippet: testSlot("b.slot", "fam.b", "correctness {\n    mode = \"matched_ratio\"\n    min_ratio = \"1.5\" # ERROR\n  }")},
	{name: "threshold the mode does not read", rule: RuleCorrectnessThreshold,
		snippet: testSlot("b.slot", "fam.b", "correctness {\n    mode = \"allclose\"\n    min_overlap = \"0.9\" # ERROR\n  }")},
	{name: "mode without its threshold", rule: RuleCorrectnessThreshold,
		snippet: testSlot("b.slot", "fam.b", "correctness { # ERROR\n    mode = \"topk_overlap\"\n    top_k = 8\n  }")},
	{name: "top_k of zero", rule: RuleCorrectnessThreshold,
		snippet: testSlot("b.slot", "fam.b", "correctness {\n    mode = \"topk_overlap\"\n    top_k = 0 # ERROR\n    min_overlap = \"0.9\"\n  }")},

	{name: "negative tolerance", rule: RuleTolerances, snippet: `
tolerance_set "loose" {
  float16 = { atol = "-0.01", rtol = "0.01" } # ERROR
}`},
	{name: "no tolerances", rule: RuleTolerances,
		snippet: testSlot("b.slot", "fam.b", `tolerances = {} # ERROR`)},

	{name: "zero KL threshold", rule: RuleKLThreshold,
		snippet: testSlot("b.slot", "fam.b", `kl_threshold = "0" # ERROR`)},

	{name: "shape with too few values", rule: RuleShapes,
		snippet: testSlot("b.slot", "fam.b", `shapes = [[1, 64], [8]] # ERROR`)},
	{name: "shape with a non-positive value", rule: RuleShapes,
		snippet: testSlot("b.slot", "fam.b", `shapes = [[0, 64]] # ERROR`)},
	{name: "flag other than 0 or 1", rule: RuleShapes,
		snippet: testSlot("b.slot", "fam.b", "shape_flags = [\"d\"]\n  shapes = [[8, 2]] # ERROR")},
	{name: "flag that is not a parameter", rule: RuleShapes,
		snippet: testSlot("b.slot", "fam.b", `shape_flags = ["probe"] # ERROR`)},

	{name: "no targets", rule: RuleNonEmpty,
		replace: [][2]string{
			{baseTarget, ""},
			{"catalog {", "catalog { # ERROR"},
		}},

	{name: "unknown target kind", rule: RuleTargetKind, snippet: `
target "a.one" {
  kind = "group" # ERROR
  members = ["a.one"]
  allowed_features = ["entry"]
}`},

	{name: "slot target with another member", rule: RuleSlotTargetSelfMember, snippet: `
target "a.one" {
  kind = "slot"
  members = ["a.two"] # ERROR
  contract = "a.one"
  allowed_features = ["entry"]
}`},

	{name: "slot target without contract", rule: RuleSlotTargetContract, snippet: `
target "a.one" { # ERROR
  kind = "slot"
  members = ["a.one"]
  allowed_features = ["entry"]
}`},
	{name: "slot target with another slot's contract", rule: RuleSlotTargetContract, snippet: `
target "a.one" {
  kind = "slot"
  members = ["a.one"]
  contract = "a.two" # ERROR
  allowed_features = ["entry"]
}`},
	{name: "slot target with an undeclared contract", rule: RuleSlotTargetContract, snippet: `
target "a.one" {
  kind = "slot"
  members = ["a.one"]
  contract = "a.onw" # ERROR
  allowed_features = ["entry"]
}`},

	{name: "slot target with atomic semantics", rule: RuleSlotTargetNoAtomicID,
		snippet: slotTarget("a.one", `atomic_semantics_id = "a.one.sem.v1" # ERROR`)},

	{name: "atomic target with one member", rule: RuleAtomicMinMembers,
		snippet: slotTarget("a.one", "") + `
target "x.atomic" {
  kind = "atomic"
  members = ["a.one"] # ERROR
  displaces = ["a.one"]
  atomic_semantics_id = "x.sem.v1"
  allowed_features = ["entry"]
}`},

	{name: "atomic target with a contract", rule: RuleAtomicNoContract,
		snippet: slotTarget("a.one", "") + slotTarget("a.two", "") + `
target "x.atomic" {
  kind = "atomic"
  members = ["a.one", "a.two"]
  displaces = ["a.one", "a.two"]
  contract = "a.one" # ERROR
  atomic_semantics_id = "x.sem.v1"
  allowed_features = ["entry"]
}`},

	{name: "atomic target without semantics id", rule: RuleAtomicSemanticsID,
		snippet: slotTarget("a.one", "") + slotTarget("a.two", "") + `
target "x.atomic" { # ERROR
  kind = "atomic"
  members = ["a.one", "a.two"]
  displaces = ["a.one", "a.two"]
  allowed_features = ["entry"]
}`},

	{name: "atomic target with an atomic member", rule: RuleAtomicMembersSingletons,
		snippet: slotTarget("a.one", "") + slotTarget("a.two", "") + slotTarget("a.three", "") + `
target "y.atomic" {
  kind = "atomic"
  members = ["a.two", "a.three"]
  displaces = ["a.two", "a.three"]
  atomic_semantics_id = "y.sem.v1"
  allowed_features = ["entry"]
}
target "x.atomic" {
  kind = "atomic"
  members = ["a.one",
    "y.atomic"] # ERROR
  displaces = ["a.one", "y.atomic"]
  atomic_semantics_id = "x.sem.v1"
  allowed_features = ["entry"]
}`},

	{name: "atomic target not displacing a member", rule: RuleAtomicMembersDisplaced,
		snippet: slotTarget("a.one", "") + slotTarget("a.two", "") + `
target "x.atomic" {
  kind = "atomic"
  members = ["a.one",
    "a.two"] # ERROR
  displaces = ["a.one"]
  atomic_semantics_id = "x.sem.v1"
  allowed_features = ["entry"]
}`},

	{name: "two atomic targets with one member set", rule: RuleUniqueMemberSet,
		snippet: slotTarget("a.one", "") + slotTarget("a.two", "") + `
target "x.atomic" {
  kind = "atomic"
  members = ["a.one", "a.two"]
  displaces = ["a.one", "a.two", "y.atomic"]
  atomic_semantics_id = "x.sem.v1"
  allowed_features = ["entry"]
}
target "y.atomic" {
  kind = "atomic"
  members = ["a.two", "a.one"] # ERROR
  displaces = ["a.one", "a.two"]
  atomic_semantics_id = "y.sem.v1"
  allowed_features = ["entry"]
}`},

	{name: "displacing an unknown target", rule: RuleRelationKnown,
		snippet: slotTarget("a.one", `displaces = ["a.nope"] # ERROR`)},
	{name: "composition of an unknown target", rule: RuleRelationKnown,
		snippet: slotTarget("a.one", "") + `
composition_rule "r.bad" {
  precedence        = ["a.one", "a.nope"] # ERROR
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}`},

	{name: "target compatible with itself", rule: RuleRelationNotSelf,
		snippet: slotTarget("a.one", `compatible_with = ["a.one"] # ERROR`)},

	{name: "compatible and displacing", rule: RuleCompatibleDisplaces,
		snippet: slotTarget("a.one", "compatible_with = [\"a.two\"] # ERROR\n  displaces = [\"a.two\"]") +
			slotTarget("a.two", `compatible_with = ["a.one"]`) + moeRule},

	{name: "one-sided compatibility", rule: RuleCompatibleSymmetric,
		snippet: slotTarget("a.one", `compatible_with = ["a.two"] # ERROR`) + slotTarget("a.two", "") + moeRule},

	{name: "overlapping atomic targets", rule: RuleSharedMembersDisplacement,
		snippet: slotTarget("a.one", "") + slotTarget("a.two", "") + slotTarget("a.three", "") + `
target "x.atomic" {
  kind = "atomic"
  members = ["a.one", "a.two"]
  displaces = ["a.one", "a.two"]
  atomic_semantics_id = "x.sem.v1"
  allowed_features = ["entry"]
}
target "y.atomic" {
  kind = "atomic"
  members = ["a.two", "a.three"] # ERROR
  displaces = ["a.two", "a.three"]
  atomic_semantics_id = "y.sem.v1"
  allowed_features = ["entry"]
}`},

	{name: "mutual displacement", rule: RuleDisplacesAcyclic,
		snippet: slotTarget("a.one", `displaces = ["a.two"] # ERROR`) + slotTarget("a.two", `displaces = ["a.one"]`)},

	{name: "mutual requirement", rule: RuleRequiresAcyclic,
		snippet: slotTarget("a.one", `requires = ["a.two"] # ERROR`) + slotTarget("a.two", `requires = ["a.one"]`)},

	{name: "requires what it displaces", rule: RuleRequiresNotDisplaced,
		snippet: slotTarget("a.one", "requires = [\"a.two\"] # ERROR\n  displaces = [\"a.two\"]") + slotTarget("a.two", "")},
	{name: "requires transitively what it displaces", rule: RuleRequiresNotDisplaced,
		snippet: slotTarget("a.one", "requires = [\"a.two\"] # ERROR\n  displaces = [\"a.three\"]") +
			slotTarget("a.two", `requires = ["a.three"]`) + slotTarget("a.three", "")},

	{name: "requires its displacer", rule: RuleRequiresNotDisplacer,
		snippet: slotTarget("a.one", `requires = ["a.two"] # ERROR`) + slotTarget("a.two", `displaces = ["a.one"]`)},

	{name: "precedence of one target", rule: RuleCompositionPair, snippet: `
composition_rule "r.bad" {
  precedence        = ["a.one"] # ERROR
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}`},

	{name: "unknown composition mode", rule: RuleCompositionMode, snippet: `
composition_rule "r.bad" {
  precedence        = ["a.one", "a.two"]
  mode              = "all_applicable" # ERROR
  binding_family_id = "fam.shared"
}`},

	{name: "compatible pair without rule", rule: RuleCompatibleNeedsRule,
		snippet: slotTarget("a.one", `compatible_with = ["a.two"] # ERROR`) + slotTarget("a.two", `compatible_with = ["a.one"]`)},

	{name: "compatible pair with two rules", rule: RuleCompatibleSingleRule,
		snippet: slotTarget("a.one", `compatible_with = ["a.two"]`) + slotTarget("a.two", `compatible_with = ["a.one"]`) + moeRule + `
composition_rule "r.two-one" { # ERROR
  precedence        = ["a.two", "a.one"]
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}`},

	{name: "rule for targets that are not compatible", rule: RuleCompositionNeedsPair,
		snippet: slotTarget("a.one", "") + slotTarget("a.two", "") + strings.Replace(moeRule, "{", "{ # ERROR", 1)},

	{name: "rule with another binding family", rule: RuleCompositionBindingFamily,
		snippet: slotTarget("a.one", `compatible_with = ["a.two"]`) + slotTarget("a.two", `compatible_with = ["a.one"]`) +
			strings.Replace(moeRule, `binding_family_id = "fam.shared"`, `binding_family_id = "fam.other" # ERROR`, 1)},

	{name: "cyclic precedence", rule: RulePrecedenceAcyclic,
		snippet: slotTarget("a.one", `compatible_with = ["a.two", "a.three"]`) +
			slotTarget("a.two", `compatible_with = ["a.one", "a.three"]`) +
			slotTarget("a.three", `compatible_with = ["a.one", "a.two"]`) + `
composition_rule "r.one-two" { # ERROR
  precedence        = ["a.one", "a.two"]
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}
composition_rule "r.two-three" {
  precedence        = ["a.two", "a.three"]
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}
composition_rule "r.three-one" {
  precedence        = ["a.three", "a.one"]
  mode              = "first_applicable"
  binding_family_id = "fam.shared"
}`},
}

func (rc ruleCase) source(t *testing.T) string {
	t.Helper()
	base := ruleBase
	for _, r := range rc.replace {
		if !strings.Contains(base, r[0]) {
			t.Fatalf("replacement %q not found in the base catalog", r[0])
		}
		base = strings.Replace(base, r[0], r[1], 1)
	}
	return base + rc.snippet + "\n"
}

// errorLine returns the 1-based line carrying the "# ERROR" marker.
func errorLine(t *testing.T, src string) int {
	t.Helper()
	line := 0
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "# ERROR") {
			if line != 0 {
				t.Fatalf("two # ERROR markers (lines %d and %d)", line, i+1)
			}
			line = i + 1
		}
	}
	if line == 0 {
		t.Fatal("no # ERROR marker")
	}
	return line
}

func TestRuleBaseIsValid(t *testing.T) {
	if _, diags := Parse([]byte(ruleBase), "base.hcl"); diags.HasErrors() {
		t.Fatalf("base catalog: %v", diags)
	}
}

func TestEachRuleRejectsItsViolation(t *testing.T) {
	for _, rc := range ruleCases {
		t.Run(string(rc.rule)+"/"+rc.name, func(t *testing.T) {
			src := rc.source(t)
			line := errorLine(t, src)
			c, diags := Parse([]byte(src), "case.hcl")
			if c != nil {
				t.Fatal("catalog loaded despite the violation")
			}
			errs := diags.Errs()
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want exactly one for rule %s:\n%s", len(errs), rc.rule, renderDiags(diags))
			}
			d := diags[0]
			if got, ok := RuleOf(d); !ok || got != rc.rule {
				t.Errorf("rule = %q (reported %v), want %q:\n%s", got, ok, rc.rule, renderDiags(diags))
			}
			if !strings.Contains(d.Detail, "(catalog rule "+string(rc.rule)+")") {
				t.Errorf("detail does not name the rule: %q", d.Detail)
			}
			if d.Subject == nil || d.Subject.Filename != "case.hcl" || d.Subject.Start.Line != line || d.Subject.Start.Column < 1 {
				t.Fatalf("subject = %v, want case.hcl line %d:\n%s", d.Subject, line, renderDiags(diags))
			}
			if want := fmt.Sprintf("case.hcl:%d,%d", line, d.Subject.Start.Column); !strings.Contains(diags.Error(), want) {
				t.Errorf("error text %q does not name %s", diags.Error(), want)
			}
		})
	}
}

func TestEveryRuleHasACase(t *testing.T) {
	covered := map[Rule]bool{}
	for _, rc := range ruleCases {
		covered[rc.rule] = true
	}
	seen := map[Rule]bool{}
	for _, info := range Rules() {
		if seen[info.Rule] {
			t.Errorf("rule %s listed twice", info.Rule)
		}
		seen[info.Rule] = true
		if !covered[info.Rule] {
			t.Errorf("rule %s has no test case", info.Rule)
		}
	}
	for r := range covered {
		if !seen[r] {
			t.Errorf("test case for unlisted rule %s", r)
		}
	}
}

// expansionBomb is a feature set of 20000 entries and a target that
// references it 14 times: 280000 entries from 200 KB of source.
func expansionBomb() string {
	var b strings.Builder
	b.WriteString("\nfeature_set \"many\" {\n  features = [")
	for i := 0; i < 20_000; i++ {
		fmt.Fprintf(&b, "\"f%d\", ", i)
	}
	b.WriteString("]\n}\n\ntarget \"a.one\" {\n  kind = \"slot\"\n  members = [\"a.one\"]\n  contract = \"a.one\"\n")
	b.WriteString("  allowed_features = concat(" + strings.Repeat("feature_set.many, ", 13) + "feature_set.many) # ERROR\n}\n")
	return b.String()
}

func renderDiags(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		rule, _ := RuleOf(d)
		fmt.Fprintf(&b, "  %v: %s: %s [%s]\n", d.Subject, d.Summary, d.Detail, rule)
	}
	return b.String()
}
