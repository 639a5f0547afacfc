package verify

import "github.com/cacheon/engine/release/provenance"

// checkPredicate (CheckPredicate) parses the signed statement as the
// release's SLSA provenance.
func (v *verification) checkPredicate() error {
	prov, err := provenance.Parse(v.signed.Statement)
	if err != nil {
		return fail(CheckPredicate, err)
	}
	v.prov, v.rel.Provenance = prov, prov
	v.rep.pass(CheckPredicate, "%s", provenance.PredicateType)
	return nil
}
