package verify

import "github.com/cacheon/engine/release/descriptor"

// checkEntrypoint (CheckEntrypoint) requires the entrypoint binary in the
// image to be the one the descriptor pins, by SHA-256 and size.
func (v *verification) checkEntrypoint() error {
	entry, d := v.contents["entrypoint"], v.d
	if entry.entrySHA256 != d.Entrypoint.SHA256 || entry.entrySize != d.Entrypoint.Size {
		return failf(CheckEntrypoint, "/%s is sha256:%s (%d bytes), the descriptor says sha256:%s (%d bytes)", descriptor.EntrypointPath, entry.entrySHA256, entry.entrySize, d.Entrypoint.SHA256, d.Entrypoint.Size)
	}
	v.rel.Entrypoint = entry.entryBytes
	v.rep.pass(CheckEntrypoint, "/%s sha256:%s", descriptor.EntrypointPath, entry.entrySHA256)
	return nil
}
