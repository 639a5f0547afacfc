// Package image assembles release images with OCI media types from a
// pinned base image and deterministic layers.
//
// Only the inputs decide the bytes: the base is pinned by manifest digest,
// layers come from release/layer, and every date in the config, history
// and manifest is the source date epoch. The image is assembled from an
// empty OCI image rather than mutated from the base, because
// go-containerregistry's mutate.Time and mutate.Canonical silently switch
// to Docker media types; a Docker-typed base is re-described with the OCI
// media types of the same blob bytes.
package image

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/release/layer"
)

// Standard OCI annotation keys written on release manifests.
const (
	AnnotationCreated    = "org.opencontainers.image.created"
	AnnotationBaseDigest = "org.opencontainers.image.base.digest"
	AnnotationBaseName   = "org.opencontainers.image.base.name"
	AnnotationRefName    = "org.opencontainers.image.ref.name"
)

// Platform is an OCI platform such as linux/amd64.
type Platform struct {
	OS           string
	Architecture string
	Variant      string
}

// ParsePlatform parses "os/arch" or "os/arch/variant".
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return Platform{}, fmt.Errorf("platform %q: want os/arch or os/arch/variant", s)
	}
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, " \t") {
			return Platform{}, fmt.Errorf("platform %q: empty or blank component", s)
		}
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ociEmpty is an image with no layers and OCI manifest and config types.
func ociEmpty() v1.Image {
	return mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
}

// Scratch returns the project's own minimal base: no layers, an OCI config
// naming only the platform. Its digest depends on nothing but the platform,
// so tests and offline builds pin it like any other base.
func Scratch(p Platform) (v1.Image, error) {
	img := ociEmpty()
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = p.OS
	cfg.Architecture = p.Architecture
	cfg.Variant = p.Variant
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.RootFS = v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{}}
	return mutate.ConfigFile(img, cfg)
}

// WriteScratchLayout writes the scratch base for p as a new OCI image
// layout at dir and returns its manifest digest, the pin a build uses.
func WriteScratchLayout(dir string, p Platform) (v1.Hash, error) {
	img, err := Scratch(p)
	if err != nil {
		return v1.Hash{}, err
	}
	return WriteLayout(dir, img, "cacheon-scratch:"+strings.ReplaceAll(p.String(), "/", "-"))
}

// WriteLayout writes img as a new OCI image layout at dir (which must not
// exist), listed in index.json under refName, and returns its manifest
// digest.
func WriteLayout(dir string, img v1.Image, refName string) (v1.Hash, error) {
	if _, err := os.Lstat(dir); err == nil {
		return v1.Hash{}, fmt.Errorf("base layout %s already exists", dir)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return v1.Hash{}, fmt.Errorf("create base layout: %w", err)
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("write base layout %s: %w", dir, err)
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{AnnotationRefName: refName})); err != nil {
		return v1.Hash{}, fmt.Errorf("write base layout %s: %w", dir, err)
	}
	return img.Digest()
}

// LoadBase opens the image with manifest digest pin in the OCI image
// layout at dir (listed in its index.json) and checks that its bytes hash
// to the pin and that it is a single-platform image for p.
func LoadBase(dir string, pin v1.Hash, p Platform) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("open base layout %s: %w", dir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("read base layout %s index.json: %w", dir, err)
	}
	var found *v1.Descriptor
	for i := range im.Manifests {
		if im.Manifests[i].Digest == pin {
			found = &im.Manifests[i]
		}
	}
	if found == nil {
		return nil, fmt.Errorf("base layout %s: no manifest %s in index.json (a multi-platform index must be resolved to one platform's manifest digest)", dir, pin)
	}
	if !found.MediaType.IsImage() {
		return nil, fmt.Errorf("base layout %s: %s has media type %s, want an image manifest", dir, pin, found.MediaType)
	}
	img, err := idx.Image(pin)
	if err != nil {
		return nil, fmt.Errorf("base layout %s: open %s: %w", dir, pin, err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("base layout %s: read manifest %s: %w", dir, pin, err)
	}
	if got, _, err := v1.SHA256(strings.NewReader(string(raw))); err != nil || got != pin {
		return nil, fmt.Errorf("base layout %s: manifest bytes hash to %s, want the pinned %s", dir, got, pin)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("base layout %s: read config of %s: %w", dir, pin, err)
	}
	if cfg.OS != p.OS || cfg.Architecture != p.Architecture || cfg.Variant != p.Variant {
		got := Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
		return nil, fmt.Errorf("base layout %s: image %s is for %s, want %s", dir, pin, got, p)
	}
	return img, nil
}

