package enginecli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/stacks/materialize"
)

// stackMaterializeOptions are the inputs of stack materialize.
type stackMaterializeOptions struct {
	input       StackInputOptions
	deps        StackDeps
	stack       string // the stack file
	out         string
	manifestOut string
	records     []string
	json, quiet bool
}

func newStackMaterializeCommand(s Streams, deps StackDeps) *cobra.Command {
	o := stackMaterializeOptions{deps: deps}
	cmd := &cobra.Command{
		Use:   "materialize STACK --out DIR",
		Short: "Write the deterministic engine tree of a stack",
		Long: `Materialize assembles STACK and writes its engine tree to DIR: every
active contribution's Python import closure, namespaced under
cacheon_c_<selected delta digest> with bundle-local imports rewritten,
its CUDA sources and headers, dependency patches, canonical metadata and
entry shims, the runtime manifest.toml and rebuild.json the substrate
loads, and metadata/cacheon_engine_tree.json listing everything. No
contribution code is imported or run.

Each source is copied to a private staging area with two reads that must
agree, checked against the identity the stack names, and inspected again.
The tree is written beside DIR, synced, reopened and verified, and renamed
into place: files 0444, directories 0755, every time at the Unix epoch.
The same stack gives the same bytes and tree digest whatever the working
directory, umask, time zone or locale. DIR must not exist and must not
overlap a source; on any error nothing is left at DIR.

--manifest-out also writes the canonical stack manifest JSON.

A release stack is materialized with its integration review records, one
--integration-record FILE per entry: each must be approved and derive
exactly the integrated reference the stack holds.

Exit codes: 0 written; 2 the stack, a source or the destination was
refused (the message names the file, the target and the rule); 1 a usage
or I/O error.`,
		Example: `  cacheon stack materialize stacks/incumbent.hcl --out /tmp/engine
  cacheon stack materialize --json stacks/reference.hcl --out /tmp/pristine
  cacheon stack materialize stacks/incumbent.hcl --out out/engine --manifest-out out/stack.json \
      --catalog catalog/targets.hcl \
      --contribution //kernels/contributions:silu_and_mul_triton=kernels/contributions/silu_and_mul_triton \
      --contribution //kernels/contributions:rmsnorm_triton=kernels/contributions/rmsnorm_triton`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stack = args[0]
			return runStackMaterialize(cmd.Context(), s, o)
		},
	}
	o.input.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "directory to create (must not exist)")
	f.StringVar(&o.manifestOut, "manifest-out", "", "also write the canonical stack manifest JSON to FILE")
	f.StringArrayVar(&o.records, "integration-record", nil, "integration review record FILE of a release entry (repeat per entry)")
	f.BoolVar(&o.json, "json", false, "print one JSON document")
	f.BoolVar(&o.quiet, "quiet", false, "do not report progress on stderr")
	return cmd
}

func runStackMaterialize(_ context.Context, s Streams, o stackMaterializeOptions) error {
	if o.out == "" {
		return errors.New("--out DIR is required")
	}
	l, err := LoadStack(s, o.stack, o.input, o.deps, o.json)
	if err != nil {
		return err
	}
	opts, err := MaterializeOptions(s, l, o.deps, o.quiet || o.json)
	if err != nil {
		return err
	}
	if opts.Records, err = loadRecords(o.records); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(o.out)), 0o755); err != nil {
		return err
	}
	res, err := materialize.Materialize(l.Assembled.Manifest, resolverOf(l.Assembled.Dirs), o.out, opts)
	if err != nil {
		return err
	}
	if o.manifestOut != "" {
		if err := WriteManifest(o.manifestOut, l.Assembled.Manifest); err != nil {
			os.RemoveAll(o.out)
			return err
		}
	}
	if o.json {
		return WriteJSON(s.Out, TreeDoc(o.out, string(l.Assembled.File.Kind), res))
	}
	fmt.Fprintf(s.Out, "stack %s\ntree  %s\n%d files written to %s\n", res.StackDigest, res.TreeDigest, len(res.Files), o.out)
	return nil
}
