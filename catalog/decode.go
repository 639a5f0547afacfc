package catalog

import (
	"fmt"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// document is a decoded catalog file: every block as written, with the
// source ranges the cross-block rules report against. Decoding checks
// what one block can check alone; validate.go checks the rest.
type document struct {
	policy       item
	catalogDef   hcl.Range
	vocabulary   []item
	observedOnly []item

	featureSets   []*featureSetDecl
	toleranceSets []*toleranceSetDecl
	providers     []*providerDecl
	slots         []*slotDecl
	targets       []*targetDecl
	rules         []*ruleDecl

	fileRange hcl.Range
}

type featureSetDecl struct {
	name     item
	features []item
}

type toleranceSetDecl struct {
	name       item
	tolerances []Tolerance
}

type providerDecl struct {
	ArtifactProvider
	id  item
	def hcl.Range
	// The feature lists keep their ranges for the feature rules.
	requiredFeatures []item
	rebuildFeature   item
}

type slotDecl struct {
	Slot
	id  item
	def hcl.Range
}

type targetDecl struct {
	id        item
	def       hcl.Range
	kind      item
	kindOK    bool
	members   []item
	displaces []item
	compat    []item
	requires  []item
	features  []item
	contract  *item
	atomicID  *item

	membersRange  hcl.Range
	featuresRange hcl.Range
}

type ruleDecl struct {
	id         item
	def        hcl.Range
	precedence []item
	mode       item
	family     item
}

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "catalog"},
		{Type: "features"},
		{Type: "feature_set", LabelNames: []string{"name"}},
		{Type: "tolerance_set", LabelNames: []string{"name"}},
		{Type: "artifact_provider", LabelNames: []string{"provider_id"}},
		{Type: "slot", LabelNames: []string{"slot_id"}},
		{Type: "target", LabelNames: []string{"target_id"}},
		{Type: "composition_rule", LabelNames: []string{"rule_id"}},
	},
}

// decodeFile decodes every block of a parsed catalog file.
func decodeFile(file *hcl.File) (*document, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	content, moreDiags := file.Body.Content(fileSchema)
	diags = append(diags, moreDiags...)
	doc := &document{fileRange: file.Body.MissingItemRange()}

	byType := content.Blocks.ByType()
	catalogBlock := single(byType["catalog"], "catalog", doc.fileRange, &diags)
	featuresBlock := single(byType["features"], "features", doc.fileRange, &diags)
	doc.catalogDef = doc.fileRange
	if catalogBlock != nil {
		doc.catalogDef = catalogBlock.DefRange
		doc.policy = decodeCatalogBlock(catalogBlock, &diags)
	}
	if featuresBlock != nil {
		doc.vocabulary, doc.observedOnly = decodeFeaturesBlock(featuresBlock, &diags)
	}
	for _, b := range byType["feature_set"] {
		doc.featureSets = append(doc.featureSets, decodeFeatureSetBlock(b, &diags))
	}
	for _, b := range byType["tolerance_set"] {
		doc.toleranceSets = append(doc.toleranceSets, decodeToleranceSetBlock(b, &diags))
	}
	for _, b := range byType["artifact_provider"] {
		doc.providers = append(doc.providers, decodeProviderBlock(b, &diags))
	}
	budget := &expansion{left: MaxExpansion}
	tolCtx := doc.toleranceSetLookup()
	for _, b := range byType["slot"] {
		doc.slots = append(doc.slots, decodeSlotBlock(b, tolCtx, budget, &diags))
	}
	featCtx := doc.featureSetContext()
	for _, b := range byType["target"] {
		doc.targets = append(doc.targets, decodeTargetBlock(b, featCtx, budget, &diags))
	}
	for _, b := range byType["composition_rule"] {
		doc.rules = append(doc.rules, decodeRuleBlock(b, &diags))
	}
	return doc, diags
}

// MaxExpansion bounds how many entries the feature_set and tolerance_set
// references of one catalog expand to in total. A reference copies its
// set, so without a bound a file of many references to one large set
// costs the product of their counts; the default catalog expands to fewer
// than 150 entries.
const MaxExpansion = 1 << 18

// expansion is what is left of MaxExpansion while a file decodes.
type expansion struct {
	left     int
	reported bool
}

// spend takes n entries for the reference at rng, reporting once when the
// budget runs out.
func (e *expansion) spend(n int, rng hcl.Range, diags *hcl.Diagnostics) bool {
	e.left -= n
	if e.left >= 0 {
		return true
	}
	if !e.reported {
		e.reported = true
		*diags = append(*diags, violation(RuleExpansionBudget, rng, "Too many expanded entries",
			fmt.Sprintf("The feature_set and tolerance_set references up to here expand to more than %d entries; list fewer, or use smaller sets.", MaxExpansion)))
	}
	return false
}

