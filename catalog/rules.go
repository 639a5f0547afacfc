package catalog

import "github.com/hashicorp/hcl/v2"

// Rule names one catalog validation rule. Every diagnostic a rule raises
// carries its Rule (see RuleOf) and ends its detail with "(catalog rule
// NAME)", so a reader can look the rule up in the reference and a program
// can branch on it.
type Rule string

// The catalog validation rules. Each fails closed: a catalog that breaks
// any of them does not load, so no digest is ever computed over it. The
// order is the order of Rules and of the reference documentation.
const (
	// Source limits, checked before anything is evaluated.
	RuleSourceLimits      Rule = "source-limits"
	RuleStaticExpressions Rule = "static-expressions"
	RuleExpansionBudget   Rule = "expansion-budget"

	// Document shape.
	RulePolicyVersion Rule = "policy-version"
	RuleIDPattern     Rule = "id-pattern"
	RuleUniqueID      Rule = "unique-id"
	RuleDuplicateItem Rule = "duplicate-entry"
	RuleDecimal       Rule = "decimal"

	// Features and artifact providers.
	RuleFeatureVocabulary   Rule = "feature-vocabulary"
	RuleFeatureEntry        Rule = "feature-entry-required"
	RuleFeatureObservedOnly Rule = "feature-observed-only"
	RuleAOTFeatureProvider  Rule = "aot-feature-provider"
	RuleProviderFeatures    Rule = "provider-features"

	// Slot contracts.
	RuleSlotKind             Rule = "slot-kind"
	RulePythonIdentifier     Rule = "python-identifier"
	RuleCallSignature        Rule = "call-signature"
	RuleGraphDynamicInputs   Rule = "graph-dynamic-inputs"
	RuleCorrectnessMode      Rule = "correctness-mode"
	RuleCorrectnessThreshold Rule = "correctness-threshold"
	RuleTolerances           Rule = "tolerances"
	RuleKLThreshold          Rule = "kl-threshold"
	RuleShapes               Rule = "shapes"

	// Targets.
	RuleNonEmpty                  Rule = "non-empty"
	RuleTargetKind                Rule = "target-kind"
	RuleSlotTargetSelfMember      Rule = "slot-target-self-member"
	RuleSlotTargetContract        Rule = "slot-target-contract"
	RuleSlotTargetNoAtomicID      Rule = "slot-target-no-atomic-semantics"
	RuleAtomicMinMembers          Rule = "atomic-min-members"
	RuleAtomicNoContract          Rule = "atomic-no-contract"
	RuleAtomicSemanticsID         Rule = "atomic-semantics-required"
	RuleAtomicMembersSingletons   Rule = "atomic-members-singletons"
	RuleAtomicMembersDisplaced    Rule = "atomic-members-displaced"
	RuleUniqueMemberSet           Rule = "unique-member-set"
	RuleRelationKnown             Rule = "relation-known-target"
	RuleRelationNotSelf           Rule = "relation-not-self"
	RuleCompatibleDisplaces       Rule = "compatible-displaces-exclusive"
	RuleCompatibleSymmetric       Rule = "compatible-symmetric"
	RuleSharedMembersDisplacement Rule = "shared-members-displacement"
	RuleDisplacesAcyclic          Rule = "displaces-acyclic"
	RuleRequiresAcyclic           Rule = "requires-acyclic"
	RuleRequiresNotDisplaced      Rule = "requires-not-displaced"
	RuleRequiresNotDisplacer      Rule = "requires-not-displacer"

	// Composition.
	RuleCompositionPair          Rule = "composition-precedence-pair"
	RuleCompositionMode          Rule = "composition-mode"
	RuleCompatibleNeedsRule      Rule = "compatible-pair-needs-rule"
	RuleCompatibleSingleRule     Rule = "compatible-pair-single-rule"
	RuleCompositionNeedsPair     Rule = "composition-needs-compatible-pair"
	RuleCompositionBindingFamily Rule = "composition-binding-family"
	RulePrecedenceAcyclic        Rule = "precedence-acyclic"
)

// RuleInfo describes one rule for documentation and tooling.
type RuleInfo struct {
	Rule        Rule
	Description string
}

