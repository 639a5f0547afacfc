package catalog

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// validator checks the rules that span blocks. It runs only on a document
// that decoded cleanly, so every value it reads is well-formed; it still
// reports every violation it finds rather than stopping at the first.
//
// Where one mistake breaks a specific rule and, as a consequence, a more
// general one (an atomic target that forgets to displace a member also
// shares that member with a target it is not related to), only the
// specific rule is reported: the fix for both is the same edit.
type validator struct {
	doc   *document
	diags hcl.Diagnostics

	slots    map[string]*slotDecl
	targets  map[string]*targetDecl
	vocab    map[string]bool
	observed map[string]bool

	// Relation graphs over known targets, self-edges and unknown ids removed.
	displaces map[string][]string
	compat    map[string][]string
	requires  map[string][]string

	// broken holds targets whose kind-specific rules failed; set-based
	// rules skip them so one mistake yields one diagnostic.
	broken map[string]bool
	// skipShared holds target pairs already reported by a more specific
	// rule than shared-members-displacement.
	skipShared map[[2]string]bool
}

func validate(doc *document) hcl.Diagnostics {
	v := &validator{
		doc:        doc,
		broken:     map[string]bool{},
		skipShared: map[[2]string]bool{},
	}
	if !v.uniqueIDs() {
		return v.diags
	}
	v.features()
	v.providers()
	v.targetKinds()
	v.relations()
	v.uniqueMemberSets()
	v.compatibility()
	v.sharedMembers()
	displacesOK := v.acyclic(v.displaces, RuleDisplacesAcyclic, "Displacement cycle", "displaces")
	requiresOK := v.acyclic(v.requires, RuleRequiresAcyclic, "Requirement cycle", "requires")
	if displacesOK && requiresOK {
		v.requirements()
	}
	v.composition()
	if len(doc.targets) == 0 {
		v.diags = append(v.diags, violation(RuleNonEmpty, doc.catalogDef, "Empty catalog",
			"The catalog registers no target; declare at least one target block."))
	}
	return v.diags
}

func (v *validator) add(rule Rule, rng hcl.Range, summary, format string, args ...any) {
	v.diags = append(v.diags, violation(rule, rng, summary, fmt.Sprintf(format, args...)))
}

// uniqueIDs indexes every labelled block and reports repeated labels. The
// other rules need the indexes, so they do not run when this fails.
func (v *validator) uniqueIDs() bool {
	ok := true
	check := func(typ string, labels []item) {
		first := map[string]hcl.Range{}
		for _, l := range labels {
			if prev, dup := first[l.Value]; dup {
				v.add(RuleUniqueID, l.Range, "Duplicate "+strings.ReplaceAll(typ, "_", " "),
					"A %s block labelled %q is already declared at %s.", typ, l.Value, prev)
				ok = false
				continue
			}
			first[l.Value] = l.Range
		}
	}
	var labels []item
	for _, fs := range v.doc.featureSets {
		labels = append(labels, fs.name)
	}
	check("feature_set", labels)
	labels = nil
	for _, ts := range v.doc.toleranceSets {
		labels = append(labels, ts.name)
	}
	check("tolerance_set", labels)
	labels = nil
	for _, p := range v.doc.providers {
		labels = append(labels, p.id)
	}
	check("artifact_provider", labels)
	labels = nil
	for _, s := range v.doc.slots {
		labels = append(labels, s.id)
	}
	check("slot", labels)
	labels = nil
	for _, t := range v.doc.targets {
		labels = append(labels, t.id)
	}
	check("target", labels)
	labels = nil
	for _, r := range v.doc.rules {
		labels = append(labels, r.id)
	}
	check("composition_rule", labels)
	if !ok {
		return false
	}

	v.slots = map[string]*slotDecl{}
	for _, s := range v.doc.slots {
		v.slots[s.ID] = s
	}
	v.targets = map[string]*targetDecl{}
	for _, t := range v.doc.targets {
		v.targets[t.id.Value] = t
	}
	v.vocab = map[string]bool{}
	for _, f := range v.doc.vocabulary {
		v.vocab[f.Value] = true
	}
	v.observed = map[string]bool{}
	for _, f := range v.doc.observedOnly {
		v.observed[f.Value] = true
	}
	return true
}