// single returns the one block of a type that must appear exactly once.
func single(blocks hcl.Blocks, typ string, fileRange hcl.Range, diags *hcl.Diagnostics) *hcl.Block {
	switch len(blocks) {
	case 0:
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Missing %s block", typ),
			Detail:   fmt.Sprintf("A catalog needs exactly one %s block.", typ),
			Subject:  fileRange.Ptr(),
		})
		return nil
	case 1:
		return blocks[0]
	default:
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Duplicate %s block", typ),
			Detail:   fmt.Sprintf("Only one %s block is allowed; the first is at %s.", typ, blocks[0].DefRange),
			Subject:  blocks[1].DefRange.Ptr(),
		})
		return blocks[0]
	}
}

func labelItem(b *hcl.Block) item { return item{b.Labels[0], b.LabelRanges[0]} }

func blockAttrs(b *hcl.Block, schema *hcl.BodySchema, diags *hcl.Diagnostics) (attrDecoder, hcl.Blocks) {
	content, moreDiags := b.Body.Content(schema)
	*diags = append(*diags, moreDiags...)
	return attrDecoder{attrs: content.Attributes, diags: diags}, content.Blocks
}

var catalogSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "policy_version", Required: true}},
}

func decodeCatalogBlock(b *hcl.Block, diags *hcl.Diagnostics) item {
	a, _ := blockAttrs(b, catalogSchema, diags)
	policy, ok := a.str("policy_version")
	if ok && policy.Value != PolicyVersion {
		*diags = append(*diags, violation(RulePolicyVersion, policy.Range, "Unsupported policy version",
			fmt.Sprintf("This catalog is written for policy %q; this toolchain implements %q.", policy.Value, PolicyVersion)))
	}
	return policy
}

var featuresSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "vocabulary", Required: true},
		{Name: "observed_only"},
	},
}

func decodeFeaturesBlock(b *hcl.Block, diags *hcl.Diagnostics) (vocabulary, observedOnly []item) {
	a, _ := blockAttrs(b, featuresSchema, diags)
	vocabulary, _ = a.strList("vocabulary", nil)
	checkUnique("The feature vocabulary", vocabulary, diags)
	observedOnly, _ = a.strList("observed_only", nil)
	checkUnique("observed_only", observedOnly, diags)
	return vocabulary, observedOnly
}

var featureSetSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "features", Required: true}},
}

func decodeFeatureSetBlock(b *hcl.Block, diags *hcl.Diagnostics) *featureSetDecl {
	a, _ := blockAttrs(b, featureSetSchema, diags)
	fs := &featureSetDecl{name: labelItem(b)}
	checkVariableName("feature_set", fs.name, diags)
	fs.features, _ = a.strList("features", nil)
	checkUnique(fmt.Sprintf("feature_set %q", fs.name.Value), fs.features, diags)
	return fs
}

// checkVariableName checks a label that expressions refer to as
// <block type>.<label>, which HCL allows only for identifiers.
func checkVariableName(typ string, name item, diags *hcl.Diagnostics) {
	if !hclsyntax.ValidIdentifier(name.Value) {
		*diags = append(*diags, violation(RuleIDPattern, name.Range, "Invalid set name",
			fmt.Sprintf("Expressions refer to this set as %s.%s, so its name must be an identifier (letters, digits, \"_\" and \"-\", starting with a letter).", typ, name.Value)))
	}
}

func decodeToleranceSetBlock(b *hcl.Block, diags *hcl.Diagnostics) *toleranceSetDecl {
	ts := &toleranceSetDecl{name: labelItem(b)}
	checkVariableName("tolerance_set", ts.name, diags)
	attrs, moreDiags := b.Body.JustAttributes()
	*diags = append(*diags, moreDiags...)
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if tol, ok := decodeTolerance(name, attrs[name].Expr, diags); ok {
			ts.tolerances = append(ts.tolerances, tol)
		}
	}
	if len(attrs) == 0 {
		*diags = append(*diags, violation(RuleTolerances, b.DefRange, "Empty tolerance set",
			fmt.Sprintf("tolerance_set %q lists no dtype; write one line per dtype, for example float32 = { atol = \"0.00001\", rtol = \"0.00001\" }.", ts.name.Value)))
	}
	return ts
}

