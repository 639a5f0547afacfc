// Package cli implements the cacheon command line. Each command group lives
// in its own file and is a thin layer over a library package: parsing flags,
// calling the library and printing results. Exit codes follow upstream:
// 0 success, 2 a rejected input or failed check, 1 a usage or I/O error.
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command.
const (
	ExitOK       = 0
	ExitError    = 1 // usage, I/O or infrastructure error
	ExitRejected = 2 // the input was read and rejected, or a check failed
)

// Streams are the standard streams a command reads and writes, passed in
// so tests can run commands in-process.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// rejectedError marks an error as a rejection of the input (exit 2) rather
// than a usage or I/O failure (exit 1).
type rejectedError struct{ err error }

func (e *rejectedError) Error() string { return e.err.Error() }
func (e *rejectedError) Unwrap() error { return e.err }

// Rejected wraps err so the command exits with ExitRejected.
func Rejected(err error) error {
	if err == nil {
		return nil
	}
	return &rejectedError{err}
}

// silentExit carries an exit code for a command that already printed its
// result (a scan listing its violations, say) and has nothing to add.
type silentExit struct{ code int }

func (e *silentExit) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// ExitWith ends a command with code without printing an error message.
func ExitWith(code int) error { return &silentExit{code} }

// NewRootCommand builds the cacheon command tree.
func NewRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "cacheon",
		Short: "Build, qualify and release Cacheon inference engines",
		Long: `cacheon is the command line of Cacheon Engine: it computes the identities of
contributions and stacks, checks the target catalog, scans and verifies
kernel bundles, materializes engines and builds, signs and verifies releases.

Exit codes: 0 success, 2 the input was rejected or a check failed,
1 a usage, I/O or infrastructure error.`,
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
	)
	return root
}

// Main runs the command line with args and returns the process exit code.
func Main(args []string, s Streams) int {
	root := NewRootCommand(s)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var silent *silentExit
	if errors.As(err, &silent) {
		return silent.code
	}
	fmt.Fprintf(s.Err, "cacheon: %v\n", err)
	var rejected *rejectedError
	if errors.As(err, &rejected) {
		return ExitRejected
	}
	return ExitError
}
