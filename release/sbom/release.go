package sbom

import (
	"bytes"
	"crypto/sha1"
	"debug/buildinfo"
	"encoding/hex"

	"github.com/cacheon/engine/release/descriptor"
)

// Creator is the SPDX creator line of a release SBOM; it names the
// format, not the binary's version, so any build of the tool regenerates
// the same SBOM.
const Creator = "Tool: cacheon-release-v1"

// ForRelease is the release projection: the SBOM's typed input from a
// release descriptor and the files the image ships. It lives here, not in
// the builder, because the builder and the verifier both call it: the
// verifier regenerates exactly what was built without importing the
// builder.
func ForRelease(d *descriptor.Descriptor, descDigest, name, imageDigest string, engineFiles, substrateFiles []File, entrypoint []byte) Input {
	h1 := sha1.Sum(entrypoint)
	in := Input{
		ImageName: name, ImageDigest: imageDigest, BaseName: d.BaseImage.Name, BaseDigest: d.BaseImage.Digest,
		BaseDistro: d.BaseImage.Distro, BasePackages: d.BaseImage.Packages,
		EngineTree: d.EngineTreeDigest, EngineFiles: engineFiles,
		Substrate: d.SubstrateDigest, SubstrateFiles: substrateFiles,
		Entrypoint:   File{Path: descriptor.EntrypointPath, SHA1: hex.EncodeToString(h1[:]), SHA256: d.Entrypoint.SHA256},
		ModelContent: d.Model.ContentDigest, ModelReceipt: d.Model.ReceiptDigest,
		ReleaseDigest: descDigest, Epoch: d.Toolchain.SourceDateEpoch, Creator: Creator,
		EntrypointGo: GoBuildOf(entrypoint), EntrypointSource: d.Entrypoint.Source,
	}
	for _, c := range d.Integrations {
		in.Contributions = append(in.Contributions, Contribution{
			TargetID: c.TargetID, IntegratedSourceTreeDigest: c.IntegratedSourceTreeDigest,
			IntegratedRefDigest: c.IntegratedRefDigest, IntegrationRecordDigest: c.IntegrationRecordDigest,
			ReviewCommit: c.ReviewCommit, Reviewer: c.Reviewer,
		})
	}
	return in
}

// GoBuildOf reads the Go build information of a binary: nil for a file
// that is not a Go binary, or a Go binary without module information.
func GoBuildOf(binary []byte) *GoBuild {
	info, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		return nil
	}
	g := &GoBuild{GoVersion: info.GoVersion, MainModule: info.Main.Path}
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		g.Modules = append(g.Modules, GoModule{Path: m.Path, Version: m.Version, Sum: m.Sum})
	}
	if g.MainModule == "" && len(g.Modules) == 0 {
		// A Go binary linked without module information (every release
		// built before the entrypoint carried it): nothing is listed,
		// so those releases' SBOMs regenerate as they were signed.
		return nil
	}
	return g
}
