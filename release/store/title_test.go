package store_test

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/release/store"
)

// A blob title is a file name a client writes: only plain names pass,
// and an artifact with any other is never encoded.
func TestCheckTitle(t *testing.T) {
	for _, c := range []struct {
		title string
		ok    bool
	}{
		{"sbom.spdx.json", true}, {"provenance.intoto.json", true}, {"a-b_c.1", true},
		{"", false}, {".", false}, {"..", false}, {"../sbom.json", false}, {"dir/sbom.json", false},
		{`dir\sbom.json`, false}, {"/etc/passwd", false}, {"c:sbom", false}, {"sbom json", false},
		{"sbom\x00.json", false}, {"sbom\n.json", false}, {"sböm.json", false}, {strings.Repeat("a", 256), false},
	} {
		if err := store.CheckTitle(c.title); (err == nil) != c.ok {
			t.Errorf("CheckTitle(%q) = %v, want ok %v", c.title, err, c.ok)
		}
		a := store.Artifact{ArtifactType: store.ArtifactSBOM, Data: []byte("{}"), Title: c.title}
		if _, _, _, err := a.Manifest(v1.Descriptor{Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}}); (err == nil) != c.ok && c.title != "" {
			t.Errorf("Manifest with title %q: %v, want ok %v", c.title, err, c.ok)
		}
	}
}