// ociLayerType maps a base layer's media type to the OCI type of the same
// bytes. Foreign and non-distributable layers cannot be shipped offline.
func ociLayerType(mt types.MediaType) (types.MediaType, error) {
	switch mt {
	case types.OCILayer, types.DockerLayer:
		return types.OCILayer, nil
	case types.OCILayerZStd:
		return types.OCILayerZStd, nil
	case types.OCIUncompressedLayer, types.DockerUncompressedLayer:
		return types.OCIUncompressedLayer, nil
	}
	return "", fmt.Errorf("base layer media type %s is not supported (want an OCI or Docker tar layer)", mt)
}

// Added is one layer this project adds to the base.
type Added struct {
	Layer     v1.Layer
	CreatedBy string // history line, e.g. "cacheon release build: engine tree"
}

// Config is the part of the image config a release sets.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string // appended after the base's environment
	WorkingDir string
	User       string
	Labels     map[string]string
}

// Spec is everything that decides a release image.
type Spec struct {
	Base       v1.Image
	BaseName   string // a human name for the base, recorded in annotations
	Platform   Platform
	Layers     []Added
	Config     Config
	Epoch      int64
	Annotation map[string]string // extra manifest annotations
	// BaseDiffIDs, when set, are the base layers' uncompressed digests as
	// the caller measured them (base.ReadInstalled does), so Assemble
	// does not decompress every base layer again to learn them; nil
	// computes them from the layers.
	BaseDiffIDs []v1.Hash
}

// measuredLayer is a base layer whose diff ID the caller measured.
type measuredLayer struct {
	v1.Layer
	diffID v1.Hash
}

func (l measuredLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }

// Assemble builds the image described by spec.
func Assemble(spec Spec) (v1.Image, error) {
	if spec.Base == nil {
		return nil, errors.New("assemble image: no base image")
	}
	created := v1.Time{Time: time.Unix(spec.Epoch, 0).UTC()}
	baseDigest, err := spec.Base.Digest()
	if err != nil {
		return nil, fmt.Errorf("base digest: %w", err)
	}
	baseCfg, err := spec.Base.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("base config: %w", err)
	}
	baseManifest, err := spec.Base.Manifest()
	if err != nil {
		return nil, fmt.Errorf("base manifest: %w", err)
	}
	baseLayers, err := spec.Base.Layers()
	if err != nil {
		return nil, fmt.Errorf("base layers: %w", err)
	}
	if spec.BaseDiffIDs != nil && len(spec.BaseDiffIDs) != len(baseLayers) {
		return nil, fmt.Errorf("assemble image: %d base diff IDs for %d base layers", len(spec.BaseDiffIDs), len(baseLayers))
	}
	img := ociEmpty()
	var adds []mutate.Addendum
	for i, l := range baseLayers {
		mt, err := ociLayerType(baseManifest.Layers[i].MediaType)
		if err != nil {
			return nil, fmt.Errorf("base layer %d (%s): %w", i, baseManifest.Layers[i].Digest, err)
		}
		if spec.BaseDiffIDs != nil {
			l = measuredLayer{Layer: l, diffID: spec.BaseDiffIDs[i]}
		}
		adds = append(adds, mutate.Addendum{Layer: l, MediaType: mt})
	}
	for _, a := range spec.Layers {
		mt, err := a.Layer.MediaType()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.Addendum{Layer: a.Layer, MediaType: mt})
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	// History: the base's own (it may hold empty-layer entries), then one
	// line per added layer, all dated at the epoch.
	cfg.History = append([]v1.History(nil), baseCfg.History...)
	for _, a := range spec.Layers {
		cfg.History = append(cfg.History, v1.History{Created: created, CreatedBy: a.CreatedBy})
	}
	cfg.Created = created
	cfg.OS = spec.Platform.OS
	cfg.Architecture = spec.Platform.Architecture
	cfg.Variant = spec.Platform.Variant
	c := baseCfg.Config
	c.Env = append(append([]string(nil), baseCfg.Config.Env...), spec.Config.Env...)
	c.Entrypoint = spec.Config.Entrypoint
	c.Cmd = spec.Config.Cmd
	if spec.Config.WorkingDir != "" {
		c.WorkingDir = spec.Config.WorkingDir
	}
	if spec.Config.User != "" {
		c.User = spec.Config.User
	}
	labels := map[string]string{}
	for k, v := range baseCfg.Config.Labels {
		labels[k] = v
	}
	for k, v := range spec.Config.Labels {
		labels[k] = v
	}
	c.Labels = labels
	c.Healthcheck = nil
	cfg.Config = c
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	ann := map[string]string{
		AnnotationCreated:    created.Time.Format(time.RFC3339),
		AnnotationBaseDigest: baseDigest.String(),
	}
	if spec.BaseName != "" {
		ann[AnnotationBaseName] = spec.BaseName
	}
	for k, v := range spec.Annotation {
		ann[k] = v
	}
	out, ok := mutate.Annotations(img, ann).(v1.Image)
	if !ok {
		return nil, errors.New("annotate image: not an image")
	}
	if mt, err := out.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		return nil, fmt.Errorf("assembled image has media type %s, want %s", mt, types.OCIManifestSchema1)
	}
	return out, nil
}

