package verify

// checkSubstrate (CheckSubstrate) requires the substrate in the image to
// have the content hash the descriptor pins.
func (v *verification) checkSubstrate() error {
	sub := v.contents["substrate"]
	if sub.contentHash != v.d.SubstrateDigest {
		return failf(CheckSubstrate, "the substrate in the image has content hash %s, the descriptor says %s", sub.contentHash, v.d.SubstrateDigest)
	}
	v.rep.pass(CheckSubstrate, "%s (%d files)", sub.contentHash, len(sub.sbomFiles))
	return nil
}
