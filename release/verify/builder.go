package verify

import "github.com/cacheon/engine/release/provenance"

// checkBuilder (CheckBuilder) requires the project's builder and build
// type: sigstore verifies a signature, not who built what it signs.
// checkSignature runs it on every bundle whose signature verifies.
func checkBuilder(prov *provenance.Provenance) error {
	if prov.BuilderID != provenance.BuilderID {
		return failf(CheckBuilder, "builder.id %q, want %q", prov.BuilderID, provenance.BuilderID)
	}
	if prov.BuildType != provenance.BuildType {
		return failf(CheckBuilder, "buildType %q, want %q", prov.BuildType, provenance.BuildType)
	}
	return nil
}