// features checks the vocabulary and every target's allowed features.
func (v *validator) features() {
	vocab := itemValues(v.doc.vocabulary)
	for _, f := range v.doc.observedOnly {
		if !v.vocab[f.Value] {
			v.add(RuleFeatureVocabulary, f.Range, "Unknown feature",
				"The observed-only feature %q is not in the feature vocabulary.%s", f.Value, suggest(f.Value, vocab))
		}
	}
	providers := map[string]bool{}
	for _, p := range v.doc.providers {
		providers[p.ID] = true
	}
	for _, f := range v.doc.vocabulary {
		if id, ok := aotProvider(f.Value); ok && !providers[id] {
			v.add(RuleAOTFeatureProvider, f.Range, "AOT feature without provider",
				"The feature %q admits artifacts of provider %q, but no artifact_provider %q is declared.", f.Value, id, id)
		}
	}
	for _, t := range v.doc.targets {
		for _, f := range t.features {
			switch {
			case !v.vocab[f.Value]:
				v.add(RuleFeatureVocabulary, f.Range, "Unknown feature",
					"Target %q admits %q, which is not in the feature vocabulary.%s", t.id.Value, f.Value, suggest(f.Value, vocab))
			case v.observed[f.Value]:
				v.add(RuleFeatureObservedOnly, f.Range, "Observed-only feature admitted",
					"Target %q admits %q, a feature that is only ever observed and never admitted: bundles that need it belong to the discovery lane.", t.id.Value, f.Value)
			}
		}
		if !slices.Contains(itemValues(t.features), FeatureEntry) {
			v.add(RuleFeatureEntry, t.featuresRange, "Entry feature not admitted",
				"Target %q must admit %q: every contribution declares an entry callable.", t.id.Value, FeatureEntry)
		}
	}
}

// providers checks each artifact provider's features.
func (v *validator) providers() {
	vocab := itemValues(v.doc.vocabulary)
	for _, p := range v.doc.providers {
		for _, f := range p.requiredFeatures {
			if !v.vocab[f.Value] {
				v.add(RuleFeatureVocabulary, f.Range, "Unknown feature",
					"Artifact provider %q requires %q, which is not in the feature vocabulary.%s", p.ID, f.Value, suggest(f.Value, vocab))
			}
		}
		if !v.vocab[p.rebuildFeature.Value] {
			v.add(RuleFeatureVocabulary, p.rebuildFeature.Range, "Unknown feature",
				"Artifact provider %q has rebuild feature %q, which is not in the feature vocabulary.%s", p.ID, p.rebuildFeature.Value, suggest(p.rebuildFeature.Value, vocab))
		}
		required := itemValues(p.requiredFeatures)
		for _, need := range []string{AOTFeature(p.ID), p.RebuildFeature} {
			if !slices.Contains(required, need) {
				v.add(RuleProviderFeatures, p.def, "Incomplete provider features",
					"Artifact provider %q must list %q in required_target_features: a target admits the provider's exports only with its declaration feature and its rebuild feature.", p.ID, need)
			}
		}
	}
}

// targetKinds checks the rules specific to slot and atomic targets.
func (v *validator) targetKinds() {
	for _, t := range v.doc.targets {
		if !t.kindOK {
			v.broken[t.id.Value] = true
			continue
		}
		var ok bool
		if TargetKind(t.kind.Value) == TargetSlot {
			ok = v.slotTarget(t)
		} else {
			ok = v.atomicTarget(t)
		}
		if !ok {
			v.broken[t.id.Value] = true
		}
	}
}

func (v *validator) slotTarget(t *targetDecl) bool {
	id := t.id.Value
	ok := true
	if len(t.members) != 1 || t.members[0].Value != id {
		v.add(RuleSlotTargetSelfMember, t.membersRange, "Slot target members",
			"Slot target %q must have exactly itself as its only member, members = [%q]; it lists %s.", id, id, quoteList(itemValues(t.members)))
		ok = false
	}
	switch {
	case t.contract == nil:
		v.add(RuleSlotTargetContract, t.def, "Missing contract",
			"Slot target %q must name the slot whose contract it rewards: contract = %q.", id, id)
		ok = false
	case v.slots[t.contract.Value] == nil:
		v.add(RuleSlotTargetContract, t.contract.Range, "Unknown slot",
			"Slot target %q names contract %q, but no slot %q is declared.%s", id, t.contract.Value, t.contract.Value, suggest(t.contract.Value, sortedKeys(v.slots)))
		ok = false
	case t.contract.Value != id:
		v.add(RuleSlotTargetContract, t.contract.Range, "Contract of another slot",
			"Slot target %q names the contract of slot %q; a slot target rewards the slot with its own id, contract = %q.", id, t.contract.Value, id)
		ok = false
	}
	if t.atomicID != nil {
		v.add(RuleSlotTargetNoAtomicID, t.atomicID.Range, "Atomic semantics on a slot target",
			"Slot target %q sets atomic_semantics_id; only atomic targets have one.", id)
		ok = false
	}
	return ok
}

