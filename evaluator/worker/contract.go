package worker

import (
	"slices"

	"github.com/cacheon/engine/catalog"
)

// SlotContract is what the catalog states about a slot, as every worker that
// plans, runs or judges the slot receives it. The catalog is the only source
// of these values: the Python side keeps a slot's semantics (which inputs it
// generates and how, which outputs it allocates, the fp32 truth) and takes
// the call signature, the catalog shapes, the graph-dynamic inputs, the
// correctness policy and the tolerances from here, so a catalog edit reaches
// verification without a second copy to keep in step.
//
// Thresholds and tolerances are catalog decimal strings ("0.00001"), exact
// as the catalog states them.
type SlotContract struct {
	Slot string `json:"slot"`
	Kind string `json:"kind"`
	// ReferenceID names the semantics the slot's truth must implement; the
	// Python side refuses a contract whose reference it does not implement.
	ReferenceID string `json:"reference_id"`
	// Entry and Prepare are the catalog's callable names. A bundle's op row
	// names its own callables; a non-empty Prepare means the slot has a
	// prepare step the row must provide.
	Entry              string                       `json:"entry"`
	Prepare            string                       `json:"prepare"`
	Call               []string                     `json:"call"`
	Outputs            []string                     `json:"outputs"`
	GraphDynamicInputs []string                     `json:"graph_dynamic_inputs"`
	Correctness        ContractCorrectness          `json:"correctness"`
	Tolerances         map[string]ContractTolerance `json:"tolerances"` // by dtype
	KLThreshold        *catalog.Decimal             `json:"kl_threshold"`
	ShapeParams        []string                     `json:"shape_params"`
	ShapeFlags         []string                     `json:"shape_flags"`
	Shapes             [][]int64                    `json:"shapes"`
}

// ContractCorrectness is a slot's correctness policy; thresholds a mode does
// not use hold the catalog's neutral values.
type ContractCorrectness struct {
	Mode          catalog.CorrectnessMode `json:"mode"`
	TopK          int                     `json:"top_k"`
	MinRatio      catalog.Decimal         `json:"min_ratio"`
	MinCosine     catalog.Decimal         `json:"min_cosine"`
	MaxRelNormErr catalog.Decimal         `json:"max_rel_norm_err"`
	MinOverlap    catalog.Decimal         `json:"min_overlap"`
}

// ContractTolerance is the allclose bound for one dtype.
type ContractTolerance struct {
	ATol catalog.Decimal `json:"atol"`
	RTol catalog.Decimal `json:"rtol"`
}

// ContractOf projects a catalog slot onto the contract its workers receive.
func ContractOf(s catalog.Slot) SlotContract {
	c := SlotContract{
		Slot:               s.ID,
		Kind:               string(s.Kind),
		ReferenceID:        s.ReferenceID,
		Entry:              s.Entry,
		Prepare:            s.Prepare,
		Call:               nonNil(s.Call),
		Outputs:            nonNil(s.Outputs),
		GraphDynamicInputs: nonNil(s.GraphDynamicInputs),
		Correctness: ContractCorrectness{
			Mode:          s.Correctness.Mode,
			TopK:          s.Correctness.TopK,
			MinRatio:      s.Correctness.MinRatio,
			MinCosine:     s.Correctness.MinCosine,
			MaxRelNormErr: s.Correctness.MaxRelNormErr,
			MinOverlap:    s.Correctness.MinOverlap,
		},
		Tolerances:  map[string]ContractTolerance{},
		KLThreshold: s.KLThreshold,
		ShapeParams: nonNil(s.ShapeParams),
		ShapeFlags:  nonNil(s.ShapeFlags),
		Shapes:      [][]int64{},
	}
	for _, t := range s.Tolerances {
		c.Tolerances[t.DType] = ContractTolerance{ATol: t.ATol, RTol: t.RTol}
	}
	for _, shape := range s.Shapes {
		c.Shapes = append(c.Shapes, slices.Clone(shape))
	}
	return c
}

// DTypes returns the dtypes the contract has tolerances for, sorted.
func (c SlotContract) DTypes() []string {
	out := make([]string, 0, len(c.Tolerances))
	for d := range c.Tolerances {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// nonNil keeps empty lists as [] on the wire: the Python side reads every
// list field and should not have to tell null from empty.
func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return slices.Clone(xs)
}
