package review

import (
	"errors"
	"fmt"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/kernels/contribution"
)

// Inspector returns the InspectFunc that reads reviewed source exactly as
// intake and the materializer do: the contribution package's inspection
// against the catalog in force, with the validator's Python closure. It
// never imports or runs the source.
func Inspector(cat *catalog.Catalog, patcherDigests map[string]string) InspectFunc {
	return func(dir string) (*Inspection, error) {
		in, err := contribution.Inspect(dir, contribution.Options{
			Catalog: cat,
			Payload: contribution.PayloadOptions{Closure: contribution.PythonClosure, PatcherDigests: patcherDigests},
		})
		if err != nil {
			var rej *contribution.RejectedError
			if errors.As(err, &rej) {
				return nil, fmt.Errorf("%w: the reviewed source is refused at %s: %v", ErrSourceMismatch, rej.Stage, rej.Err)
			}
			return nil, err
		}
		if !in.Registered() {
			return nil, fmt.Errorf("%w: the reviewed source resolves to no registered target (%s)", ErrSourceMismatch, in.Target.Unregistered)
		}
		return &Inspection{TargetID: in.Target.TargetID, TargetSpecDigest: in.Target.TargetSpecDigest.String(), SelectedPayloadDigest: in.SelectedPayloadDigest.String()}, nil
	}
}

// IntegrationRecord returns r through the accessors the contribution and
// materialize packages read.
func (r *Record) IntegrationRecord() contribution.IntegrationRecord { return recordView{r} }