// FileLayer is a v1.Layer backed by a layer file written by release/layer,
// with digests already known so nothing is read twice.
type FileLayer struct{ W *layer.Written }

var _ v1.Layer = FileLayer{}

func (l FileLayer) Digest() (v1.Hash, error) { return v1.NewHash(l.W.Digest) }
func (l FileLayer) DiffID() (v1.Hash, error) { return v1.NewHash(l.W.DiffID) }
func (l FileLayer) Size() (int64, error)     { return l.W.Size, nil }
func (l FileLayer) MediaType() (types.MediaType, error) {
	return types.MediaType(l.W.MediaType), nil
}
func (l FileLayer) Compressed() (io.ReadCloser, error) { return os.Open(l.W.Path) }
func (l FileLayer) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(l.W.Path)
	if err != nil {
		return nil, err
	}
	rc, err := layer.Decompress(f, l.W.MediaType)
	if err != nil {
		f.Close()
		return nil, err
	}
	return rc, nil
}

// File returns the compressed layer file, so a layout writer can move it
// into place instead of copying it.
func (l FileLayer) File() string { return l.W.Path }

// Unpack extracts the layers of img from index from on into dest, in
// order, with the layer package's safe unpacker and decompression limits.
// It handles the regular files and directories release layers hold; a
// layer with links, devices or whiteouts is refused. It trusts img to
// serve the bytes its digests name: for a store's bytes, fetch and check
// them first (store.Fetch), as rebuild does.
func Unpack(img v1.Image, from int, dest string) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for i := from; i < len(layers); i++ {
		if err := unpackLayer(layers[i], dest); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return nil
}

func unpackLayer(l v1.Layer, dest string) error {
	rc, err := OpenLayer(l, nil)
	if err != nil {
		return err
	}
	defer rc.Close()
	return layer.Extract(rc, dest)
}

// OpenLayer returns the tar stream of l, decompressed within the layer
// package's limits for its compressed size; when sum is not nil the
// compressed bytes are also written to it as they are read (to hash
// them). Closing the stream closes the layer's.
func OpenLayer(l v1.Layer, sum io.Writer) (io.ReadCloser, error) {
	size, err := l.Size()
	if err != nil {
		return nil, err
	}
	mt, err := l.MediaType()
	if err != nil {
		return nil, err
	}
	c, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	var r io.ReadCloser = c
	if sum != nil {
		r = readCloser{io.TeeReader(c, sum), c}
	}
	rc, err := layer.DecompressLimited(r, string(mt), size)
	if err != nil {
		c.Close()
		return nil, err
	}
	return rc, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}