// decodeTolerance decodes `{ atol = "…", rtol = "…" }` for dtype.
func decodeTolerance(dtype string, expr hcl.Expression, diags *hcl.Diagnostics) (Tolerance, bool) {
	pairs, moreDiags := hcl.ExprMap(expr)
	if moreDiags.HasErrors() {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid tolerance",
			Detail:   fmt.Sprintf("The tolerance for %s must be written as { atol = \"…\", rtol = \"…\" }.", dtype),
			Subject:  expr.Range().Ptr(),
		})
		return Tolerance{}, false
	}
	tol := Tolerance{DType: dtype}
	seen := map[string]bool{}
	good := true
	for _, kv := range pairs {
		key, keyDiags := kv.Key.Value(nil)
		if keyDiags.HasErrors() || key.Type() != cty.String {
			*diags = append(*diags, keyDiags...)
			good = false
			continue
		}
		name := key.AsString()
		v, valDiags := kv.Value.Value(nil)
		*diags = append(*diags, valDiags...)
		if valDiags.HasErrors() {
			good = false
			continue
		}
		var target *Decimal
		switch name {
		case "atol":
			target = &tol.ATol
		case "rtol":
			target = &tol.RTol
		default:
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("A tolerance has atol and rtol, not %q.%s", name, suggest(name, []string{"atol", "rtol"})),
				Subject:  kv.Key.Range().Ptr(),
			})
			good = false
			continue
		}
		seen[name] = true
		dec, rng, ok := decimalValue(dtype+"."+name, v, kv.Value.Range(), diags)
		if !ok {
			good = false
			continue
		}
		if dec.Rat().Sign() < 0 {
			*diags = append(*diags, violation(RuleTolerances, rng, "Negative tolerance",
				fmt.Sprintf("%s.%s is %s; tolerances are bounds on an absolute difference and cannot be negative.", dtype, name, dec)))
			good = false
			continue
		}
		*target = dec
	}
	for _, name := range []string{"atol", "rtol"} {
		if !seen[name] && good {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing required argument",
				Detail:   fmt.Sprintf("The tolerance for %s needs %s.", dtype, name),
				Subject:  expr.Range().Ptr(),
			})
			good = false
		}
	}
	return tol, good
}

// toleranceSetLookup maps tolerance set names to their decoded values.
func (doc *document) toleranceSetLookup() map[string]*toleranceSetDecl {
	out := make(map[string]*toleranceSetDecl, len(doc.toleranceSets))
	for _, ts := range doc.toleranceSets {
		if _, dup := out[ts.name.Value]; !dup {
			out[ts.name.Value] = ts
		}
	}
	return out
}

// featureSetContext is the evaluation context of allowed_features: the
// feature sets as feature_set.<name> and the concat function.
func (doc *document) featureSetContext() *hcl.EvalContext {
	sets := map[string]cty.Value{}
	for _, fs := range doc.featureSets {
		if _, dup := sets[fs.name.Value]; dup {
			continue
		}
		vals := make([]cty.Value, len(fs.features))
		for i, f := range fs.features {
			vals[i] = cty.StringVal(f.Value)
		}
		if len(vals) == 0 {
			sets[fs.name.Value] = cty.ListValEmpty(cty.String)
		} else {
			sets[fs.name.Value] = cty.ListVal(vals)
		}
	}
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{"feature_set": cty.ObjectVal(sets)},
		Functions: map[string]function.Function{"concat": stdlib.ConcatFunc},
	}
}

var providerSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "artifact_kind", Required: true},
		{Name: "authoritative", Required: true},
		{Name: "binding_abi", Required: true},
		{Name: "build_patcher_id", Required: true},
		{Name: "build_phase", Required: true},
		{Name: "compile_profile_inputs", Required: true},
		{Name: "crownable", Required: true},
		{Name: "load_phase", Required: true},
		{Name: "provider_capabilities", Required: true},
		{Name: "publication_directory", Required: true},
		{Name: "rebuild_feature", Required: true},
		{Name: "required_target_features", Required: true},
		{Name: "requires_compile_profile", Required: true},
		{Name: "supports_static_slots", Required: true},
	},
}

func decodeProviderBlock(b *hcl.Block, diags *hcl.Diagnostics) *providerDecl {
	a, _ := blockAttrs(b, providerSchema, diags)
	p := &providerDecl{id: labelItem(b), def: b.DefRange}
	p.ID = p.id.Value
	checkID("artifact provider id", p.id, diags)
	strs := map[string]*string{
		"artifact_kind":         &p.ArtifactKind,
		"binding_abi":           &p.BindingABI,
		"build_patcher_id":      &p.BuildPatcherID,
		"build_phase":           &p.BuildPhase,
		"load_phase":            &p.LoadPhase,
		"publication_directory": &p.PublicationDirectory,
	}
	for _, name := range sortedKeys(strs) {
		if s, ok := a.str(name); ok {
			if checkID(name, s, diags) {
				*strs[name] = s.Value
			}
		}
	}
	if s, ok := a.str("rebuild_feature"); ok {
		p.rebuildFeature = s
		p.RebuildFeature = s.Value
	}
	bools := map[string]*bool{
		"authoritative":            &p.Authoritative,
		"crownable":                &p.Crownable,
		"requires_compile_profile": &p.RequiresCompileProfile,
		"supports_static_slots":    &p.SupportsStaticSlots,
	}
	for _, name := range sortedKeys(bools) {
		if v, ok := a.boolean(name); ok {
			*bools[name] = v
		}
	}
	lists := map[string]*[]string{
		"compile_profile_inputs":   &p.CompileProfileInputs,
		"provider_capabilities":    &p.ProviderCapabilities,
		"required_target_features": &p.RequiredTargetFeatures,
	}
	for _, name := range sortedKeys(lists) {
		items, _ := a.strList(name, nil)
		checkUnique(name, items, diags)
		*lists[name] = sortedValues(items)
		if name == "required_target_features" {
			p.requiredFeatures = items
		}
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var slotSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "kind", Required: true},
		{Name: "summary", Required: true},
		{Name: "entry", Required: true},
		{Name: "prepare"},
		{Name: "call", Required: true},
		{Name: "outputs", Required: true},
		{Name: "graph_dynamic_inputs", Required: true},
		{Name: "binding_family_id", Required: true},
		{Name: "input_abi_id", Required: true},
		{Name: "output_abi_id", Required: true},
		{Name: "reference_id", Required: true},
		{Name: "verification_profile_id", Required: true},
		{Name: "tolerances", Required: true},
		{Name: "kl_threshold"},
		{Name: "shape_params", Required: true},
		{Name: "shape_flags"},
		{Name: "shapes", Required: true},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "correctness"}},
}

