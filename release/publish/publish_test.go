package publish_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/registrytest"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
)

func signedLayout(t *testing.T) (*fixture.Release, *store.Layout) {
	t.Helper()
	r := fixture.New(t)
	dir, _ := r.Build(t)
	l, err := store.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	return r, l
}

func tags(t *testing.T, host string) []string {
	t.Helper()
	repo, _ := name.NewRepository(host + "/engine")
	ts, err := ggcr.List(repo)
	if err != nil {
		var terr interface{ Error() string }
		if errors.As(err, &terr) && strings.Contains(err.Error(), "NAME_UNKNOWN") {
			return nil
		}
		t.Fatalf("list tags: %v", err)
	}
	return ts
}

// Publishing to a real registry, then verifying from the registry alone.
func TestPublishThenVerifyFromRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	r, l := signedLayout(t)
	target, err := remote.Open(reg.Host+"/engine:1.0", false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := publish.Layout(l, target, nil)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	if len(res.Artifacts) != 4 {
		t.Errorf("published artifacts %v, want SBOM, provenance and their two bundles", res.Artifacts)
	}
	ts := tags(t, reg.Host)
	joined := strings.Join(ts, " ")
	if !strings.Contains(joined, "1.0") || !strings.Contains(joined, "sha256-"+strings.TrimPrefix(res.ImageDigest, "sha256:")) {
		t.Errorf("tags %v: want 1.0 and the referrers fallback tag", ts)
	}
	src, err := remote.Open(reg.Host+"/engine:1.0", false)
	if err != nil {
		t.Fatal(err)
	}
	policy, _ := key.LoadPolicy(r.PublicKey)
	rel, err := verify.Run(src, verify.Options{Policy: policy})
	if err != nil {
		t.Fatalf("verify from the registry: %v", err)
	}
	if rel.Report.ImageDigest != res.ImageDigest {
		t.Errorf("verified %s, published %s", rel.Report.ImageDigest, res.ImageDigest)
	}
	// Publishing the same release again changes nothing.
	if _, err := publish.Layout(l, target, nil); err != nil {
		t.Fatalf("republish: %v", err)
	}
}

// A layout with a swapped layer is refused before any request is made.
func TestPublishRefusesACorruptLayoutBeforeSendingAnything(t *testing.T) {
	reg := registrytest.Start(t)
	_, l := signedLayout(t)
	desc, _ := l.Resolve()
	raw, _ := store.ReadManifest(l, desc)
	m, _ := v1.ParseManifest(strings.NewReader(string(raw)))
	os.WriteFile(filepath.Join(l.Dir(), "blobs", "sha256", m.Layers[len(m.Layers)-1].Digest.Hex), []byte("swapped"), 0o644)
	var requests atomic.Int64
	srv := proxy(t, reg.Host, func(r *http.Request) bool { requests.Add(1); return false })
	target, _ := remote.Open(srv+"/engine:1.0", false)
	_, err := publish.Layout(l, target, nil)
	var mm *store.DigestMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("err = %v, want a digest mismatch", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the registry", n)
	}
}

// A FIFO in place of a blob blocked the layout check forever.
func TestPublishRefusesAFIFOWithoutBlocking(t *testing.T) {
	_, l := signedLayout(t)
	desc, _ := l.Resolve()
	raw, _ := store.ReadManifest(l, desc)
	m, _ := v1.ParseManifest(strings.NewReader(string(raw)))
	p := filepath.Join(l.Dir(), "blobs", "sha256", m.Layers[len(m.Layers)-1].Digest.Hex)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, _, _, err := publish.Check(l); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrNotRegular) || !store.IsRejection(err) {
			t.Fatalf("err = %v, want ErrNotRegular", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("publish.Check blocked on a FIFO and never returned")
	}
}

func TestPublishRefusesAnUnsignedLayout(t *testing.T) {
	reg := registrytest.Start(t)
	r := fixture.New(t)
	dir, _ := r.Build(t)
	l, _ := store.OpenLayout(dir)
	target, _ := remote.Open(reg.Host+"/engine:1.0", false)
	_, err := publish.Layout(l, target, nil)
	if !errors.Is(err, publish.ErrIncomplete) || !strings.Contains(err.Error(), "sign it first") {
		t.Fatalf("err = %v", err)
	}
	if ts := tags(t, reg.Host); len(ts) != 0 {
		t.Errorf("tags after a refused publication: %v", ts)
	}
}

