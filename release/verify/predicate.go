package verify

import "github.com/cacheon/engine/release/provenance"

// parsePredicate (CheckPredicate) parses a signed statement as the
// release's SLSA provenance. checkSignature runs it on every bundle whose
// signature verifies.
func parsePredicate(statement []byte) (*provenance.Provenance, error) {
	prov, err := provenance.Parse(statement)
	if err != nil {
		return nil, fail(CheckPredicate, err)
	}
	return prov, nil
}
