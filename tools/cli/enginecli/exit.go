package enginecli

import (
	"errors"
	"io/fs"

	"github.com/cacheon/engine/internal/reject"
)

// Exit codes shared by every command. ExitCode alone decides which one a
// command ends with.
const (
	ExitOK       = 0
	ExitError    = 1 // usage, I/O or infrastructure error; a missing file
	ExitRejected = 2 // the input was read and rejected, or a check failed
	// ExitNoDecision is qualify's: infrastructure trouble kept the
	// measurement from deciding (never a loss).
	ExitNoDecision = 3
)

// decided carries the exit code of a command whose outcome is a verdict
// with codes of its own (qualify: 2 FAIL, 3 NO_DECISION).
type decided struct {
	code int
	err  error
}

func (d *decided) Error() string { return d.err.Error() }
func (d *decided) Unwrap() error { return d.err }

// ExitWith ends the command with code, explained by err.
func ExitWith(code int, err error) error { return &decided{code, err} }

// ExitCode maps the error a command returned to its exit code. It is the
// one place the contract is decided, over one root: every package's
// rejection classes match reject.ErrRejected, and anything else (an I/O,
// network or usage error, a cancellation) is an error of the run, not a
// verdict on the input. A file that is not there was never read, so it
// is exit 1 even when a library counts its absence as a rejection (a
// bundle without manifest.toml, say).
func ExitCode(err error) int {
	var d *decided
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &d):
		return d.code
	case errors.Is(err, fs.ErrNotExist):
		return ExitError
	case reject.Is(err):
		return ExitRejected
	default:
		return ExitError
	}
}

// reported is an error whose result the command already wrote (a JSON
// refusal document, a scan's violations): Execute maps it to its exit code
// but prints nothing more.
type reported struct{ err error }

func (r *reported) Error() string { return r.err.Error() }
func (r *reported) Unwrap() error { return r.err }

// AlreadyReported marks err as written out by the command itself.
func AlreadyReported(err error) error {
	if err == nil {
		return nil
	}
	return &reported{err}
}

func isReported(err error) bool {
	var r *reported
	return errors.As(err, &r)
}
