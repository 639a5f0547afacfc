package verify

import (
	"fmt"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
)

// intakePayload runs intake's payload stage on the staged bytes: the same
// contribution.ComputeSelectedPayload that bundle inspect and stack
// materialize run, so the Python import closure with its dynamic-import
// ban, the CUDA include closure of the declared sources and the rebuild
// plan's reviewed patchers. The static scan is a tripwire that a test may
// turn off (SkipScanUnsafe); this is the bundle's admission, and verify
// runs no code that intake would refuse, whatever its scan says. A refusal
// is intake's *contribution.RejectedError (a rejection, exit 2), naming
// the file, the place and the rule, and no worker has started.
func intakePayload(snap *bundle.Snapshot, opts contribution.PayloadOptions) error {
	b, err := snap.Bundle()
	if err != nil {
		return err
	}
	if _, err := contribution.ComputeSelectedPayload(b, opts); err != nil {
		return fmt.Errorf("intake refuses the bundle: %w", &contribution.RejectedError{Stage: contribution.StagePayload, Err: err})
	}
	return nil
}