func decodeSlotBlock(b *hcl.Block, tolSets map[string]*toleranceSetDecl, budget *expansion, diags *hcl.Diagnostics) *slotDecl {
	a, blocks := blockAttrs(b, slotSchema, diags)
	s := &slotDecl{id: labelItem(b), def: b.DefRange}
	s.ID = s.id.Value
	checkID("slot id", s.id, diags)

	if kind, ok := a.str("kind"); ok {
		switch SlotKind(kind.Value) {
		case SlotOp, SlotBlock, SlotCollective:
			s.Kind = SlotKind(kind.Value)
		default:
			*diags = append(*diags, violation(RuleSlotKind, kind.Range, "Unknown slot kind",
				fmt.Sprintf("Slot %q has kind %q; a slot is \"op\", \"block\" or \"collective\".%s", s.ID, kind.Value,
					suggest(kind.Value, []string{"op", "block", "collective"}))))
		}
	}
	if summary, ok := a.str("summary"); ok {
		if summary.Value == "" {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Empty summary",
				Detail:   fmt.Sprintf("Slot %q needs a one-line summary of what it computes.", s.ID),
				Subject:  summary.Range.Ptr(),
			})
		}
		s.Summary = summary.Value
	}
	for _, name := range []string{"entry", "prepare"} {
		v, ok := a.str(name)
		if !ok {
			continue
		}
		if !isPythonIdentifier(v.Value) {
			*diags = append(*diags, violation(RulePythonIdentifier, v.Range, "Invalid callable name",
				fmt.Sprintf("Slot %q: %s %q must be a Python identifier, the name a contribution's module exports.", s.ID, name, v.Value)))
			continue
		}
		if name == "entry" {
			s.Entry = v.Value
		} else {
			s.Prepare = v.Value
		}
	}
	decodeSlotSignature(s, a, diags)

	ids := map[string]*string{
		"binding_family_id":       &s.BindingFamilyID,
		"input_abi_id":            &s.InputABIID,
		"output_abi_id":           &s.OutputABIID,
		"reference_id":            &s.ReferenceID,
		"verification_profile_id": &s.VerificationProfileID,
	}
	for _, name := range sortedKeys(ids) {
		if v, ok := a.str(name); ok && checkID(name, v, diags) {
			*ids[name] = v.Value
		}
	}

	s.Tolerances = decodeSlotTolerances(s, a, tolSets, budget, diags)
	if a.has("kl_threshold") {
		if kl, rng, ok := a.decimal("kl_threshold"); ok {
			if kl.Rat().Sign() <= 0 {
				*diags = append(*diags, violation(RuleKLThreshold, rng, "Invalid KL threshold",
					fmt.Sprintf("Slot %q has kl_threshold %s; a KL threshold must be positive (omit the argument for none).", s.ID, kl)))
			} else {
				s.KLThreshold = &kl
			}
		}
	}
	decodeSlotShapes(s, a, diags)

	var correctness []*hcl.Block
	for _, blk := range blocks {
		if blk.Type == "correctness" {
			correctness = append(correctness, blk)
		}
	}
	if c := singleNested(correctness, "correctness", s.ID, b.DefRange, diags); c != nil {
		s.Correctness = decodeCorrectnessBlock(s.ID, c, diags)
	}
	return s
}

func singleNested(blocks []*hcl.Block, typ, owner string, def hcl.Range, diags *hcl.Diagnostics) *hcl.Block {
	switch len(blocks) {
	case 0:
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Missing %s block", typ),
			Detail:   fmt.Sprintf("%q needs exactly one %s block.", owner, typ),
			Subject:  def.Ptr(),
		})
		return nil
	case 1:
		return blocks[0]
	default:
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Duplicate %s block", typ),
			Detail:   fmt.Sprintf("%q has more than one %s block; the first is at %s.", owner, typ, blocks[0].DefRange),
			Subject:  blocks[1].DefRange.Ptr(),
		})
		return nil
	}
}

