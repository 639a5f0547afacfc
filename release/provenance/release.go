package provenance

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/sbom"

	"github.com/cacheon/engine/internal/identity"
)

// Layer is one layer the build added, as the provenance records it.
type Layer struct {
	Role      string
	Digest    string
	DiffID    string
	MediaType string
}

// ReleaseInput is what a release's provenance statement is generated from.
type ReleaseInput struct {
	Descriptor       *descriptor.Descriptor
	DescriptorDigest string
	DescriptorSHA256 string
	ImageName        string
	ImageDigest      string
	SBOMSHA256       string
	Layers           []Layer
	Builder          map[string]string
}

// Resource names used in a release's provenance; the verifier looks them
// up.
const (
	DepReleaseManifest = "release-manifest"
	DepCatalog         = "catalog"
	DepSubstrate       = "substrate"
	DepModelReceipt    = "model-provision-receipt"
	DepBaseImage       = "base-image"
	DepEntrypoint      = "entrypoint"
	DepEntrypointSrc   = "entrypoint-source"
	DepRuntime         = "runtime"
	DepBaseEngine      = "base-engine"
	ByproductSBOM      = "sbom.spdx.json"
	ByproductRelease   = "release.json"
	SubjectEngineTree  = "engine-tree"
	contributionPrefix = "contribution/"
	reviewPrefix       = "integration-review/"
	layerPrefix        = "layer/"
)

// ContributionDep, ReviewDep and LayerByproduct name per-target
// dependencies and per-layer byproducts.
func ContributionDep(target string) string { return contributionPrefix + target }
func ReviewDep(target string) string       { return reviewPrefix + target }
func LayerByproduct(role string) string    { return layerPrefix + role }

// ForRelease is the release projection: a release's SLSA provenance from
// its descriptor and what the build wrote. It lives here, not in the
// builder, because the builder and the verifier both call it: the
// verifier regenerates the signed statement without importing the
// builder.
func ForRelease(in ReleaseInput) *Provenance {
	d := in.Descriptor
	hexOf := func(s string) string { return strings.TrimPrefix(s, "sha256:") }
	serve, _ := json.Marshal(d.Serve.Command)
	p := &Provenance{
		Subjects: []Resource{
			{Name: in.ImageName, Digest: map[string]string{"sha256": hexOf(in.ImageDigest)}},
			{Name: SubjectEngineTree, Digest: map[string]string{string(identity.DomainMaterializedEngineTree): d.EngineTreeDigest}},
		},
		BuildType: BuildType,
		ExternalParameters: map[string]string{
			"image_name":              in.ImageName,
			"platform":                d.BaseImage.Platform,
			"release_manifest_digest": d.ReleaseManifestDigest,
			"base_image":              d.BaseImage.Name + "@" + d.BaseImage.Digest,
			"source_date_epoch":       strconv.FormatInt(d.Toolchain.SourceDateEpoch, 10),
			"compression":             d.Toolchain.Compression,
			"compression_level":       strconv.Itoa(d.Toolchain.CompressionLevel),
			"serve_command":           string(serve),
			"model_mount":             d.Serve.ModelMount,
		},
		BuilderID:      BuilderID,
		BuilderVersion: in.Builder,
		InvocationID:   d.ReleaseManifestDigest,
		Epoch:          d.Toolchain.SourceDateEpoch,
	}
	p.Dependencies = append(p.Dependencies,
		Resource{Name: DepReleaseManifest, Digest: map[string]string{string(identity.DomainStackRelease): d.ReleaseManifestDigest}},
		Resource{Name: DepCatalog, Digest: map[string]string{string(identity.DomainTargetCatalog): d.CatalogDigest}},
		Resource{Name: DepRuntime, Digest: map[string]string{"cacheon.runtime": d.RuntimeDigest}},
		Resource{Name: DepBaseEngine, Digest: map[string]string{"cacheon.base-engine": d.BaseEngineDigest}},
		Resource{Name: DepSubstrate, Digest: map[string]string{"cacheon.bundle-content": d.SubstrateDigest}},
		Resource{Name: DepModelReceipt, MediaType: "application/json", Digest: map[string]string{
			"sha256": d.Model.ReceiptSHA256, string(identity.DomainModelProvisionReceipt): d.Model.ReceiptDigest, string(identity.DomainModelContent): d.Model.ContentDigest}},
		Resource{Name: DepBaseImage, URI: "oci:" + d.BaseImage.Name, Digest: map[string]string{"sha256": hexOf(d.BaseImage.Digest)}},
		Resource{Name: DepEntrypoint, Digest: map[string]string{"sha256": d.Entrypoint.SHA256}},
	)
	if src := d.Entrypoint.Source; src != nil {
		// The entrypoint's source: the repository at the commit it is
		// built from, and the recipe that builds it there.
		dep := Resource{
			Name: DepEntrypointSrc, URI: "git+" + src.Repository, Digest: map[string]string{"gitCommit": src.Commit},
			Annotations: map[string]string{"bazel_target": src.BazelTarget, "recipe": "bash tools/bootstrap.sh build && bazel build " + src.BazelTarget},
		}
		if src.Repository == descriptor.UnpublishedRepository {
			// No URI to fetch from: say so rather than write one that
			// is not a URI. The commit still pins what was built.
			dep.URI = ""
			dep.Annotations["repository"] = src.Repository
		}
		p.Dependencies = append(p.Dependencies, dep)
	}
	for _, c := range d.Integrations {
		p.Dependencies = append(p.Dependencies,
			Resource{Name: ContributionDep(c.TargetID), Digest: map[string]string{
				string(identity.DomainIntegratedSourceTree): c.IntegratedSourceTreeDigest, "gitCommit": c.ReviewCommit,
				string(identity.DomainIntegrated): c.IntegratedRefDigest}},
			Resource{Name: ReviewDep(c.TargetID), MediaType: "application/json", Digest: map[string]string{
				"sha256": c.RecordSHA256, string(identity.DomainIntegrationReview): c.IntegrationRecordDigest}},
		)
	}
	p.Byproducts = append(p.Byproducts,
		Resource{Name: ByproductSBOM, MediaType: sbom.MediaType, Digest: map[string]string{"sha256": in.SBOMSHA256}},
		Resource{Name: ByproductRelease, MediaType: "application/json", URI: "file:///" + descriptor.DescriptorPath,
			Digest: map[string]string{"sha256": in.DescriptorSHA256, descriptor.Domain: in.DescriptorDigest}},
	)
	for _, l := range in.Layers {
		p.Byproducts = append(p.Byproducts, Resource{Name: LayerByproduct(l.Role), MediaType: l.MediaType,
			Digest: map[string]string{"sha256": hexOf(l.Digest)}, Annotations: map[string]string{"diff_id": l.DiffID}})
	}
	return p
}
