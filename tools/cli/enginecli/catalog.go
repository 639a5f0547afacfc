package enginecli

import (
	"errors"
	"io"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/internal/reject"
)

// NewCatalogCommand is the catalog group with check and digest, which
// cacheon_catalog runs; the full command line adds show and snapshot.
func NewCatalogCommand(s Streams) *cobra.Command {
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
	)
	return cmd
}

// LoadedCatalog is a catalog file as a command read it.
type LoadedCatalog struct {
	Name     string // file name shown in diagnostics
	Embedded bool
	src      []byte
	Catalog  *catalog.Catalog // nil when Diags has errors
	Diags    hcl.Diagnostics
}

// LoadCatalogArg loads the catalog named by args[0], or the embedded
// default. An unreadable file is an I/O error; a file that does not
// validate comes back with its diagnostics.
func LoadCatalogArg(args []string) (*LoadedCatalog, error) {
	l := &LoadedCatalog{Name: catalog.DefaultFile, Embedded: true, src: catalog.DefaultSource()}
	if len(args) > 0 {
		src, err := hclload.ReadPath(args[0])
		if errors.Is(err, hclload.ErrTooLarge) {
			return nil, reject.Wrap(err)
		} else if err != nil {
			return nil, err
		}
		l.Name, l.Embedded, l.src = args[0], false, src
	}
	l.Catalog, l.Diags = catalog.Parse(l.src, l.Name)
	return l, nil
}

// LoadValidCatalog is LoadCatalogArg for a command that needs a valid
// catalog: an invalid one's diagnostics go to diag, and the error is the
// exit-2 rejection.
func LoadValidCatalog(args []string, diag io.Writer) (*LoadedCatalog, error) {
	l, err := LoadCatalogArg(args)
	if err != nil {
		return nil, err
	}
	if l.Catalog == nil {
		return nil, l.Rejection(diag)
	}
	return l, nil
}

// WriteDiagnostics renders the diagnostics as every HCL file's are.
func (l *LoadedCatalog) WriteDiagnostics(w io.Writer) error {
	return hclload.WriteText(w, map[string][]byte{l.Name: l.src}, l.Diags)
}

// Rejection prints the diagnostics to w and returns the exit-2 error.
func (l *LoadedCatalog) Rejection(w io.Writer) error {
	if err := l.WriteDiagnostics(w); err != nil {
		return err
	}
	n := len(l.Diags.Errs())
	return reject.Errorf("%s: invalid catalog (%d %s)", l.Name, n, plural(n, "error", "errors"))
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
