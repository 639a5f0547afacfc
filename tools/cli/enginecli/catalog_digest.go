package enginecli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// catalogDigestOptions are the flags and arguments of catalog digest.
type catalogDigestOptions struct {
	asJSON bool
	args   []string
}

func newCatalogDigestCommand(s Streams) *cobra.Command {
	var o catalogDigestOptions
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
			o.args = args
			return runCatalogDigest(cmd.Context(), s, o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print every catalog digest as JSON")
	return cmd
}

func runCatalogDigest(_ context.Context, s Streams, o catalogDigestOptions) error {
	l, err := LoadValidCatalog(o.args, s.Err)
	if err != nil {
		return err
	}
	c := l.Catalog
	if !o.asJSON {
		fmt.Fprintln(s.Out, c.Digest())
		return nil
	}
	view := catalogDigestView{
		FormatVersion:                  1,
		File:                           l.Name,
		Embedded:                       l.Embedded,
		CatalogDigest:                  c.Digest().String(),
		ArtifactProviderRegistryDigest: c.ArtifactProviderRegistryDigest().String(),
		Targets:                        map[string]targetDigestsView{},
		CompositionRules:               map[string]string{},
	}
	for _, id := range c.TargetIDs() {
		contract, _ := c.ContractDigest(id)
		spec, _ := c.TargetSpecDigest(id)
		view.Targets[id] = targetDigestsView{ContractDigest: contract.String(), TargetSpecDigest: spec.String()}
	}
	for _, r := range c.CompositionRules() {
		view.CompositionRules[r.ID] = r.BindingContractDigest.String()
	}
	return WriteJSON(s.Out, view)
}