func (v *validator) atomicTarget(t *targetDecl) bool {
	id := t.id.Value
	ok := true
	if len(t.members) < 2 {
		v.add(RuleAtomicMinMembers, t.membersRange, "Too few members",
			"Atomic target %q has %d member(s); an atomic target replaces at least two slots together.", id, len(t.members))
		ok = false
	}
	if t.contract != nil {
		v.add(RuleAtomicNoContract, t.contract.Range, "Contract on an atomic target",
			"Atomic target %q names a slot contract; its contract is derived from its members' contracts and its atomic semantics id.", id)
		ok = false
	}
	if t.atomicID == nil {
		v.add(RuleAtomicSemanticsID, t.def, "Missing atomic semantics id",
			"Atomic target %q must set atomic_semantics_id, the id of the combined semantics its members implement together.", id)
		ok = false
	}
	displaced := itemValues(t.displaces)
	for _, m := range t.members {
		member := v.targets[m.Value]
		if member == nil || TargetKind(member.kind.Value) != TargetSlot {
			v.add(RuleAtomicMembersSingletons, m.Range, "Member is not a slot target",
				"Atomic target %q lists member %q, which is not a registered slot target.", id, m.Value)
			ok = false
			continue
		}
		if !slices.Contains(displaced, m.Value) {
			v.add(RuleAtomicMembersDisplaced, m.Range, "Member not displaced",
				"Atomic target %q must list its member %q in displaces: an active atomic target leaves no room for the singleton it replaces.", id, m.Value)
			v.skipShared[pairKey(id, m.Value)] = true
			ok = false
		}
	}
	return ok
}

func pairKey(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// relations checks that relations name other registered targets and
// builds the relation graphs from the valid edges.
func (v *validator) relations() {
	v.displaces = map[string][]string{}
	v.compat = map[string][]string{}
	v.requires = map[string][]string{}
	for _, t := range v.doc.targets {
		id := t.id.Value
		for _, rel := range []struct {
			name  string
			items []item
			graph map[string][]string
		}{
			{"displaces", t.displaces, v.displaces},
			{"compatible_with", t.compat, v.compat},
			{"requires", t.requires, v.requires},
		} {
			for _, it := range rel.items {
				switch {
				case it.Value == id:
					v.add(RuleRelationNotSelf, it.Range, "Target relates to itself",
						"Target %q lists itself in %s.", id, rel.name)
				case v.targets[it.Value] == nil:
					v.add(RuleRelationKnown, it.Range, "Unknown target",
						"Target %q lists %q in %s, but no target %q is registered.%s", id, it.Value, rel.name, it.Value, suggest(it.Value, sortedKeys(v.targets)))
				default:
					rel.graph[id] = append(rel.graph[id], it.Value)
				}
			}
		}
	}
}

func memberSetKey(members []item) string {
	vals := sortedValues(members)
	return strings.Join(vals, "\x00")
}

func (v *validator) uniqueMemberSets() {
	seen := map[string]string{}
	for _, t := range v.doc.targets {
		if v.broken[t.id.Value] {
			continue
		}
		key := memberSetKey(t.members)
		if other, dup := seen[key]; dup {
			v.add(RuleUniqueMemberSet, t.membersRange, "Duplicate member set",
				"Target %q has the same members as target %q (%s); a member set identifies at most one target.", t.id.Value, other, quoteList(sortedValues(t.members)))
			v.skipShared[pairKey(t.id.Value, other)] = true
			continue
		}
		seen[key] = t.id.Value
	}
}

func (v *validator) compatibility() {
	reported := map[[2]string]bool{}
	for _, t := range v.doc.targets {
		a := t.id.Value
		for _, it := range t.compat {
			b := it.Value
			if v.targets[b] == nil || b == a {
				continue
			}
			key := pairKey(a, b)
			if !reported[key] && (slices.Contains(v.displaces[a], b) || slices.Contains(v.displaces[b], a)) {
				reported[key] = true
				v.add(RuleCompatibleDisplaces, it.Range, "Compatible and displacing",
					"Targets %q and %q are declared compatible and related by displacement; a pair of targets is one or the other.", a, b)
			}
			if !slices.Contains(v.compat[b], a) {
				v.add(RuleCompatibleSymmetric, it.Range, "One-sided compatibility",
					"Target %q is compatible with %q, but %q does not list %q in compatible_with; compatibility is symmetric.", a, b, b, a)
			}
		}
	}
}

// closure returns every node reachable from id in graph, id excluded.
func closure(graph map[string][]string, id string) map[string]bool {
	out := map[string]bool{}
	stack := slices.Clone(graph[id])
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if out[n] || n == id {
			continue
		}
		out[n] = true
		stack = append(stack, graph[n]...)
	}
	return out
}