// decodeSlotSignature decodes call, outputs and graph_dynamic_inputs and
// checks how they relate.
func decodeSlotSignature(s *slotDecl, a attrDecoder, diags *hcl.Diagnostics) {
	call, callOK := a.strList("call", nil)
	outputs, outOK := a.strList("outputs", nil)
	dynamic, dynOK := a.strList("graph_dynamic_inputs", nil)
	callOK = callOK && checkUnique("call", call, diags)
	outOK = outOK && checkUnique("outputs", outputs, diags)
	dynOK = dynOK && checkUnique("graph_dynamic_inputs", dynamic, diags)
	for _, arg := range call {
		if !isPythonIdentifier(arg.Value) {
			*diags = append(*diags, violation(RulePythonIdentifier, arg.Range, "Invalid argument name",
				fmt.Sprintf("Slot %q: call argument %q must be a Python identifier.", s.ID, arg.Value)))
			callOK = false
		}
	}
	s.Call, s.Outputs, s.GraphDynamicInputs = itemValues(call), itemValues(outputs), itemValues(dynamic)
	if !callOK || !outOK || !dynOK {
		return
	}
	if len(call) == 0 {
		*diags = append(*diags, violation(RuleCallSignature, a.rangeOf("call", s.def), "Empty call",
			fmt.Sprintf("Slot %q must list the entry's arguments in semantic order.", s.ID)))
		return
	}
	if len(outputs) == 0 {
		*diags = append(*diags, violation(RuleCallSignature, a.rangeOf("outputs", s.def), "No outputs",
			fmt.Sprintf("Slot %q must name at least one output argument: the validator allocates every output and the candidate only fills it.", s.ID)))
	}
	for _, out := range outputs {
		if !slices.Contains(s.Call, out.Value) {
			*diags = append(*diags, violation(RuleCallSignature, out.Range, "Output not in call",
				fmt.Sprintf("Slot %q names output %q, which is not one of the call arguments %s.", s.ID, out.Value, quoteList(s.Call))))
		}
	}
	if len(dynamic) == 0 {
		*diags = append(*diags, violation(RuleGraphDynamicInputs, a.rangeOf("graph_dynamic_inputs", s.def), "No graph-dynamic inputs",
			fmt.Sprintf("Slot %q must name the inputs that change between CUDA-graph replays; without them a candidate that caches its capture-time output cannot be caught.", s.ID)))
	}
	for _, in := range dynamic {
		switch {
		case !slices.Contains(s.Call, in.Value):
			*diags = append(*diags, violation(RuleGraphDynamicInputs, in.Range, "Unknown graph-dynamic input",
				fmt.Sprintf("Slot %q: %q is not one of the call arguments %s.%s", s.ID, in.Value, quoteList(s.Call), suggest(in.Value, s.Call))))
		case slices.Contains(s.Outputs, in.Value):
			*diags = append(*diags, violation(RuleGraphDynamicInputs, in.Range, "Output listed as graph-dynamic input",
				fmt.Sprintf("Slot %q: %q is an output; graph-dynamic inputs are the inputs refreshed between replays.", s.ID, in.Value)))
		}
	}
}

