package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/tools/hclload"
	"github.com/cacheon/engine/tools/reject"
)

func newCatalogCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Check, digest and inspect the target catalog",
		Long: `The target catalog (catalog/targets.hcl) defines the reward units of the
market: one target per registered slot, the atomic targets that replace
several slots together, the features each target admits, how targets
displace or compose with each other, and the artifact providers.

Every command reads FILE when given, and otherwise the default catalog
compiled into this binary. Identities are computed over canonical JSON
projections of the catalog, never over its HCL bytes, so reformatting a
catalog never changes its digest.`,
		Example: `  cacheon catalog check                      # the embedded default catalog
  cacheon catalog check my-catalog.hcl       # a working copy, with diagnostics
  cacheon catalog digest
  cacheon catalog show collective.moe_epilogue.v1`,
	}
	cmd.AddCommand(
		newCatalogCheckCommand(s),
		newCatalogDigestCommand(s),
		newCatalogShowCommand(s),
		newCatalogSnapshotCommand(s),
	)
	return cmd
}

// loadedCatalog is a catalog file as a command read it.
type loadedCatalog struct {
	name     string // file name shown in diagnostics
	embedded bool
	src      []byte
	catalog  *catalog.Catalog // nil when diags has errors
	diags    hcl.Diagnostics
}

// loadCatalogArg loads the catalog named by args[0], or the embedded
// default. An unreadable file is an I/O error; a file that does not
// validate comes back with its diagnostics.
func loadCatalogArg(args []string) (*loadedCatalog, error) {
	l := &loadedCatalog{name: catalog.DefaultFile, embedded: true, src: catalog.DefaultSource()}
	if len(args) > 0 {
		src, err := hclload.ReadPath(args[0])
		if errors.Is(err, hclload.ErrTooLarge) {
			return nil, reject.Wrap(err)
		} else if err != nil {
			return nil, err
		}
		l.name, l.embedded, l.src = args[0], false, src
	}
	l.catalog, l.diags = catalog.Parse(l.src, l.name)
	return l, nil
}

// writeDiagnostics renders the diagnostics as every HCL file's are.
func (l *loadedCatalog) writeDiagnostics(w io.Writer) error {
	return hclload.WriteText(w, map[string][]byte{l.name: l.src}, l.diags)
}

