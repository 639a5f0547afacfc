// Package cli implements the cacheon command line. Each command lives in
// its own file (an options struct, newXCommand binding the flags to it, and
// runX(ctx, streams, opts)) and is a thin layer over a library package:
// parsing flags, calling the library and printing results. Exit codes
// follow upstream (0 success, 2 a rejected input or failed check, 1 a
// usage or I/O error) and are decided in one place, ExitCode; --json
// output goes through one writer, writeJSON.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Streams are the standard streams a command reads and writes, passed in
// so tests can run commands in-process.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// NewRootCommand builds the cacheon command tree.
func NewRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "cacheon",
		Short: "Build, qualify and release Cacheon inference engines",
		Long: `cacheon is the command line of Cacheon Engine: it computes the identities of
contributions and stacks, checks the target catalog, scans and verifies
kernel bundles, materializes engines and builds, signs and verifies releases.

Exit codes: 0 success, 2 the input was rejected or a check failed,
1 a usage, I/O or infrastructure error (a missing file included). With
--json every command prints one JSON document, on a refusal too.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		newDigestCommand(s),
		newHashCommand(s),
		newModelCommand(s),
		newVerifyCommand(s),
		newCatalogCommand(s),
		newSlotsCommand(s),
		newScanCommand(s),
		newBundleCommand(s),
		newStackCommand(s),
		newReleaseCommand(s),
		newSpeedCommand(s),
		newQualifyCommand(s),
		newEvidenceCommand(s),
		newIntakeCommand(s),
		newLedgerCommand(s),
		newSettleCommand(s),
		newWeightsCommand(s),
		newVersionCommand(s),
	)
	withJSONRefusals(root, s)
	return root
}

// Main runs the command line with args and returns the process exit code.
// The first Ctrl-C (or SIGTERM) cancels the context every command runs
// under, so a command that takes it (stack plan, verify, registry access)
// stops at its next check and cleans up; it also restores the default
// handling, so a second one ends the process at once, as it did before,
// for a step that does not check the context. Every write that matters is
// atomic (temp file or directory, then rename), so that is always safe.
func Main(args []string, s Streams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			stop()
			fmt.Fprintln(s.Err, "cacheon: interrupted: stopping at the next safe point (interrupt again to quit now)")
		case <-done:
		}
	}()
	return MainContext(ctx, args, s)
}

// MainContext is Main under a context the caller controls (tests cancel it).
func MainContext(ctx context.Context, args []string, s Streams) int {
	root := NewRootCommand(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && !isReported(err) {
		fmt.Fprintf(s.Err, "cacheon: %v\n", err)
	}
	return ExitCode(err)
}
