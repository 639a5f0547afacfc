// Package cli implements the cacheon command line: the engine's commands
// (package enginecli, the commands the Bazel rules and the release image
// run, and the plumbing every command shares) and the rest of the
// pipeline, added to the same groups. Each command lives in its own file
// (an options struct, newXCommand binding the flags to it, and runX(ctx,
// streams, opts)) and is a thin layer over a library package: parsing
// flags, calling the library and printing results. Exit codes follow
// upstream (0 success, 2 a rejected input or failed check, 1 a usage or
// I/O error) and are decided in one place, enginecli.ExitCode; --json
// output goes through one writer, enginecli.WriteJSON.
package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/tools/cli/enginecli"
)

// Streams are the standard streams a command reads and writes; the
// engine's command line defines them, and this alias keeps its callers
// unchanged.
type Streams = enginecli.Streams

// NewRootCommand builds the cacheon command tree: the engine's commands
// (package enginecli) and the rest, in the same groups.
func NewRootCommand(s Streams) *cobra.Command {
	root := enginecli.NewRoot(s, "Build, qualify and release Cacheon inference engines",
		`cacheon is the command line of Cacheon Engine: it computes the identities of
contributions and stacks, checks the target catalog, scans and verifies
kernel bundles, materializes engines and builds, signs and verifies releases.

Exit codes: 0 success, 2 the input was rejected or a check failed,
1 a usage, I/O or infrastructure error (a missing file included). With
--json every command prints one JSON document, on a refusal too.`)
	model := enginecli.NewModelCommand(s)
	model.AddCommand(newModelCheckCommand(s))
	catalog := enginecli.NewCatalogCommand(s)
	catalog.AddCommand(newCatalogShowCommand(s), newCatalogSnapshotCommand(s))
	bundle := enginecli.NewBundleCommand(s)
	bundle.AddCommand(newBundleFingerprintCommand(s, enginecli.DefaultBundleDeps()), newBundleCompareCommand(s, enginecli.DefaultBundleDeps()))
	stack := enginecli.NewStackCommand(s)
	stack.AddCommand(newStackDigestCommand(s, enginecli.DefaultStackDeps()), newStackVerifyCommand(s), newStackExportCommand(s))
	root.AddCommand(
		newDigestCommand(s),
		newHashCommand(s),
		model,
		newVerifyCommand(s),
		catalog,
		newSlotsCommand(s),
		newScanCommand(s),
		bundle,
		stack,
		newReleaseCommand(s),
		newSpeedCommand(s),
		newQualifyCommand(s),
		newEvidenceCommand(s),
		newIntakeCommand(s),
		newLedgerCommand(s),
		newSettleCommand(s),
		newWeightsCommand(s),
		enginecli.NewVersionCommand(s),
	)
	enginecli.WithJSONRefusals(root, s)
	return root
}

// Main runs the command line with args and returns the process exit code;
// enginecli.Execute says how an interrupt stops it.
func Main(args []string, s Streams) int { return enginecli.Execute(NewRootCommand(s), args, s) }

// MainContext is Main under a context the caller controls (tests cancel it).
func MainContext(ctx context.Context, args []string, s Streams) int {
	return enginecli.ExecuteContext(ctx, NewRootCommand(s), args, s)
}
