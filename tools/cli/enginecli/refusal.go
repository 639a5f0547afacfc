package enginecli

import (
	"errors"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/hclload"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/stacks/stack"
)

// diagnosedError is a rejection of an HCL file, carrying the diagnostics
// so that --json can give them with their ranges.
type diagnosedError struct {
	msg   string
	diags hcl.Diagnostics
}

func (e *diagnosedError) Error() string { return e.msg }

// Is makes the diagnosed file a rejection.
func (e *diagnosedError) Is(target error) bool { return target == reject.ErrRejected }

// refusalJSON is the one --json document a command writes when it refuses
// its input and has no document of its own for the refusal.
type refusalJSON struct {
	FormatVersion int                  `json:"format_version"`
	OK            bool                 `json:"ok"`
	Error         string               `json:"error"`
	Diagnostics   []hclload.Diagnostic `json:"diagnostics"`
}

// refusalDiagnostics returns the HCL diagnostics a refusal carries: those
// of a file that does not parse or validate, or a stack's assembly
// problems.
func refusalDiagnostics(err error) hcl.Diagnostics {
	var de *diagnosedError
	if errors.As(err, &de) {
		return de.diags
	}
	var ae *stack.AssemblyError
	if errors.As(err, &ae) {
		return ae.Diagnostics()
	}
	var diags hcl.Diagnostics
	if errors.As(err, &diags) {
		return diags
	}
	return nil
}

// WithJSONRefusals makes every command with a --json flag write one JSON
// document on a refusal too: when a command run with --json returns a
// rejection it has not already written out, the refusal document goes to
// stdout. The message still goes to stderr, as without --json. It is
// applied once, to the whole tree, so no command can forget it.
func WithJSONRefusals(c *cobra.Command, s Streams) {
	for _, sub := range c.Commands() {
		WithJSONRefusals(sub, s)
	}
	if c.RunE == nil || c.Flags().Lookup("json") == nil {
		return
	}
	runE := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		err := runE(cmd, args)
		if err == nil || isReported(err) || ExitCode(err) != ExitRejected {
			return err
		}
		if on, ferr := cmd.Flags().GetBool("json"); ferr != nil || !on {
			return err
		}
		doc := refusalJSON{FormatVersion: jsonFormatVersion, Error: err.Error(), Diagnostics: hclload.JSON(refusalDiagnostics(err))}
		if werr := WriteJSON(s.Out, doc); werr != nil {
			return werr
		}
		return err
	}
}