// rejection prints the diagnostics to w and returns the exit-2 error.
func (l *loadedCatalog) rejection(w io.Writer) error {
	if err := l.writeDiagnostics(w); err != nil {
		return err
	}
	n := len(l.diags.Errs())
	return reject.Errorf("%s: invalid catalog (%d %s)", l.name, n, plural(n, "error", "errors"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// catalogCheckView is the --json document of catalog check.
type catalogCheckView struct {
	FormatVersion int                  `json:"format_version"`
	File          string               `json:"file"`
	Embedded      bool                 `json:"embedded"`
	Valid         bool                 `json:"valid"`
	ErrorCount    int                  `json:"error_count"`
	WarningCount  int                  `json:"warning_count"`
	Diagnostics   []hclload.Diagnostic `json:"diagnostics"`
	CatalogDigest string               `json:"catalog_digest,omitempty"`
	SlotTargets   int                  `json:"slot_targets"`
	AtomicTargets int                  `json:"atomic_targets"`
	Slots         int                  `json:"slots"`
	Rules         int                  `json:"composition_rules"`
	Providers     int                  `json:"artifact_providers"`
}

func newCatalogCheckCommand(s Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [FILE] [--json]",
		Short: "Validate a target catalog",
		Long: `Decode and validate a target catalog: FILE, or the default catalog compiled
into this binary. Every schema problem (an unknown attribute or block, a
missing argument, a value of the wrong type) and every catalog rule
(unique ids, slot and atomic target shape, relations, displacement and
requirement cycles, composition rules, features, thresholds) is checked;
see docs/reference/catalog-hcl.md for the list.

Problems are printed with file, line, column and a source snippet, each
naming the catalog rule it breaks. Exit 0 when the catalog is valid, 2 when
it is not, 1 when FILE cannot be read.`,
		Example: `  cacheon catalog check
  cacheon catalog check catalog/targets.hcl
  cacheon catalog check my-catalog.hcl --json | jq '.diagnostics[] | .rule'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadCatalogArg(args)
			if err != nil {
				return err
			}
			if asJSON {
				view := catalogCheckView{
					FormatVersion: 1,
					File:          l.name,
					Embedded:      l.embedded,
					Valid:         !l.diags.HasErrors(),
					ErrorCount:    len(l.diags.Errs()),
					WarningCount:  len(l.diags) - len(l.diags.Errs()),
					Diagnostics:   hclload.JSON(l.diags),
				}
				if c := l.catalog; c != nil {
					view.CatalogDigest = c.Digest()
					view.SlotTargets, view.AtomicTargets = countTargets(c)
					view.Slots = len(c.Slots())
					view.Rules = len(c.CompositionRules())
					view.Providers = len(c.ArtifactProviders())
				}
				if err := writeJSON(s.Out, view); err != nil {
					return err
				}
				if !view.Valid {
					return alreadyReported(reject.ErrRejected)
				}
				return nil
			}
			if l.catalog == nil {
				return l.rejection(s.Err)
			}
			if err := l.writeDiagnostics(s.Err); err != nil { // warnings, if any
				return err
			}
			c := l.catalog
			slotTargets, atomic := countTargets(c)
			fmt.Fprintf(s.Out, "%s: valid: %d targets (%d slot, %d atomic), %d slots, %d composition %s, %d artifact %s\n",
				l.name, slotTargets+atomic, slotTargets, atomic, len(c.Slots()),
				len(c.CompositionRules()), plural(len(c.CompositionRules()), "rule", "rules"),
				len(c.ArtifactProviders()), plural(len(c.ArtifactProviders()), "provider", "providers"))
			fmt.Fprintf(s.Out, "catalog digest %s\n", c.Digest())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result and every diagnostic as JSON")
	return cmd
}

func countTargets(c *catalog.Catalog) (slot, atomic int) {
	for _, t := range c.Targets() {
		if t.Kind == catalog.TargetAtomic {
			atomic++
		} else {
			slot++
		}
	}
	return slot, atomic
}

// catalogDigestView is the --json document of catalog digest.
type catalogDigestView struct {
	FormatVersion                  int                          `json:"format_version"`
	File                           string                       `json:"file"`
	Embedded                       bool                         `json:"embedded"`
	CatalogDigest                  string                       `json:"catalog_digest"`
	ArtifactProviderRegistryDigest string                       `json:"artifact_provider_registry_digest"`
	Targets                        map[string]targetDigestsView `json:"targets"`
	CompositionRules               map[string]string            `json:"binding_contract_digests"`
}

type targetDigestsView struct {
	ContractDigest   string `json:"contract_digest"`
	TargetSpecDigest string `json:"target_spec_digest"`
}

func newCatalogDigestCommand(s Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "digest [FILE] [--json]",
		Short: "Print the catalog digest",
		Long: `Print the catalog digest H("cacheon.target-catalog", snapshot) of FILE, or of
the default catalog compiled into this binary. Stacks and qualification
records bind this digest; the default catalog's digest equals the upstream
toolchain's.

--json adds every target's contract digest and target-spec digest
(H("cacheon.target-spec", target row)), the artifact-provider registry
digest and each composition rule's binding contract digest.`,
		Example: `  cacheon catalog digest
  cacheon catalog digest catalog/targets.hcl --json | jq -r '.targets["activation.silu_and_mul"].target_spec_digest'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadCatalogArg(args)
			if err != nil {
				return err
			}
			if l.catalog == nil {
				return l.rejection(s.Err)
			}
			c := l.catalog
			if !asJSON {
				fmt.Fprintln(s.Out, c.Digest())
				return nil
			}
			view := catalogDigestView{
				FormatVersion:                  1,
				File:                           l.name,
				Embedded:                       l.embedded,
				CatalogDigest:                  c.Digest(),
				ArtifactProviderRegistryDigest: c.ArtifactProviderRegistryDigest(),
				Targets:                        map[string]targetDigestsView{},
				CompositionRules:               map[string]string{},
			}
			for _, id := range c.TargetIDs() {
				contract, _ := c.ContractDigest(id)
				spec, _ := c.TargetSpecDigest(id)
				view.Targets[id] = targetDigestsView{ContractDigest: contract, TargetSpecDigest: spec}
			}
			for _, r := range c.CompositionRules() {
				view.CompositionRules[r.ID] = r.BindingContractDigest
			}
			return writeJSON(s.Out, view)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print every catalog digest as JSON")
	return cmd
}

func newCatalogSnapshotCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot [FILE]",
		Short: "Print the canonical catalog snapshot",
		Long: `Print the canonical JSON of the catalog snapshot of FILE, or of the default
catalog: the exact bytes whose H("cacheon.target-catalog", ·) is the catalog
digest. Stacks carry this snapshot so a reader can check their catalog
without the HCL.`,
		Example: `  cacheon catalog snapshot > catalog.snapshot.json
  cacheon catalog snapshot | cacheon digest --domain cacheon.target-catalog`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadCatalogArg(args)
			if err != nil {
				return err
			}
			if l.catalog == nil {
				return l.rejection(s.Err)
			}
			_, err = fmt.Fprintf(s.Out, "%s\n", l.catalog.Snapshot())
			return err
		},
	}
	return cmd
}

// catalogShowView is the --json document of catalog show.
type catalogShowView struct {
	FormatVersion    int             `json:"format_version"`
	TargetID         string          `json:"target_id"`
	TargetSpecDigest string          `json:"target_spec_digest"`
	TargetSpec       json.RawMessage `json:"target_spec"`
	Slots            []slotView      `json:"slots"`
}

func newCatalogShowCommand(s Streams) *cobra.Command {
	var file string
	var asJSON bool
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
			var fileArgs []string
			if file != "" {
				fileArgs = []string{file}
			}
			l, err := loadCatalogArg(fileArgs)
			if err != nil {
				return err
			}
			if l.catalog == nil {
				return l.rejection(s.Err)
			}
			c := l.catalog
			t, ok := c.Target(args[0])
			if !ok {
				return reject.Errorf("%s: no target %q; registered targets: %s", l.name, args[0], strings.Join(c.TargetIDs(), ", "))
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
			if asJSON {
				view := catalogShowView{FormatVersion: 1, TargetID: t.ID, TargetSpecDigest: specDigest, TargetSpec: spec, Slots: []slotView{}}
				for _, slot := range slots {
					view.Slots = append(view.Slots, newSlotView(slot))
				}
				return writeJSON(s.Out, view)
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
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "catalog file (default: the catalog compiled into this binary)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the target and its member slots as JSON")
	return cmd
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
