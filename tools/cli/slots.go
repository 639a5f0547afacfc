package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// slotView is one slot in --json output: the whole slot specification.
type slotView struct {
	SlotID             string           `json:"slot_id"`
	Kind               catalog.SlotKind `json:"kind"`
	Summary            string           `json:"summary"`
	Entry              string           `json:"entry"`
	Prepare            *string          `json:"prepare"`
	Call               []string         `json:"call"`
	Outputs            []string         `json:"outputs"`
	GraphDynamicInputs []string         `json:"graph_dynamic_inputs"`
	BindingFamilyID    string           `json:"binding_family_id"`
	InputABIID         string           `json:"input_abi_id"`
	OutputABIID        string           `json:"output_abi_id"`
	ReferenceID        string           `json:"reference_id"`
	VerificationID     string           `json:"verification_profile_id"`
	Correctness        correctnessView  `json:"correctness"`
	Tolerances         []toleranceView  `json:"tolerances"`
	KLThreshold        *catalog.Decimal `json:"kl_threshold"`
	ShapeParams        []string         `json:"shape_params"`
	ShapeFlags         []string         `json:"shape_flags"`
	Shapes             [][]int64        `json:"shapes"`
}

type correctnessView struct {
	Mode          catalog.CorrectnessMode `json:"mode"`
	TopK          int                     `json:"top_k"`
	MinRatio      catalog.Decimal         `json:"min_ratio"`
	MinCosine     catalog.Decimal         `json:"min_cosine"`
	MaxRelNormErr catalog.Decimal         `json:"max_rel_norm_err"`
	MinOverlap    catalog.Decimal         `json:"min_overlap"`
}

type toleranceView struct {
	DType string          `json:"dtype"`
	ATol  catalog.Decimal `json:"atol"`
	RTol  catalog.Decimal `json:"rtol"`
}

func newSlotView(s catalog.Slot) slotView {
	v := slotView{
		SlotID: s.ID, Kind: s.Kind, Summary: s.Summary, Entry: s.Entry,
		Call: s.Call, Outputs: s.Outputs, GraphDynamicInputs: s.GraphDynamicInputs,
		BindingFamilyID: s.BindingFamilyID, InputABIID: s.InputABIID, OutputABIID: s.OutputABIID,
		ReferenceID: s.ReferenceID, VerificationID: s.VerificationProfileID,
		Correctness: correctnessView(s.Correctness),
		Tolerances:  []toleranceView{},
		KLThreshold: s.KLThreshold,
		ShapeParams: s.ShapeParams,
		ShapeFlags:  append([]string{}, s.ShapeFlags...),
		Shapes:      append([][]int64{}, s.Shapes...),
	}
	if s.Prepare != "" {
		prepare := s.Prepare
		v.Prepare = &prepare
	}
	for _, t := range s.Tolerances {
		v.Tolerances = append(v.Tolerances, toleranceView(t))
	}
	return v
}

type slotsView struct {
	FormatVersion int        `json:"format_version"`
	File          string     `json:"file"`
	Embedded      bool       `json:"embedded"`
	CatalogDigest string     `json:"catalog_digest"`
	Count         int        `json:"count"`
	Slots         []slotView `json:"slots"`
}

// slotsOptions are the flags and arguments of slots.
type slotsOptions struct {
	file   string
	asJSON bool
	args   []string
}

func newSlotsCommand(s Streams) *cobra.Command {
	var o slotsOptions
	cmd := &cobra.Command{
		Use:   "slots [--file FILE] [--json]",
		Short: "List the registered slots (the submission ABI)",
		Long: `List the registered slots: the validator-owned call boundaries a kernel
contribution fills. For each slot the validator owns the call site and
allocates every output; the contribution's entry callable only fills the
outputs, and is checked against a trusted high-precision reference.

The slots come from the default catalog compiled into this binary, or from
--file. --json prints each slot in full: entry and prepare names, call
arguments in semantic order, outputs, graph-dynamic inputs, correctness
policy, per-dtype tolerances, KL threshold, binding family, contract ids
and the catalog shapes the verifier runs.`,
		Example: `  cacheon slots
  cacheon slots --json | jq '.slots[] | {slot_id, entry, call}'
  cacheon catalog show moe.fused_experts   # one slot's target and contract`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runSlots(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.file, "file", "", "catalog file (default: the catalog compiled into this binary)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print every slot specification as JSON")
	return cmd
}

func runSlots(_ context.Context, s Streams, o slotsOptions) error {
	var fileArgs []string
	if o.file != "" {
		fileArgs = []string{o.file}
	}
	l, err := enginecli.LoadValidCatalog(fileArgs, s.Err)
	if err != nil {
		return err
	}
	slots := l.Catalog.Slots()
	if o.asJSON {
		view := slotsView{
			FormatVersion: 1, File: l.Name, Embedded: l.Embedded,
			CatalogDigest: l.Catalog.Digest().String(), Count: len(slots), Slots: []slotView{},
		}
		for _, slot := range slots {
			view.Slots = append(view.Slots, newSlotView(slot))
		}
		return enginecli.WriteJSON(s.Out, view)
	}
	fmt.Fprintln(s.Out, "Registered op-slots (the submission ABI):")
	tw := tabwriter.NewWriter(s.Out, 0, 0, 2, ' ', 0)
	for _, slot := range slots {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", slot.ID, slot.Kind, slot.Summary)
	}
	return tw.Flush()
}