func (v *validator) sharedMembers() {
	targets := v.doc.targets
	for i, a := range targets {
		for _, b := range targets[i+1:] {
			ida, idb := a.id.Value, b.id.Value
			if v.broken[ida] || v.broken[idb] || v.skipShared[pairKey(ida, idb)] {
				continue
			}
			shared := intersect(itemValues(a.members), itemValues(b.members))
			if len(shared) == 0 {
				continue
			}
			if closure(v.displaces, ida)[idb] || closure(v.displaces, idb)[ida] {
				continue
			}
			v.add(RuleSharedMembersDisplacement, b.membersRange, "Overlapping targets not related by displacement",
				"Targets %q and %q share %s, so both cannot be active; one must displace the other (compatible_with is for targets that compose at one call site, not for overlapping ones).", ida, idb, quoteList(shared))
		}
	}
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// acyclic reports each cycle of graph once, at the relation list of the
// cycle's first target in file order.
func (v *validator) acyclic(graph map[string][]string, rule Rule, summary, attr string) bool {
	ok := true
	for _, cycle := range cycles(graph, v.declOrder()) {
		ok = false
		t := v.targets[cycle[0]]
		rng := t.def
		for _, it := range v.relationItems(t, attr) {
			if it.Value == cycle[1] {
				rng = it.Range
			}
		}
		v.add(rule, rng, summary, "The %s relation has a cycle: %s.", attr, strings.Join(append(cycle, cycle[0]), " → "))
	}
	return ok
}

func (v *validator) declOrder() []string {
	ids := make([]string, len(v.doc.targets))
	for i, t := range v.doc.targets {
		ids[i] = t.id.Value
	}
	return ids
}

func (v *validator) relationItems(t *targetDecl, attr string) []item {
	switch attr {
	case "displaces":
		return t.displaces
	case "requires":
		return t.requires
	}
	return nil
}

// cycles returns one cycle per strongly connected component of graph
// that has one, each starting at its earliest node in order.
func cycles(graph map[string][]string, order []string) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	next := 0
	var strong func(n string)
	strong = func(n string) {
		index[n], low[n] = next, next
		next++
		stack = append(stack, n)
		onStack[n] = true
		for _, m := range graph[n] {
			if _, seen := index[m]; !seen {
				strong(m)
				low[n] = min(low[n], low[m])
			} else if onStack[m] {
				low[n] = min(low[n], index[m])
			}
		}
		if low[n] == index[n] {
			var comp []string
			for {
				m := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[m] = false
				comp = append(comp, m)
				if m == n {
					break
				}
			}
			if len(comp) > 1 {
				comps = append(comps, comp)
			}
		}
	}
	for _, n := range order {
		if _, seen := index[n]; !seen {
			strong(n)
		}
	}
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	var out [][]string
	for _, comp := range comps {
		in := map[string]bool{}
		start := comp[0]
		for _, n := range comp {
			in[n] = true
			if pos[n] < pos[start] {
				start = n
			}
		}
		out = append(out, cyclePath(graph, in, start))
	}
	slices.SortFunc(out, func(a, b []string) int { return pos[a[0]] - pos[b[0]] })
	return out
}

