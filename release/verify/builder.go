package verify

import "github.com/cacheon/engine/release/provenance"

// checkBuilder (CheckBuilder) requires the project's builder and build
// type: sigstore verifies a signature, not who built what it signs.
func (v *verification) checkBuilder() error {
	prov := v.prov
	if prov.BuilderID != provenance.BuilderID {
		return failf(CheckBuilder, "builder.id %q, want %q", prov.BuilderID, provenance.BuilderID)
	}
	if prov.BuildType != provenance.BuildType {
		return failf(CheckBuilder, "buildType %q, want %q", prov.BuildType, provenance.BuildType)
	}
	v.rep.pass(CheckBuilder, "builder %s, build type %s, go %s", prov.BuilderID, prov.BuildType, prov.BuilderVersion["go"])
	v.rep.GoVersion = prov.BuilderVersion["go"]
	return nil
}
