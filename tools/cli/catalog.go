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
	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/internal/reject"
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