// cyclePath walks from start inside one strongly connected component
// back to start, returning the nodes visited (start first).
func cyclePath(graph map[string][]string, in map[string]bool, start string) []string {
	var path []string
	visited := map[string]bool{}
	var walk func(n string) bool
	walk = func(n string) bool {
		path = append(path, n)
		visited[n] = true
		for _, m := range graph[n] {
			if m == start {
				return true
			}
			if in[m] && !visited[m] && walk(m) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	walk(start)
	return path
}

// requirements checks that no target requires what it displaces or what
// displaces it; the graphs are acyclic when this runs.
func (v *validator) requirements() {
	for _, t := range v.doc.targets {
		id := t.id.Value
		required := closure(v.requires, id)
		if len(required) == 0 {
			continue
		}
		displaced := closure(v.displaces, id)
		rng := v.doc.fileRange
		if len(t.requires) > 0 {
			rng = hcl.RangeBetween(t.requires[0].Range, t.requires[len(t.requires)-1].Range)
		}
		for _, r := range sortedKeys(required) {
			if displaced[r] {
				v.add(RuleRequiresNotDisplaced, rng, "Target requires what it displaces",
					"Target %q requires %q (directly or through another requirement) and also displaces it; an active %q could never be satisfied.", id, r, id)
			}
			if closure(v.displaces, r)[id] {
				v.add(RuleRequiresNotDisplacer, rng, "Target requires its displacer",
					"Target %q requires %q (directly or through another requirement), which displaces %q; the two can never be active together.", id, r, id)
			}
		}
	}
}

// composition checks composition rules against the compatible pairs.
func (v *validator) composition() {
	rulesByPair := map[[2]string]*ruleDecl{}
	var edges = map[string][]string{}
	for _, r := range v.doc.rules {
		if len(r.precedence) != 2 || r.precedence[0].Value == r.precedence[1].Value {
			continue
		}
		known := true
		for _, it := range r.precedence {
			if v.targets[it.Value] == nil {
				v.add(RuleRelationKnown, it.Range, "Unknown target",
					"Composition rule %q orders %q, but no target %q is registered.%s", r.id.Value, it.Value, it.Value, suggest(it.Value, sortedKeys(v.targets)))
				known = false
			}
		}
		if !known {
			continue
		}
		a, b := r.precedence[0].Value, r.precedence[1].Value
		key := pairKey(a, b)
		if !slices.Contains(v.compat[a], b) && !slices.Contains(v.compat[b], a) {
			v.add(RuleCompositionNeedsPair, r.def, "Composition of incompatible targets",
				"Composition rule %q orders %q and %q, which are not declared compatible; rules exist only for compatible pairs.", r.id.Value, a, b)
		}
		if first, dup := rulesByPair[key]; dup {
			v.add(RuleCompatibleSingleRule, r.def, "Second composition rule for a pair",
				"Composition rule %q orders %q and %q, which rule %q already orders; a compatible pair has exactly one rule.", r.id.Value, key[0], key[1], first.id.Value)
			continue // its precedence would only add a spurious cycle
		}
		rulesByPair[key] = r
		var mismatched []string
		for _, id := range []string{a, b} {
			if fam := v.bindingFamily(id); fam != r.family.Value {
				if fam == "" {
					fam = "none: not a slot target"
				}
				mismatched = append(mismatched, fmt.Sprintf("%q (binding family %s)", id, fam))
			}
		}
		if len(mismatched) > 0 {
			v.add(RuleCompositionBindingFamily, r.family.Range, "Binding family mismatch",
				"Composition rule %q binds family %q, but orders %s; both targets of a rule bind at the rule's call site, so their contracts share its binding family.", r.id.Value, r.family.Value, strings.Join(mismatched, " and "))
		}
		edges[a] = append(edges[a], b)
	}
	for _, t := range v.doc.targets {
		a := t.id.Value
		for _, it := range t.compat {
			b := it.Value
			if v.targets[b] == nil || b == a || a > b && slices.Contains(v.compat[b], a) {
				continue // report each pair once, from its smaller id when both sides list it
			}
			if rulesByPair[pairKey(a, b)] == nil {
				v.add(RuleCompatibleNeedsRule, it.Range, "Compatible pair without composition rule",
					"Targets %q and %q are compatible but no composition_rule orders them; declare one with precedence = [first, second].", a, b)
			}
		}
	}
	var order []string
	for _, r := range v.doc.rules {
		for _, it := range r.precedence {
			if !slices.Contains(order, it.Value) {
				order = append(order, it.Value)
			}
		}
	}
	for _, cycle := range cycles(edges, order) {
		rng := v.doc.fileRange
		for _, r := range v.doc.rules {
			if len(r.precedence) == 2 && r.precedence[0].Value == cycle[0] && r.precedence[1].Value == cycle[1] {
				rng = r.def
			}
		}
		v.add(RulePrecedenceAcyclic, rng, "Precedence cycle",
			"Composition precedence has a cycle: %s; no order of the active targets satisfies it.", strings.Join(append(cycle, cycle[0]), " → "))
	}
}

// bindingFamily returns the binding family of a slot target's contract,
// or "" for any other target.
func (v *validator) bindingFamily(id string) string {
	t := v.targets[id]
	if t == nil || TargetKind(t.kind.Value) != TargetSlot || t.contract == nil {
		return ""
	}
	if s := v.slots[t.contract.Value]; s != nil {
		return s.BindingFamilyID
	}
	return ""
}
