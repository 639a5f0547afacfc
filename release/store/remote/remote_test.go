package remote_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/layer"
	"github.com/cacheon/engine/release/registrytest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
)

func testImage(t *testing.T, scratch string) v1.Image {
	t.Helper()
	w, err := layer.Write(filepath.Join(scratch, "layer-"+strings.ReplaceAll(t.Name(), "/", "_")),
		[]layer.Entry{{Path: "cacheon/hello.txt", Data: []byte("hello\n")}}, layer.Options{Compression: layer.Gzip})
	if err != nil {
		t.Fatal(err)
	}
	p := image.Platform{OS: "linux", Architecture: "amd64"}
	base, _ := image.Scratch(p)
	img, err := image.Assemble(image.Spec{Base: base, Platform: p, Layers: []image.Added{{Layer: image.FileLayer{W: w}}}})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func pushImage(t *testing.T, reg *registrytest.Registry) (string, v1.Descriptor) {
	t.Helper()
	img := testImage(t, t.TempDir())
	ref := reg.Host + "/engine:test"
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggcr.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	raw, _ := img.RawManifest()
	return ref, v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: d, Size: int64(len(raw))}
}

func TestRegistryAttachUsesReferrersFallback(t *testing.T) {
	reg := registrytest.Start(t)
	ref, desc := pushImage(t, reg)
	s, err := remote.Open(ref, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Resolve()
	if err != nil || got.Digest != desc.Digest {
		t.Fatalf("Resolve = %v, %v", got.Digest, err)
	}
	want := []byte(`{"signed":true}`)
	if _, err := s.Attach(desc, store.Artifact{ArtifactType: store.ArtifactBundle, Data: want}); err != nil {
		t.Fatal(err)
	}
	refs, err := store.Referrers(s, desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].ArtifactType != store.ArtifactBundle || string(refs[0].Data) != string(want) {
		t.Fatalf("referrers = %+v", refs)
	}
	tags, err := ggcr.List(s.Reference().Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(tags, " "), "sha256-"+desc.Digest.Hex) {
		t.Errorf("tags %v: want the sha256-<hex> referrers fallback tag", tags)
	}
}

// A registry (or a proxy in front of it) that serves other bytes than the
// digest it is asked for is caught with both digests.
func TestRegistryServingDifferentBytesIsRejected(t *testing.T) {
	reg := registrytest.Start(t)
	_, desc := pushImage(t, reg)
	target, _ := url.Parse("http://" + reg.Host)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if strings.Contains(resp.Request.URL.Path, "/blobs/") && resp.Request.Method == http.MethodGet {
			resp.Body = io.NopCloser(strings.NewReader("forged bytes"))
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	s, err := remote.Open(strings.TrimPrefix(srv.URL, "http://")+"/engine:test", false)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := store.ReadManifest(s, desc)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := v1.ParseManifest(strings.NewReader(string(raw)))
	err = store.CheckBlob(s, m.Config, io.Discard)
	var mismatch *store.DigestMismatchError
	if !errors.As(err, &mismatch) || !strings.Contains(err.Error(), "do not match the descriptor") {
		t.Fatalf("err = %v, want a digest mismatch", err)
	}
}

// A manifest or blob the registry does not hold (404) is a rejection of
// the registry's contents (store.ErrMissing), not an I/O error: the
// descriptor naming it came from the same registry.
func TestRegistryMissingIsARejection(t *testing.T) {
	reg := registrytest.Start(t)
	ref, _ := pushImage(t, reg)
	s, err := remote.Open(ref, false)
	if err != nil {
		t.Fatal(err)
	}
	absent := v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}, Size: 10}
	_, merr := s.Manifest(absent)
	_, berr := s.Blob(absent)
	for what, err := range map[string]error{"manifest": merr, "blob": berr} {
		var me *store.MissingError
		if !errors.As(err, &me) || !errors.Is(err, store.ErrMissing) || !store.IsRejection(err) || me.What != what {
			t.Errorf("%s: err = %v, want a store.MissingError of a %s", what, err, what)
		}
	}
}