// decodeSlotTolerances accepts `tolerance_set.<name>` or an inline
// object `{ float32 = { atol = "…", rtol = "…" }, … }`.
func decodeSlotTolerances(s *slotDecl, a attrDecoder, sets map[string]*toleranceSetDecl, budget *expansion, diags *hcl.Diagnostics) []Tolerance {
	attr := a.attrs["tolerances"]
	if attr == nil {
		return nil
	}
	if trav, travDiags := hcl.AbsTraversalForExpr(attr.Expr); !travDiags.HasErrors() {
		if len(trav) == 2 && trav.RootName() == "tolerance_set" {
			if step, ok := trav[1].(hcl.TraverseAttr); ok {
				ts, found := sets[step.Name]
				if !found {
					*diags = append(*diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Unknown tolerance set",
						Detail:   fmt.Sprintf("Slot %q refers to tolerance_set.%s, which is not declared.%s", s.ID, step.Name, suggest(step.Name, sortedKeys(sets))),
						Subject:  attr.Expr.Range().Ptr(),
					})
					return nil
				}
				if !budget.spend(len(ts.tolerances), attr.Expr.Range(), diags) {
					return nil
				}
				return slices.Clone(ts.tolerances)
			}
		}
	}
	pairs, mapDiags := hcl.ExprMap(attr.Expr)
	if mapDiags.HasErrors() {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid tolerances",
			Detail:   "tolerances must be a tolerance set, as in tolerances = tolerance_set.standard, or an object of dtype = { atol = \"…\", rtol = \"…\" }.",
			Subject:  attr.Expr.Range().Ptr(),
		})
		return nil
	}
	var out []Tolerance
	seen := map[string]hcl.Range{}
	for _, kv := range pairs {
		dtype := hcl.ExprAsKeyword(kv.Key)
		if dtype == "" {
			if v, d := kv.Key.Value(nil); !d.HasErrors() && v.Type() == cty.String {
				dtype = v.AsString()
			}
		}
		if dtype == "" {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid dtype",
				Detail:   "A tolerance key is a dtype name such as float32.",
				Subject:  kv.Key.Range().Ptr(),
			})
			continue
		}
		if prev, dup := seen[dtype]; dup {
			*diags = append(*diags, violation(RuleDuplicateItem, kv.Key.Range(), "Duplicate entry",
				fmt.Sprintf("tolerances lists %s twice; it first appears at %s.", dtype, prev)))
			continue
		}
		seen[dtype] = kv.Key.Range()
		if tol, ok := decodeTolerance(dtype, kv.Value, diags); ok {
			out = append(out, tol)
		}
	}
	if len(pairs) == 0 {
		*diags = append(*diags, violation(RuleTolerances, attr.Expr.Range(), "No tolerances",
			fmt.Sprintf("Slot %q needs a tolerance for at least one dtype.", s.ID)))
	}
	slices.SortFunc(out, func(x, y Tolerance) int { return compareStrings(x.DType, y.DType) })
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decodeSlotShapes decodes shape_params, shape_flags and shapes. A shape
// is a list of integers, one per parameter: positive for a size, 0 or 1
// for a parameter named in shape_flags.
func decodeSlotShapes(s *slotDecl, a attrDecoder, diags *hcl.Diagnostics) {
	params, ok := a.strList("shape_params", nil)
	if !ok || !checkUnique("shape_params", params, diags) {
		return
	}
	s.ShapeParams = itemValues(params)
	if len(params) == 0 {
		*diags = append(*diags, violation(RuleShapes, a.rangeOf("shape_params", s.def), "No shape parameters",
			fmt.Sprintf("Slot %q must name its shape parameters, for example [\"T\", \"d\"].", s.ID)))
		return
	}
	if a.has("shape_flags") {
		flags, ok := a.strList("shape_flags", nil)
		if !ok || !checkUnique("shape_flags", flags, diags) {
			return
		}
		for _, f := range flags {
			if !slices.Contains(s.ShapeParams, f.Value) {
				*diags = append(*diags, violation(RuleShapes, f.Range, "Unknown shape flag",
					fmt.Sprintf("Slot %q: shape flag %q is not one of the shape parameters %s.%s", s.ID, f.Value, quoteList(s.ShapeParams), suggest(f.Value, s.ShapeParams))))
				return
			}
		}
		s.ShapeFlags = itemValues(flags)
	}
	attr := a.attrs["shapes"]
	if attr == nil {
		return
	}
	rows, listDiags := hcl.ExprList(attr.Expr)
	if listDiags.HasErrors() {
		*diags = append(*diags, violation(RuleShapes, attr.Expr.Range(), "Invalid shapes",
			"shapes must be a list of shapes, each a list of integers such as [128, 4096]."))
		return
	}
	if len(rows) == 0 {
		*diags = append(*diags, violation(RuleShapes, attr.Expr.Range(), "No catalog shapes",
			fmt.Sprintf("Slot %q must list the shapes the verifier checks.", s.ID)))
		return
	}
	for _, row := range rows {
		if shape, ok := decodeShape(s.ID, s.ShapeParams, s.ShapeFlags, row, diags); ok {
			s.Shapes = append(s.Shapes, shape)
		}
	}
}

func decodeShape(slotID string, params, flags []string, row hcl.Expression, diags *hcl.Diagnostics) ([]int64, bool) {
	v, valDiags := row.Value(nil)
	*diags = append(*diags, valDiags...)
	if valDiags.HasErrors() {
		return nil, false
	}
	bad := func(detail string) ([]int64, bool) {
		*diags = append(*diags, violation(RuleShapes, row.Range(), "Invalid shape",
			fmt.Sprintf("Slot %q: %s The shape parameters are %s.", slotID, detail, quoteList(params))))
		return nil, false
	}
	if v.IsNull() || !(v.Type().IsTupleType() || v.Type().IsListType()) {
		return bad("a shape is a list of integers.")
	}
	elems := v.AsValueSlice()
	if len(elems) != len(params) {
		return bad(fmt.Sprintf("this shape has %d values but the slot has %d shape parameters.", len(elems), len(params)))
	}
	shape := make([]int64, 0, len(elems))
	for i, e := range elems {
		n, ok := wholeNumber(e)
		switch {
		case slices.Contains(flags, params[i]):
			if !ok || n != 0 && n != 1 {
				return bad(fmt.Sprintf("%s is a flag and must be 0 or 1.", params[i]))
			}
		case !ok || n <= 0:
			return bad(fmt.Sprintf("%s must be a positive integer.", params[i]))
		}
		shape = append(shape, n)
	}
	return shape, true
}

var correctnessSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "mode", Required: true},
		{Name: "top_k"},
		{Name: "min_ratio"},
		{Name: "min_cosine"},
		{Name: "max_rel_norm_err"},
		{Name: "min_overlap"},
	},
}

// correctnessUses says which thresholds each mode reads. A threshold the
// mode does not read is an error: it would sit in the contract digest
// without governing anything.
var correctnessUses = map[CorrectnessMode][]string{
	Allclose:     {},
	MatchedRatio: {"min_ratio"},
	Cosine:       {"min_cosine", "max_rel_norm_err"},
	TopKOverlap:  {"top_k", "min_overlap"},
}

// correctnessRequires lists the thresholds a mode cannot work without.
var correctnessRequires = map[CorrectnessMode][]string{
	MatchedRatio: {"min_ratio"},
	Cosine:       {"min_cosine"},
	TopKOverlap:  {"top_k", "min_overlap"},
}

func decodeCorrectnessBlock(slotID string, b *hcl.Block, diags *hcl.Diagnostics) Correctness {
	a, _ := blockAttrs(b, correctnessSchema, diags)
	c := Correctness{MinRatio: MustDecimal("1")}
	mode, ok := a.str("mode")
	if !ok {
		return c
	}
	uses, known := correctnessUses[CorrectnessMode(mode.Value)]
	if !known {
		*diags = append(*diags, violation(RuleCorrectnessMode, mode.Range, "Unknown correctness mode",
			fmt.Sprintf("Slot %q has correctness mode %q; the modes are allclose, matched_ratio, cosine and topk_overlap.%s",
				slotID, mode.Value, suggest(mode.Value, []string{"allclose", "matched_ratio", "cosine", "topk_overlap"}))))
		return c
	}
	c.Mode = CorrectnessMode(mode.Value)
	for _, name := range []string{"top_k", "min_ratio", "min_cosine", "max_rel_norm_err", "min_overlap"} {
		if a.has(name) && !slices.Contains(uses, name) {
			*diags = append(*diags, violation(RuleCorrectnessThreshold, a.attrs[name].NameRange, "Threshold not used by this mode",
				fmt.Sprintf("Slot %q: %s is not read by correctness mode %s, which uses %s.", slotID, name, c.Mode, describeUses(uses))))
		}
	}
	for _, name := range correctnessRequires[c.Mode] {
		if !a.has(name) {
			*diags = append(*diags, violation(RuleCorrectnessThreshold, b.DefRange, "Missing threshold",
				fmt.Sprintf("Slot %q: correctness mode %s needs %s.", slotID, c.Mode, name)))
		}
	}
	if slices.Contains(uses, "top_k") && a.has("top_k") {
		if k, rng, ok := a.integer("top_k"); ok {
			if k < 1 {
				*diags = append(*diags, violation(RuleCorrectnessThreshold, rng, "Threshold out of range",
					fmt.Sprintf("Slot %q: top_k is %d; it must be at least 1.", slotID, k)))
			} else {
				c.TopK = int(k)
			}
		}
	}
	one := MustDecimal("1")
	thresholds := []struct {
		name      string
		dst       *Decimal
		zeroOK    bool // the lower bound is inclusive
		upperOne  bool
		rangeText string
	}{
		{"min_ratio", &c.MinRatio, false, true, "greater than 0 and at most 1"},
		{"min_cosine", &c.MinCosine, false, true, "greater than 0 and at most 1"},
		{"max_rel_norm_err", &c.MaxRelNormErr, true, false, "at least 0 (0 turns the check off)"},
		{"min_overlap", &c.MinOverlap, false, true, "greater than 0 and at most 1"},
	}
	for _, th := range thresholds {
		if !slices.Contains(uses, th.name) || !a.has(th.name) {
			continue
		}
		dec, rng, ok := a.decimal(th.name)
		if !ok {
			continue
		}
		sign := dec.Rat().Sign()
		if sign < 0 || sign == 0 && !th.zeroOK || th.upperOne && dec.Cmp(one) > 0 {
			*diags = append(*diags, violation(RuleCorrectnessThreshold, rng, "Threshold out of range",
				fmt.Sprintf("Slot %q: %s is %s; it must be %s.", slotID, th.name, dec, th.rangeText)))
			continue
		}
		*th.dst = dec
	}
	return c
}

func describeUses(uses []string) string {
	if len(uses) == 0 {
		return "no threshold (only the per-dtype tolerances)"
	}
	return quoteList(uses)
}

var targetSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "kind", Required: true},
		{Name: "members", Required: true},
		{Name: "displaces"},
		{Name: "compatible_with"},
		{Name: "requires"},
		{Name: "allowed_features", Required: true},
		{Name: "contract"},
		{Name: "atomic_semantics_id"},
	},
}

func decodeTargetBlock(b *hcl.Block, featCtx *hcl.EvalContext, budget *expansion, diags *hcl.Diagnostics) *targetDecl {
	a, _ := blockAttrs(b, targetSchema, diags)
	t := &targetDecl{id: labelItem(b), def: b.DefRange}
	checkID("target id", t.id, diags)
	if kind, ok := a.str("kind"); ok {
		t.kind = kind
		switch TargetKind(kind.Value) {
		case TargetSlot, TargetAtomic:
			t.kindOK = true
		default:
			*diags = append(*diags, violation(RuleTargetKind, kind.Range, "Unknown target kind",
				fmt.Sprintf("Target %q has kind %q; a target is \"slot\" or \"atomic\".%s", t.id.Value, kind.Value,
					suggest(kind.Value, []string{"slot", "atomic"}))))
		}
	}
	lists := []struct {
		name string
		dst  *[]item
		ctx  *hcl.EvalContext
	}{
		{"members", &t.members, nil},
		{"displaces", &t.displaces, nil},
		{"compatible_with", &t.compat, nil},
		{"requires", &t.requires, nil},
		{"allowed_features", &t.features, featCtx},
	}
	for _, l := range lists {
		if l.ctx != nil && !knownFeatureSets(a.attrs[l.name], l.ctx, budget, diags) {
			continue
		}
		*l.dst, _ = a.strList(l.name, l.ctx)
		checkUnique(l.name, *l.dst, diags)
	}
	t.membersRange = a.rangeOf("members", t.def)
	t.featuresRange = a.rangeOf("allowed_features", t.def)
	if a.has("contract") {
		if v, ok := a.str("contract"); ok {
			t.contract = &v
		}
	}
	if a.has("atomic_semantics_id") {
		if v, ok := a.str("atomic_semantics_id"); ok && checkID("atomic_semantics_id", v, diags) {
			t.atomicID = &v
		}
	}
	return t
}

// knownFeatureSets reports references to undeclared feature sets with a
// suggestion, before evaluation would report them less helpfully, and
// charges every reference's set size to budget before evaluation copies it.
func knownFeatureSets(attr *hcl.Attribute, ctx *hcl.EvalContext, budget *expansion, diags *hcl.Diagnostics) bool {
	if attr == nil {
		return true
	}
	sets := ctx.Variables["feature_set"].Type().AttributeTypes()
	names := sortedKeys(sets)
	ok := true
	for _, trav := range attr.Expr.Variables() {
		if trav.RootName() != "feature_set" || len(trav) < 2 {
			continue
		}
		step, isAttr := trav[1].(hcl.TraverseAttr)
		if !isAttr {
			continue
		}
		if _, found := sets[step.Name]; !found {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unknown feature set",
				Detail:   fmt.Sprintf("feature_set.%s is not declared; declared sets: %s.%s", step.Name, quoteList(names), suggest(step.Name, names)),
				Subject:  trav.SourceRange().Ptr(),
			})
			ok = false
		} else if !budget.spend(ctx.Variables["feature_set"].GetAttr(step.Name).LengthInt(), trav.SourceRange(), diags) {
			ok = false
		}
	}
	return ok
}

var ruleSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "precedence", Required: true},
		{Name: "mode", Required: true},
		{Name: "binding_family_id", Required: true},
	},
}

func decodeRuleBlock(b *hcl.Block, diags *hcl.Diagnostics) *ruleDecl {
	a, _ := blockAttrs(b, ruleSchema, diags)
	r := &ruleDecl{id: labelItem(b), def: b.DefRange}
	checkID("composition rule id", r.id, diags)
	if prec, ok := a.strList("precedence", nil); ok {
		r.precedence = prec
		if len(prec) != 2 || prec[0].Value == prec[1].Value {
			*diags = append(*diags, violation(RuleCompositionPair, a.rangeOf("precedence", r.def), "Invalid precedence",
				fmt.Sprintf("Composition rule %q must order exactly two distinct targets, first the one that binds first; it lists %s.", r.id.Value, quoteList(itemValues(prec)))))
		}
	}
	if mode, ok := a.str("mode"); ok {
		r.mode = mode
		if mode.Value != CompositionFirstApplicable {
			*diags = append(*diags, violation(RuleCompositionMode, mode.Range, "Unknown composition mode",
				fmt.Sprintf("Composition rule %q has mode %q; the only mode is %q.", r.id.Value, mode.Value, CompositionFirstApplicable)))
		}
	}
	if fam, ok := a.str("binding_family_id"); ok && checkID("binding_family_id", fam, diags) {
		r.family = fam
	}
	return r
}
