// Package enginecli is the part of the cacheon command line that builds
// and serves an engine: the commands the Bazel rules run (catalog check
// and digest, model provision and make-test, bundle inspect, stack plan
// and materialize, release build) and the one the release image runs
// (release serve), with the plumbing every command shares: Streams, the
// exit-code contract (ExitCode), the one --json writer and the JSON
// refusal. Its root is the cacheon-engine binary, the rules' tool and the
// image's entrypoint; package cli builds the full command line on top of
// it, adding its other commands to the same groups, so a command present
// in both binaries is the same code and behaves the same.
//
// The split exists for what this package does not import: the ledger
// (and SQLite), signing and transparency logs (sigstore, rekor, gRPC) and
// registry access. They are most of the full binary's compile time, which
// every cold Bazel build of the rules and every rebuild of a release's
// entrypoint from source paid, and code the image never runs.
// tools/fences keeps them out.
//
// Each command lives in its own file (an options struct, newXCommand
// binding the flags to it, and runX(ctx, streams, opts)) and is a thin
// layer over a library package: parsing flags, calling the library and
// printing results. Exit codes follow upstream (0 success, 2 a rejected
// input or failed check, 1 a usage or I/O error) and are decided in one
// place, ExitCode; --json output goes through one writer, WriteJSON.
package enginecli

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

// NewRootCommand builds the engine's command tree. It is named cacheon,
// as the full command line is: the image installs it as
// /cacheon/bin/cacheon, and every help text and message of a command it
// shares with the full command line reads the same.
func NewRootCommand(s Streams) *cobra.Command {
	root := NewRoot(s, "Build and serve Cacheon inference engines",
		`This cacheon is the engine build of Cacheon Engine's command line: the
commands the Bazel rules run to check the catalog, inspect bundles, plan and
materialize stacks, seal models and build releases, and the release image's
entrypoint (release serve). The full command line (//tools/cmd/cacheon)
has these same commands and the rest: signing, verification, publishing,
channels, qualification and the ledger.

Exit codes: 0 success, 2 the input was rejected or a check failed,
1 a usage, I/O or infrastructure error (a missing file included). With
--json every command prints one JSON document, on a refusal too.`)
	root.AddCommand(
		NewModelCommand(s),
		NewCatalogCommand(s),
		NewBundleCommand(s),
		NewStackCommand(s),
		NewReleaseCommand(s),
		NewVersionCommand(s),
	)
	WithJSONRefusals(root, s)
	return root
}

// NewRoot is an empty cacheon root command with the settings both
// command lines share: errors and usage are printed by Execute, not by
// cobra, and there is no completion command.
func NewRoot(s Streams, short, long string) *cobra.Command {
	root := &cobra.Command{
		Use:           "cacheon",
		Short:         short,
		Long:          long,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}

// Main runs the engine command line with args and returns the process
// exit code.
func Main(args []string, s Streams) int { return Execute(NewRootCommand(s), args, s) }

// Execute runs root with args and returns the process exit code. The
// first Ctrl-C (or SIGTERM) cancels the context every command runs under,
// so a command that takes it (stack plan, verify, registry access) stops
// at its next check and cleans up; it also restores the default handling,
// so a second one ends the process at once, as it did before, for a step
// that does not check the context. Every write that matters is atomic
// (temp file or directory, then rename), so that is always safe.
func Execute(root *cobra.Command, args []string, s Streams) int {
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
	return ExecuteContext(ctx, root, args, s)
}

// ExecuteContext is Execute under a context the caller controls (tests
// cancel it).
func ExecuteContext(ctx context.Context, root *cobra.Command, args []string, s Streams) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && !isReported(err) {
		fmt.Fprintf(s.Err, "cacheon: %v\n", err)
	}
	return ExitCode(err)
}
