package enginecli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/internal/reject"
)

// catalogCheckOptions are the flags and arguments of catalog check.
type catalogCheckOptions struct {
	asJSON bool
	args   []string
}

func newCatalogCheckCommand(s Streams) *cobra.Command {
	var o catalogCheckOptions
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
			o.args = args
			return runCatalogCheck(cmd.Context(), s, o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the result and every diagnostic as JSON")
	return cmd
}

func runCatalogCheck(_ context.Context, s Streams, o catalogCheckOptions) error {
	l, err := LoadCatalogArg(o.args)
	if err != nil {
		return err
	}
	if o.asJSON {
		view := catalogCheckView{
			FormatVersion: 1,
			File:          l.Name,
			Embedded:      l.Embedded,
			Valid:         !l.Diags.HasErrors(),
			ErrorCount:    len(l.Diags.Errs()),
			WarningCount:  len(l.Diags) - len(l.Diags.Errs()),
			Diagnostics:   hclload.JSON(l.Diags),
		}
		if c := l.Catalog; c != nil {
			view.CatalogDigest = c.Digest().String()
			view.SlotTargets, view.AtomicTargets = countTargets(c)
			view.Slots = len(c.Slots())
			view.Rules = len(c.CompositionRules())
			view.Providers = len(c.ArtifactProviders())
		}
		if err := WriteJSON(s.Out, view); err != nil {
			return err
		}
		if !view.Valid {
			return AlreadyReported(reject.ErrRejected)
		}
		return nil
	}
	if l.Catalog == nil {
		return l.Rejection(s.Err)
	}
	if err := l.WriteDiagnostics(s.Err); err != nil { // warnings, if any
		return err
	}
	c := l.Catalog
	slotTargets, atomic := countTargets(c)
	fmt.Fprintf(s.Out, "%s: valid: %d targets (%d slot, %d atomic), %d slots, %d composition %s, %d artifact %s\n",
		l.Name, slotTargets+atomic, slotTargets, atomic, len(c.Slots()),
		len(c.CompositionRules()), plural(len(c.CompositionRules()), "rule", "rules"),
		len(c.ArtifactProviders()), plural(len(c.ArtifactProviders()), "provider", "providers"))
	fmt.Fprintf(s.Out, "catalog digest %s\n", c.Digest())
	return nil
}
