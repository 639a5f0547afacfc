// Package remote is the registry backend of the release store: a release
// in an OCI registry, read and written over HTTP. It is its own package,
// beside the OCI layout store, so that the offline path (verifying a
// release from a layout directory) links no HTTP client: only a command
// that names a registry imports this package.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	ggcr "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/release/store"
)

// Registry is a release in an OCI registry, named by a tag or digest
// reference. Reads go through plain HTTP GETs so that bytes that differ
// from their digest reach our own checks (with both digests) instead of a
// library error; writes use go-containerregistry, which falls back to the
// "sha256-<hex>" referrers tag on registries without the referrers API.
type Registry struct {
	ref     name.Reference
	ctx     context.Context
	auth    authn.Authenticator
	rt      http.RoundTripper
	options []ggcr.Option
}

var _ store.Store = (*Registry)(nil)

// Option configures a Registry.
type Option func(*Registry)

// WithAuth sets the credentials (anonymous by default: no keychain, so
// nothing on the host decides what is read or written).
func WithAuth(a authn.Authenticator) Option { return func(r *Registry) { r.auth = a } }

// WithTransport sets the HTTP transport.
func WithTransport(rt http.RoundTripper) Option { return func(r *Registry) { r.rt = rt } }

// WithContext sets the context of every request.
func WithContext(ctx context.Context) Option { return func(r *Registry) { r.ctx = ctx } }

// Open opens the release named by ref. Registries on loopback or
// private addresses are spoken to over plain HTTP (go-containerregistry's
// rule); insecure forces it for any host.
func Open(ref string, insecure bool, opts ...Option) (*Registry, error) {
	var nopts []name.Option
	if insecure {
		nopts = append(nopts, name.Insecure)
	}
	nopts = append(nopts, name.StrictValidation)
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return nil, fmt.Errorf("reference %q: %w (want registry/repository:tag or registry/repository@sha256:<hex>)", ref, err)
	}
	reg := &Registry{ref: r, ctx: context.Background(), auth: authn.Anonymous, rt: http.DefaultTransport}
	for _, o := range opts {
		o(reg)
	}
	reg.options = []ggcr.Option{ggcr.WithAuth(reg.auth), ggcr.WithTransport(reg.rt), ggcr.WithContext(reg.ctx)}
	return reg, nil
}

func (r *Registry) Location() string { return r.ref.String() }

// Reference returns the parsed reference.
func (r *Registry) Reference() name.Reference { return r.ref }

// RemoteOptions are the go-containerregistry options this store uses.
func (r *Registry) RemoteOptions() []ggcr.Option { return r.options }

func (r *Registry) Resolve() (v1.Descriptor, error) {
	d, err := ggcr.Head(r.ref, r.options...)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("resolve %s: %w", r.ref, err)
	}
	if !d.MediaType.IsImage() {
		return v1.Descriptor{}, fmt.Errorf("resolve %s: %s is a %s, want a single image manifest", r.ref, d.Digest, d.MediaType)
	}
	return *d, nil
}

func (r *Registry) get(path string, accept []types.MediaType) (io.ReadCloser, error) {
	repo := r.ref.Context()
	rt, err := transport.NewWithContext(r.ctx, repo.Registry, r.auth, r.rt, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: repo.Registry.Scheme(), Host: repo.RegistryStr(), Path: fmt.Sprintf("/v2/%s/%s", repo.RepositoryStr(), path)}
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, a := range accept {
		req.Header.Add("Accept", string(a))
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		// The descriptor came from this registry: a 404 is its contents
		// at fault (a rejection), not the network.
		resp.Body.Close()
		what, digest, _ := strings.Cut(path, "/")
		return nil, &store.MissingError{What: strings.TrimSuffix(what, "s"), Digest: digest, Location: r.ref.String(), Detail: "the registry answered 404"}
	}
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp.Body, nil
}

func (r *Registry) Manifest(d v1.Descriptor) ([]byte, error) {
	rc, err := r.get("manifests/"+d.Digest.String(), []types.MediaType{types.OCIManifestSchema1, types.OCIImageIndex, types.DockerManifestSchema2, types.DockerManifestList})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, store.MaxManifestSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > store.MaxManifestSize {
		return nil, fmt.Errorf("manifest %s: %w: larger than %d bytes", d.Digest, store.ErrTooLarge, store.MaxManifestSize)
	}
	return b, nil
}

func (r *Registry) Blob(d v1.Descriptor) (io.ReadCloser, error) {
	return r.get("blobs/"+d.Digest.String(), nil)
}

// Referrers uses the referrers API, or the tag fallback where the registry
// has no API. Server-side filtering is not trusted (registries disagree on
// artifactType), so everything is listed and store.Referrers
// filters after reading each manifest.
//
// Anyone who can push to the repository can write the fallback tag, so
// what the registry answers with is its contents: an answer that is not
// a referrers index (it does not parse, is of another media type, is over
// go-containerregistry's size limit) is a rejection (store.ErrMalformed),
// while an HTTP error status or a network failure stays an error of the
// run.
func (r *Registry) Referrers(subject v1.Hash) ([]v1.Descriptor, error) {
	idx, err := ggcr.Referrers(r.ref.Context().Digest(subject.String()), r.options...)
	if err != nil {
		return nil, contentsError(err, "list the referrers of "+subject.String())
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, contentsError(err, "parse the referrers index of "+subject.String())
	}
	return im.Manifests, nil
}

// contentsError marks err as a rejection of the registry's contents
// unless it is an HTTP status, a network failure or a cancellation.
func contentsError(err error, what string) error {
	var terr *transport.Error
	var uerr *url.Error
	var nerr net.Error
	if errors.As(err, &terr) || errors.As(err, &uerr) || errors.As(err, &nerr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w: %v", what, store.ErrMalformed, err)
}

type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// Attach uploads the artifact's blobs, then its manifest by digest; the
// registry (or go-containerregistry's fallback tag) records the referrer.
func (r *Registry) Attach(subject v1.Descriptor, a store.Artifact) (v1.Descriptor, error) {
	raw, desc, blob, err := a.Manifest(subject)
	if err != nil {
		return v1.Descriptor{}, err
	}
	repo := r.ref.Context()
	for _, b := range []struct {
		data []byte
		mt   types.MediaType
	}{{store.EmptyConfig(), types.OCIEmptyJSON}, {a.Data, blob.MediaType}} {
		if err := ggcr.WriteLayer(repo, static.NewLayer(b.data, b.mt), r.options...); err != nil {
			return v1.Descriptor{}, fmt.Errorf("upload %s blob to %s: %w", b.mt, repo, err)
		}
	}
	if err := ggcr.Put(repo.Digest(desc.Digest.String()), rawManifest{raw: raw, mt: types.OCIManifestSchema1}, r.options...); err != nil {
		return v1.Descriptor{}, fmt.Errorf("put %s manifest %s to %s: %w", a.ArtifactType, desc.Digest, repo, err)
	}
	return desc, nil
}

// Image opens the image with manifest digest h in a layout or registry
// store, its layers served (and, from a registry, checked against their
// digests as they are read) by go-containerregistry.
func Image(s store.Store, h v1.Hash) (v1.Image, error) {
	switch st := s.(type) {
	case *store.Layout:
		lp, err := layout.FromPath(st.Dir())
		if err != nil {
			return nil, err
		}
		return lp.Image(h)
	case *Registry:
		return ggcr.Image(st.Reference().Context().Digest(h.String()), st.RemoteOptions()...)
	}
	return nil, fmt.Errorf("unsupported store %T", s)
}
