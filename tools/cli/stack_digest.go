package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/tools/cli/enginecli"
)

// stackDigestOptions are the inputs of stack digest.
type stackDigestOptions struct {
	input       enginecli.StackInputOptions
	deps        enginecli.StackDeps
	stack       string // the stack file
	json        bool
	manifestOut string
}

func newStackDigestCommand(s Streams, deps enginecli.StackDeps) *cobra.Command {
	o := stackDigestOptions{deps: deps}
	cmd := &cobra.Command{
		Use:   "digest STACK",
		Short: "Print the identity of a stack",
		Long: `Digest assembles STACK (an HCL stack file): it locates every contribution
source, inspects it against the catalog the stack names (content hash,
target, selected payload), checks the active targets against the
catalog's rules, and prints the digest of the stack's canonical manifest:
H(cacheon.stack.evaluation, manifest) for evaluation and reference stacks,
H(cacheon.stack.release, manifest) for release stacks.

--manifest-out writes the canonical manifest JSON (the exact bytes the
digest covers, without the domain envelope) atomically.`,
		Example: `  cacheon stack digest stacks/incumbent.hcl
  cacheon stack digest --json stacks/release.hcl
  cacheon stack digest --catalog catalog/targets.hcl \
      --contribution //kernels/contributions:silu_and_mul_triton=kernels/contributions/silu_and_mul_triton \
      --contribution //kernels/contributions:rmsnorm_triton=kernels/contributions/rmsnorm_triton \
      stacks/incumbent.hcl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stack = args[0]
			return runStackDigest(cmd.Context(), s, o)
		},
	}
	o.input.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	cmd.Flags().StringVar(&o.manifestOut, "manifest-out", "", "also write the canonical stack manifest JSON to FILE")
	return cmd
}

func runStackDigest(_ context.Context, s Streams, o stackDigestOptions) error {
	l, err := enginecli.LoadStack(s, o.stack, o.input, o.deps, o.json)
	if err != nil {
		return err
	}
	m := l.Assembled.Manifest
	d, err := m.Digest()
	if err != nil {
		return err
	}
	if o.manifestOut != "" {
		if err := enginecli.WriteManifest(o.manifestOut, m); err != nil {
			return err
		}
	}
	if !o.json {
		fmt.Fprintln(s.Out, d)
		return nil
	}
	entries, err := enginecli.EntriesJSON(l)
	if err != nil {
		return err
	}
	catDigest, _ := m.Catalog()
	return enginecli.WriteJSON(s.Out, map[string]any{
		"format_version": 1, "stack": o.stack, "name": l.Assembled.File.Name, "kind": string(l.Assembled.File.Kind),
		"stack_digest": d, "catalog_digest": catDigest, "entries": entries,
	})
}
