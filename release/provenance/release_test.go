package provenance

import (
	"strings"
	"testing"

	"github.com/cacheon/engine/release/descriptor"
)

// The entrypoint-source dependency of a release's signed provenance:
// the URL the release records, as a git+ URI a consumer clones from, or,
// for a release built from an unpublished local checkout, no URI at all
// and an annotation saying so.
func TestForReleaseEntrypointSource(t *testing.T) {
	h := strings.Repeat("ab", 32)
	commit := strings.Repeat("c", 40)
	for _, tc := range []struct{ repo, wantURI, wantNote string }{
		{"https://github.com/cacheon/engine.git", "git+https://github.com/cacheon/engine.git", ""},
		{"git@github.com:cacheon/engine.git", "git+git@github.com:cacheon/engine.git", ""},
		{descriptor.UnpublishedRepository, "", descriptor.UnpublishedRepository},
	} {
		t.Run(tc.repo, func(t *testing.T) {
			d := &descriptor.Descriptor{
				ReleaseManifestDigest: h, EngineTreeDigest: h, CatalogDigest: h, RuntimeDigest: h, BaseEngineDigest: h, SubstrateDigest: h,
				Model:      descriptor.Model{ContentDigest: h, ReceiptDigest: h, ReceiptSHA256: h},
				BaseImage:  descriptor.BaseImage{Name: "scratch", Digest: "sha256:" + h, Platform: "linux/amd64"},
				Entrypoint: descriptor.Entrypoint{SHA256: h, Size: 1, Source: &descriptor.EntrypointSource{Repository: tc.repo, Commit: commit, BazelTarget: "//tools/cmd/cacheon"}},
				Toolchain:  descriptor.Toolchain{GoVersion: "go1.26.8", Compression: "gzip"},
			}
			st, err := ForRelease(ReleaseInput{Descriptor: d, DescriptorDigest: h, DescriptorSHA256: h, ImageName: "cacheon-engine:1.0",
				ImageDigest: "sha256:" + h, SBOMSHA256: h, Builder: map[string]string{"go": "go1.26.8"}}).Statement()
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse(st)
			if err != nil {
				t.Fatal(err)
			}
			dep, ok := Find(p.Dependencies, DepEntrypointSrc)
			if !ok {
				t.Fatalf("no %s dependency in %s", DepEntrypointSrc, st)
			}
			if dep.URI != tc.wantURI || dep.Digest["gitCommit"] != commit || dep.Annotations["repository"] != tc.wantNote {
				t.Fatalf("entrypoint source recorded as uri %q, digest %v, annotations %v; want uri %q, commit %s, repository note %q",
					dep.URI, dep.Digest, dep.Annotations, tc.wantURI, commit, tc.wantNote)
			}
		})
	}
}
