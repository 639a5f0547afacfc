package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// catalogShowOptions are the flags and arguments of catalog show.
type catalogShowOptions struct {
	file   string
	asJSON bool
	args   []string
}

func newCatalogShowCommand(s Streams) *cobra.Command {
	var o catalogShowOptions
	cmd := &cobra.Command{
		Use:   "show TARGET [--file FILE] [--json]",
		Short: "Show one target with its contract and digests",
		Long: `Show a registered target: its kind, members, relations, allowed features,
contract digest and target-spec digest, and the slot contract of each
member (entry, prepare, call, outputs, graph-dynamic inputs, correctness,
tolerances, KL threshold, binding family and catalog shapes).

--json prints the target's snapshot row exactly as the target-spec digest
hashes it ("target_spec") and each member slot in full.`,
		Example: `  cacheon catalog show activation.silu_and_mul
  cacheon catalog show collective.moe_epilogue.v1 --json
  cacheon catalog show norm.rmsnorm --file my-catalog.hcl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			return runCatalogShow(cmd.Context(), s, o)
		},
	}
	cmd.Flags().StringVar(&o.file, "file", "", "catalog file (default: the catalog compiled into this binary)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the target and its member slots as JSON")
	return cmd
}

func runCatalogShow(_ context.Context, s Streams, o catalogShowOptions) error {
	var fileArgs []string
	if o.file != "" {
		fileArgs = []string{o.file}
	}
	l, err := enginecli.LoadValidCatalog(fileArgs, s.Err)
	if err != nil {
		return err
	}
	c := l.Catalog
	t, ok := c.Target(o.args[0])
	if !ok {
		return reject.Errorf("%s: no target %q; registered targets: %s", l.Name, o.args[0], strings.Join(c.TargetIDs(), ", "))
	}
	spec, _ := c.TargetSpec(t.ID)
	specDigest, _ := c.TargetSpecDigest(t.ID)
	contract, _ := c.ContractDigest(t.ID)
	var slots []catalog.Slot
	for _, m := range t.Members {
		if slot, ok := c.Slot(m); ok {
			slots = append(slots, slot)
		}
	}
	if o.asJSON {
		view := catalogShowView{FormatVersion: 1, TargetID: t.ID, TargetSpecDigest: specDigest.String(), TargetSpec: spec, Slots: []slotView{}}
		for _, slot := range slots {
			view.Slots = append(view.Slots, newSlotView(slot))
		}
		return enginecli.WriteJSON(s.Out, view)
	}
	w := s.Out
	fmt.Fprintf(w, "target %s (%s)\n", t.ID, t.Kind)
	fmt.Fprintf(w, "  members             %s\n", listOrDash(t.Members))
	fmt.Fprintf(w, "  displaces           %s\n", listOrDash(t.Displaces))
	fmt.Fprintf(w, "  compatible with     %s\n", listOrDash(t.CompatibleWith))
	fmt.Fprintf(w, "  requires            %s\n", listOrDash(t.Requires))
	fmt.Fprintf(w, "  allowed features    %s\n", listOrDash(t.AllowedFeatures))
	if t.AtomicSemanticsID != "" {
		fmt.Fprintf(w, "  atomic semantics    %s\n", t.AtomicSemanticsID)
	}
	fmt.Fprintf(w, "  contract digest     %s\n", contract)
	fmt.Fprintf(w, "  target-spec digest  %s\n", specDigest)
	for _, slot := range slots {
		fmt.Fprintln(w)
		writeSlotDetail(w, slot)
	}
	return nil
}

// catalogShowView is the --json document of catalog show.
type catalogShowView struct {
	FormatVersion    int             `json:"format_version"`
	TargetID         string          `json:"target_id"`
	TargetSpecDigest string          `json:"target_spec_digest"`
	TargetSpec       json.RawMessage `json:"target_spec"`
	Slots            []slotView      `json:"slots"`
}

func listOrDash(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(xs, ", ")
}

func writeSlotDetail(w io.Writer, s catalog.Slot) {
	fmt.Fprintf(w, "slot %s (%s)\n", s.ID, s.Kind)
	fmt.Fprintf(w, "  %s\n", s.Summary)
	call := s.Entry + "(" + strings.Join(s.Call, ", ") + ")"
	fmt.Fprintf(w, "  call                %s\n", call)
	if s.Prepare != "" {
		fmt.Fprintf(w, "  prepare             %s\n", s.Prepare)
	}
	fmt.Fprintf(w, "  outputs             %s\n", strings.Join(s.Outputs, ", "))
	fmt.Fprintf(w, "  graph-dynamic       %s\n", strings.Join(s.GraphDynamicInputs, ", "))
	fmt.Fprintf(w, "  correctness         %s\n", describeCorrectness(s.Correctness))
	var tols []string
	for _, t := range s.Tolerances {
		tols = append(tols, fmt.Sprintf("%s atol %s rtol %s", t.DType, t.ATol, t.RTol))
	}
	fmt.Fprintf(w, "  tolerances          %s\n", strings.Join(tols, "; "))
	if s.KLThreshold != nil {
		fmt.Fprintf(w, "  KL threshold        %s\n", s.KLThreshold)
	}
	fmt.Fprintf(w, "  binding family      %s\n", s.BindingFamilyID)
	var shapes []string
	for _, sh := range s.Shapes {
		shapes = append(shapes, formatShape(sh))
	}
	fmt.Fprintf(w, "  shapes              (%s): %s\n", strings.Join(s.ShapeParams, ", "), strings.Join(shapes, " "))
}

func describeCorrectness(c catalog.Correctness) string {
	switch c.Mode {
	case catalog.MatchedRatio:
		return fmt.Sprintf("matched_ratio >= %s", c.MinRatio)
	case catalog.Cosine:
		d := fmt.Sprintf("cosine >= %s", c.MinCosine)
		if !c.MaxRelNormErr.IsZero() {
			d += fmt.Sprintf(", relative norm error <= %s", c.MaxRelNormErr)
		}
		return d
	case catalog.TopKOverlap:
		return fmt.Sprintf("topk_overlap k=%d >= %s", c.TopK, c.MinOverlap)
	}
	return string(c.Mode)
}

func formatShape(sh []int64) string {
	parts := make([]string, 0, len(sh))
	for _, d := range sh {
		parts = append(parts, fmt.Sprint(d))
	}
	return "(" + strings.Join(parts, ",") + ")"
}