// Rules lists every catalog validation rule with a one-sentence
// description, in reference order.
func Rules() []RuleInfo {
	return []RuleInfo{
		{RuleSourceLimits, "The catalog file is at most 1 MiB and nests brackets, braces, parentheses, strings and templates at most 64 levels deep (checked before the file is parsed)."},
		{RuleStaticExpressions, "No expression is a for expression, and the only function is concat (checked before anything is evaluated)."},
		{RuleExpansionBudget, "The feature_set and tolerance_set references of all targets and slots expand to at most 262144 entries in total."},
		{RulePolicyVersion, "The catalog block names the policy version this loader implements (target-catalog.v1)."},
		{RuleIDPattern, "Every target, slot, composition rule, artifact provider, feature set and tolerance set id, and every contract id, matches [0-9A-Za-z._-]+ (feature and tolerance set names, used as variables, must be identifiers)."},
		{RuleUniqueID, "No two blocks of one type share a label."},
		{RuleDuplicateItem, "No list (members, relations, features, inputs, shape parameters) names the same entry twice."},
		{RuleDecimal, "Thresholds and tolerances are written as decimal strings without exponent and are carried in canonical form."},
		{RuleFeatureVocabulary, "Every allowed and observed-only feature, and every provider feature, is in the feature vocabulary."},
		{RuleFeatureEntry, "Every target admits the entry feature."},
		{RuleFeatureObservedOnly, "No target admits an observed-only feature (setup)."},
		{RuleAOTFeatureProvider, "Every aot:<provider> feature in the vocabulary names a registered artifact provider."},
		{RuleProviderFeatures, "An artifact provider's required target features include aot:<provider id> and its rebuild feature."},
		{RuleSlotKind, "A slot's kind is op, block or collective."},
		{RulePythonIdentifier, "A slot's entry and prepare, and its call arguments, are Python identifiers."},
		{RuleCallSignature, "A slot's call lists its arguments in semantic order and includes every output."},
		{RuleGraphDynamicInputs, "A slot's graph-dynamic inputs are non-empty call arguments that are not outputs."},
		{RuleCorrectnessMode, "A correctness mode is allclose, matched_ratio, cosine or topk_overlap."},
		{RuleCorrectnessThreshold, "A correctness block sets its mode's thresholds within range, and no threshold another mode uses."},
		{RuleTolerances, "A slot has a tolerance for at least one dtype, and every atol and rtol is non-negative."},
		{RuleKLThreshold, "A KL threshold, when set, is positive."},
		{RuleShapes, "Shape parameters are named, shape flags are among them, and every catalog shape has one value per parameter: a positive integer, or 0/1 for a flag."},
		{RuleNonEmpty, "The catalog registers at least one target."},
		{RuleTargetKind, "A target's kind is slot or atomic."},
		{RuleSlotTargetSelfMember, "A slot target has exactly itself as its only member."},
		{RuleSlotTargetContract, "A slot target names the contract of the declared slot with its own id."},
		{RuleSlotTargetNoAtomicID, "A slot target carries no atomic semantics id."},
		{RuleAtomicMinMembers, "An atomic target has at least two members."},
		{RuleAtomicNoContract, "An atomic target names no slot contract."},
		{RuleAtomicSemanticsID, "An atomic target names its atomic semantics id."},
		{RuleAtomicMembersSingletons, "Every member of an atomic target is a registered slot target."},
		{RuleAtomicMembersDisplaced, "An atomic target explicitly displaces each of its members."},
		{RuleUniqueMemberSet, "No two targets have the same member set."},
		{RuleRelationKnown, "displaces, compatible_with and requires name registered targets."},
		{RuleRelationNotSelf, "No target relates to itself."},
		{RuleCompatibleDisplaces, "Two targets are either compatible or related by displacement, never both (in either direction)."},
		{RuleCompatibleSymmetric, "If A is compatible with B, B is compatible with A."},
		{RuleSharedMembersDisplacement, "Two targets that share a member are related by displacement."},
		{RuleDisplacesAcyclic, "The displaces graph has no cycle."},
		{RuleRequiresAcyclic, "The requires graph has no cycle."},
		{RuleRequiresNotDisplaced, "No target requires (directly or transitively) a target it displaces (directly or transitively)."},
		{RuleRequiresNotDisplacer, "No target requires (directly or transitively) a target that displaces it."},
		{RuleCompositionPair, "A composition rule's precedence orders exactly two distinct targets."},
		{RuleCompositionMode, "A composition rule's mode is first_applicable."},
		{RuleCompatibleNeedsRule, "Every compatible pair has a composition rule."},
		{RuleCompatibleSingleRule, "No compatible pair has more than one composition rule."},
		{RuleCompositionNeedsPair, "Every composition rule orders a compatible pair."},
		{RuleCompositionBindingFamily, "A composition rule's binding family is the binding family of both its targets' contracts."},
		{RulePrecedenceAcyclic, "The precedence graph of all composition rules has no cycle."},
	}
}

// RuleOf returns the rule a diagnostic reports, if it reports one.
// Syntax and schema diagnostics (an unknown attribute, a missing block)
// report no rule.
func RuleOf(d *hcl.Diagnostic) (Rule, bool) {
	r, ok := hcl.DiagnosticExtra[ruleExtra](d)
	return r.rule, ok
}

type ruleExtra struct{ rule Rule }

// DiagnosticRule names the rule to the shared renderers (hclload.Ruled).
func (r ruleExtra) DiagnosticRule() string { return string(r.rule) }

// asRule turns the refusals of the shared HCL limits into violations of
// rule, so they carry a catalog rule like every other catalog error.
func asRule(rule Rule, diags hcl.Diagnostics) hcl.Diagnostics {
	out := make(hcl.Diagnostics, len(diags))
	for i, d := range diags {
		subject := hcl.Range{}
		if d.Subject != nil {
			subject = *d.Subject
		}
		out[i] = violation(rule, subject, d.Summary, d.Detail)
	}
	return out
}

// violation builds the diagnostic for a broken rule at subject.
func violation(rule Rule, subject hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail + " (catalog rule " + string(rule) + ")",
		Subject:  subject.Ptr(),
		Extra:    ruleExtra{rule},
	}
}
