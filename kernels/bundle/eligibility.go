package bundle

import (
	"fmt"
	"math/big"
	"sort"
)

// Eligibility is the domain of live calls one op row claims: the
// intersection of the manifest's dtypes/architectures with the metadata's,
// the metadata's legacy bounds and its capability predicates. A missing
// live field is a mismatch, never a wildcard.
type Eligibility struct {
	Dtypes        []string // canonical, sorted; empty = unrestricted
	Architectures []string
	Quant         []string // empty = dense weights only
	MaxLastDim    *big.Int
	MinNumTokens  *big.Int
	MaxNumTokens  *big.Int
	Capabilities  Domain
}

// OpEligibility derives the row's eligibility. Load has already rejected
// rows whose manifest and metadata domains are disjoint.
func OpEligibility(op *Op) (*Eligibility, error) {
	md := op.MetadataDoc
	if md == nil {
		md = &Metadata{}
	}
	e := &Eligibility{Quant: md.Quant, MaxLastDim: md.MaxLastDim, MinNumTokens: md.MinNumTokens,
		MaxNumTokens: md.MaxNumTokens, Capabilities: md.Capabilities}
	var err error
	if e.Dtypes, err = intersectDeclared("dtype", op.Dtypes, md.Dtypes); err != nil {
		return nil, newError(ErrMetadata, FileName, op.Key("dtypes"), "%v", err)
	}
	if e.Architectures, err = intersectDeclared("architecture", op.Architectures, md.Architectures); err != nil {
		return nil, newError(ErrMetadata, FileName, op.Key("architectures"), "%v", err)
	}
	return e, nil
}

func checkEligibility(op *Op, _ *Metadata) error {
	_, err := OpEligibility(op)
	return err
}

