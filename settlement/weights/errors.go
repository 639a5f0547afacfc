package weights

import (
	"fmt"

	"github.com/cacheon/engine/internal/reject"
)

// The named reasons a projection is refused for. Each matches the
// rejection root (reject.ErrRejected), so the command line exits 2 on any
// of them, and callers tell them apart with errors.Is.
var (
	// ErrPolicy: the emissions policy has a field out of range, a missing
	// or unknown field, or an unsupported schema or policy version.
	ErrPolicy = reject.New("invalid emissions policy")
	// ErrClaim: a standing or discovery claim, the metagraph or the arena
	// list does not parse or breaks a field rule.
	ErrClaim = reject.New("invalid claim input")
	// ErrCrownNewerThanBlock: a standing claim was crowned after the
	// block the projection is for, so its age would be negative.
	ErrCrownNewerThanBlock = reject.New("crown is newer than the projection block")
	// ErrDiscoveryNewerThanBlock: a discovery claim was awarded after the
	// projection block.
	ErrDiscoveryNewerThanBlock = reject.New("discovery claim is newer than the projection block")
	// ErrNoActiveCrown: an arena has no active crown (or there is no
	// standing claim at all), so it has nothing to reward.
	ErrNoActiveCrown = reject.New("arena has no active crown")
	// ErrDuplicateClaim: more than one standing claim for one (arena,
	// target).
	ErrDuplicateClaim = reject.New("more than one standing claim for one target")
	// ErrMissingClaim: an active target of a registered arena has no
	// standing claim.
	ErrMissingClaim = reject.New("active target has no standing claim")
	// ErrStaleClaim: a standing claim does not match its arena's active
	// entry (another target spec or contribution), or names an arena or
	// target that is not active.
	ErrStaleClaim = reject.New("standing claim is stale or mismatched")
	// ErrCreditDecayed: every standing claim's credit is zero at the
	// projection block, so there is nothing to normalize.
	ErrCreditDecayed = reject.New("all standing credit has decayed to zero")
	// ErrDiscoveryDisabled: live discovery claims exist while the
	// policy's discovery pool is zero.
	ErrDiscoveryDisabled = reject.New("live discovery claims while the discovery pool is disabled")
	// ErrDuplicateDiscovery: two discovery claims share a proposal, a
	// retained evidence digest or a claim digest (a renewed bounty).
	ErrDuplicateDiscovery = reject.New("discovery claim is renewed or duplicated")
	// ErrValidatorAbsent: the validator hotkey, which receives the credit
	// of departed hotkeys, is not in the metagraph.
	ErrValidatorAbsent = reject.New("validator hotkey is absent from the metagraph")
)

// FieldError names the input field a parse or validation refused, and
// why. Where is a JSON path from the document root ("standing[2].hotkey",
// "half_life_blocks"); Class is ErrPolicy or ErrClaim.
type FieldError struct {
	Class  error
	Where  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%v: %s: %s", e.Class, e.Where, e.Reason) }
func (e *FieldError) Unwrap() error { return e.Class }