// A registry that fails while the signature bundle is being pushed leaves
// no release tag behind.
func TestPublishInterruptedLeavesNoTag(t *testing.T) {
	reg := registrytest.Start(t)
	_, l := signedLayout(t)
	var bundleBlob string
	refs, _ := store.Referrers(l, mustResolve(t, l).Digest)
	for _, r := range refs {
		if r.ArtifactType == store.ArtifactBundle {
			bundleBlob = r.Descriptor.Digest.String()
		}
	}
	srv := proxy(t, reg.Host, func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/"+bundleBlob)
	})
	target, _ := remote.Open(srv+"/engine:1.0", false)
	if _, err := publish.Layout(l, target, nil); err == nil {
		t.Fatal("publish succeeded through a failing registry")
	}
	for _, tag := range tags(t, reg.Host) {
		if tag == "1.0" {
			t.Fatalf("the release tag was written although the bundle was not published")
		}
	}
}

func mustResolve(t *testing.T, l *store.Layout) v1.Descriptor {
	d, err := l.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// proxy forwards to the registry at host and answers 500 to requests
// fail accepts. It returns the proxy's host:port.
func proxy(t *testing.T, host string, fail func(*http.Request) bool) string {
	t.Helper()
	u, _ := url.Parse("http://" + host)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail(r) {
			http.Error(w, `{"errors":[{"code":"UNKNOWN","message":"injected failure"}]}`, http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Signing works on a registry reference too: a second key's bundle is
// attached next to the first, and either key verifies the release.
func TestSignInTheRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	r, l := signedLayout(t)
	target, _ := remote.Open(reg.Host+"/engine:1.0", false)
	if _, err := publish.Layout(l, target, nil); err != nil {
		t.Fatal(err)
	}
	second, _, pub := fixture.Keys(t, t.TempDir(), "second", key.ECDSAP256)
	src, _ := remote.Open(reg.Host+"/engine:1.0", false)
	if _, err := sign.Release(src, second); err != nil {
		t.Fatalf("sign in the registry: %v", err)
	}
	for _, p := range []string{r.PublicKey, pub} {
		policy, _ := key.LoadPolicy(p)
		if _, err := verify.Run(src, verify.Options{Policy: policy}); err != nil {
			t.Errorf("verify with %s: %v", filepath.Base(p), err)
		}
	}
}

// A registry that serves a layer's blob with other bytes than its
// descriptor is caught by verification, naming the blob and both digests.
func TestVerifyRejectsARegistryServingOtherBytes(t *testing.T) {
	reg := registrytest.Start(t)
	r, l := signedLayout(t)
	target, _ := remote.Open(reg.Host+"/engine:1.0", false)
	res, err := publish.Layout(l, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	desc := mustResolve(t, l)
	raw, _ := store.ReadManifest(l, desc)
	m, _ := v1.ParseManifest(strings.NewReader(string(raw)))
	victim := m.Layers[len(m.Layers)-2].Digest.String() // the engine tree
	u, _ := url.Parse("http://" + reg.Host)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodGet && strings.HasSuffix(resp.Request.URL.Path, "/blobs/"+victim) {
			resp.Body = io.NopCloser(strings.NewReader("not the engine tree"))
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
		}
		return nil
	}
	srv := httptest.NewServer(rp)
	defer srv.Close()
	src, _ := remote.Open(strings.TrimPrefix(srv.URL, "http://")+"/engine:1.0", false)
	policy, _ := key.LoadPolicy(r.PublicKey)
	_, err = verify.Run(src, verify.Options{Policy: policy})
	var f *verify.Failure
	if !errors.As(err, &f) || f.Check != verify.CheckBlobs || !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "do not match the descriptor") {
		t.Fatalf("err = %v, want an image-blobs failure naming %s", err, victim)
	}
	_ = res
}

// A layout signed without the SBOM attestation (by a tool from before it)
// would not verify: it is refused before anything is sent.
func TestPublishRefusesALayoutWithoutTheSBOMAttestation(t *testing.T) {
	_, l := signedLayout(t)
	att := fixture.SBOMAttestation(t, l.Dir())
	im := fixture.ReadIndex(t, l.Dir())
	var keep []v1.Descriptor
	for _, d := range im.Manifests {
		if d.Digest != att.Descriptor.Digest {
			keep = append(keep, d)
		}
	}
	im.Manifests = keep
	fixture.WriteIndex(t, l.Dir(), im)
	_, _, _, err := publish.Check(l)
	if !errors.Is(err, publish.ErrIncomplete) || !strings.Contains(err.Error(), "no signed SBOM attestation") || !strings.Contains(err.Error(), "sign it again") {
		t.Fatalf("err = %v, want ErrIncomplete naming the SBOM attestation", err)
	}
}