// intersectDeclared canonicalizes the manifest's values and intersects them
// with the metadata's (already canonical); either side empty means no
// restriction from it.
func intersectDeclared(field string, manifestValues, metadataValues []string) ([]string, error) {
	set := map[string]bool{}
	for _, v := range manifestValues {
		c, err := CanonicalText(field, v)
		if err != nil {
			return nil, err
		}
		set[c] = true
	}
	if len(set) == 0 {
		return metadataValues, nil
	}
	if len(metadataValues) == 0 {
		return sortedKeys(set), nil
	}
	var out []string
	for _, v := range metadataValues {
		if set[v] {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("manifest %ss %q and metadata %ss %q are disjoint", field, sortedKeys(set), field, metadataValues)
	}
	return out, nil
}

// constraint is one field's intersected domain during overlap analysis.
type constraint struct {
	allowed  []any // nil = any value
	min, max *big.Int
	keys     map[string]bool // valueKey of every allowed value; see index
}

// index returns the keys of the allowed values, built once.
func (c *constraint) index() map[string]bool {
	if c.keys == nil && c.allowed != nil {
		c.keys = make(map[string]bool, len(c.allowed))
		for _, v := range c.allowed {
			c.keys[valueKey(v)] = true
		}
	}
	return c.keys
}

// allow intersects the allowed values with values, in time linear in both.
func (c *constraint) allow(values []any) {
	o := constraint{allowed: values}
	c.allowIndexed(values, o.index())
}

// allowIndexed is allow with the keys of values already built.
func (c *constraint) allowIndexed(values []any, keys map[string]bool) {
	c.keys = nil
	if c.allowed == nil {
		c.allowed = append([]any{}, values...)
		return
	}
	keep := []any{}
	for _, v := range c.allowed {
		if keys[valueKey(v)] {
			keep = append(keep, v)
		}
	}
	c.allowed = keep
}

// intersect returns the domain both constraints allow.
func (c *constraint) intersect(o *constraint) *constraint {
	out := &constraint{allowed: c.allowed, min: c.min, max: c.max, keys: c.keys}
	if o.allowed != nil {
		out.allowIndexed(o.allowed, o.index())
	}
	out.bound(o.min, o.max)
	return out
}

func (c *constraint) bound(min, max *big.Int) {
	if min != nil && (c.min == nil || min.Cmp(c.min) > 0) {
		c.min = min
	}
	if max != nil && (c.max == nil || max.Cmp(c.max) < 0) {
		c.max = max
	}
}

func (c *constraint) empty(numeric bool) bool {
	lo := c.min
	if numeric && (lo == nil || lo.Sign() < 0) {
		lo = big.NewInt(0)
	}
	if lo != nil && c.max != nil && lo.Cmp(c.max) > 0 {
		return true
	}
	if c.allowed == nil {
		return false
	}
	for _, v := range c.allowed {
		n, isInt := v.(*big.Int)
		if !isInt {
			if c.min == nil && c.max == nil {
				return false
			}
			continue
		}
		if (lo != nil && n.Cmp(lo) < 0) || (c.max != nil && n.Cmp(c.max) > 0) {
			continue
		}
		return false
	}
	return true
}

func strs(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

func (e *Eligibility) fold(cs map[string]*constraint) {
	get := func(f string) *constraint {
		c, ok := cs[f]
		if !ok {
			c = &constraint{}
			cs[f] = c
		}
		return c
	}
	if len(e.Dtypes) > 0 {
		get("dtype").allow(strs(e.Dtypes))
	}
	if len(e.Architectures) > 0 {
		get("architecture").allow(strs(e.Architectures))
	}
	if e.MaxLastDim != nil {
		get("last_dim").bound(nil, e.MaxLastDim)
	}
	if e.MinNumTokens != nil || e.MaxNumTokens != nil {
		get("num_tokens").bound(e.MinNumTokens, e.MaxNumTokens)
	}
	if len(e.Quant) > 0 {
		get("quant").allow(strs(e.Quant))
	} else {
		get("quant").allow([]any{"dense"})
	}
	for _, p := range e.Capabilities {
		if p.Allowed != nil {
			get(p.Field).allow(p.Allowed)
		} else {
			get(p.Field).bound(p.Min, p.Max)
		}
	}
}

// Empty reports whether no live call can satisfy the domain.
func (e *Eligibility) Empty() bool {
	return domainEmpty(e.constraints())
}

// Overlaps reports whether some live call satisfies both domains.
func (e *Eligibility) Overlaps(o *Eligibility) bool {
	return constraintsOverlap(e.constraints(), o.constraints())
}

// constraints folds the domain into one constraint per field.
func (e *Eligibility) constraints() map[string]*constraint {
	cs := map[string]*constraint{}
	e.fold(cs)
	return cs
}

func domainEmpty(cs map[string]*constraint) bool {
	for f, c := range cs {
		if c.empty(numericFields[f]) {
			return true
		}
	}
	return false
}

// constraintsOverlap reports whether two folded domains share a live
// call. Intersection per field is order-free, so only the fields both
// constrain need intersecting; a field one side leaves open keeps the
// other side's (non-empty) constraint.
func constraintsOverlap(a, b map[string]*constraint) bool {
	if domainEmpty(a) || domainEmpty(b) {
		return false
	}
	for f, ca := range a {
		cb, ok := b[f]
		if !ok {
			continue
		}
		if ca.intersect(cb).empty(numericFields[f]) {
			return false
		}
	}
	return true
}

// CheckVariantDomains rejects a manifest whose rows have an empty domain
// or whose variants of one slot overlap: routing must never depend on
// manifest order, so exactly one variant may match any live call. Each
// row's domain is folded once; the pairwise check is bounded by
// MaxVariantsPerSlot, which Parse enforces.
func CheckVariantDomains(m *Manifest) error {
	bySlot := map[string][]*Op{}
	for i := range m.Ops {
		op := &m.Ops[i]
		bySlot[op.Slot] = append(bySlot[op.Slot], op)
	}
	slots := make([]string, 0, len(bySlot))
	for s := range bySlot {
		slots = append(slots, s)
	}
	sort.Strings(slots)
	for _, s := range slots {
		ops := bySlot[s]
		if len(ops) > MaxVariantsPerSlot {
			return newError(ErrLimit, FileName, ops[MaxVariantsPerSlot].Key("variant"), "slot %q has more than %d variants", s, MaxVariantsPerSlot)
		}
		// Variant order, not manifest order, so the verdict and its
		// message never depend on how rows are listed.
		sort.Slice(ops, func(i, j int) bool { return ops[i].Variant < ops[j].Variant })
		doms := make([]map[string]*constraint, len(ops))
		for i, op := range ops {
			e, err := OpEligibility(op)
			if err != nil {
				return err
			}
			doms[i] = e.constraints()
			if domainEmpty(doms[i]) {
				return newError(ErrMetadata, FileName, op.Key(""), "variant %q of %s has an empty eligibility domain", op.Variant, s)
			}
		}
		for i := range ops {
			for j := i + 1; j < len(ops); j++ {
				if constraintsOverlap(doms[i], doms[j]) {
					return newError(ErrMetadata, FileName, ops[j].Key("variant"),
						"variants %q and %q of %s have overlapping eligibility domains", ops[i].Variant, ops[j].Variant, s)
				}
			}
		}
	}
	return nil
}
