package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"

	"github.com/cacheon/engine/internal/atomicwrite"
)

const (
	ociLayoutFile    = "oci-layout"
	ociLayoutContent = `{"imageLayoutVersion":"1.0.0"}`
	indexFile        = "index.json"
	annotationRef    = "org.opencontainers.image.ref.name"
	// AnnotationRole marks the pinned base image a layout carries beside
	// the release image (value RoleBase), so a rebuild needs nothing but
	// the release.
	AnnotationRole = "dev.cacheon.release.role"
	RoleBase       = "base"
)

// Layout is a release in an OCI image layout directory: index.json lists
// the release image (annotated with its reference name) and the artifacts
// attached to it.
type Layout struct{ dir string }

var _ Store = (*Layout)(nil)

// OpenLayout opens the OCI image layout at dir.
func OpenLayout(dir string) (*Layout, error) {
	b, err := readRegular(filepath.Join(dir, ociLayoutFile), maxLayoutMarker)
	if err != nil {
		return nil, fmt.Errorf("open OCI layout %s: %w", dir, err)
	}
	var v struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Version != "1.0.0" {
		return nil, fmt.Errorf("open OCI layout %s: %w", dir, &FileError{Path: filepath.Join(dir, ociLayoutFile), Err: ErrMalformed, Detail: "it does not say imageLayoutVersion 1.0.0"})
	}
	return &Layout{dir: dir}, nil
}

// openRegular opens p for reading without blocking and refuses anything
// but a regular file before a byte is read: opening a FIFO for reading
// blocks until a writer comes, and reading a device (or a FIFO) never
// ends. O_NONBLOCK makes the open itself return; fstat then says what it
// opened. On a regular file O_NONBLOCK changes nothing.
func openRegular(p string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &FileError{Path: p, Err: ErrNotRegular, Detail: fmt.Sprintf("it is a %s", describeMode(info.Mode()))}
	}
	return f, info, nil
}

// OpenRegularFile opens the regular file p for reading and refuses
// anything else (a FIFO, a device, a directory) unread and without
// blocking, with an error wrapping ErrNotRegular. It is for any file a
// release reader opens where an attacker may have put something else.
func OpenRegularFile(p string) (*os.File, error) {
	f, _, err := openRegular(p)
	return f, err
}

// ReadRegularFile reads the regular file p (see OpenRegularFile), at most
// limit bytes: a larger file is refused by its size, unread, with an
// error wrapping ErrTooLarge.
func ReadRegularFile(p string, limit int64) ([]byte, error) { return readRegular(p, limit) }

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m.IsDir():
		return "directory"
	}
	return "special file (" + m.Type().String() + ")"
}

// readRegular reads the regular file p, refusing it unread when its size
// is over limit (and cutting it off at limit+1 bytes should it grow).
func readRegular(p string, limit int64) ([]byte, error) {
	f, info, err := openRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := &FileError{Path: p, Err: ErrTooLarge, Detail: fmt.Sprintf("larger than %d bytes", limit)}
	if info.Size() > limit {
		return nil, tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge
	}
	return b, nil
}

func (l *Layout) Location() string { return l.dir }

// Dir returns the layout's directory.
func (l *Layout) Dir() string { return l.dir }

// index reads index.json: at most MaxIndexSize bytes (refused by its size
// before it is read) naming at most MaxIndexEntries manifests.
func (l *Layout) index() (*v1.IndexManifest, error) {
	p := filepath.Join(l.dir, indexFile)
	b, err := readRegular(p, MaxIndexSize)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", indexFile, err)
	}
	return parseIndex(p, b)
}

// parseIndex parses the bytes of index.json (at p, for messages).
func parseIndex(p string, b []byte) (*v1.IndexManifest, error) {
	im, err := v1.ParseIndexManifest(bytes.NewReader(b))
	if err != nil {
		return nil, &FileError{Path: p, Err: ErrMalformed, Detail: err.Error()}
	}
	if len(im.Manifests) > MaxIndexEntries {
		return nil, &FileError{Path: p, Err: ErrTooManyEntries, Detail: fmt.Sprintf("it lists %d manifests, the limit is %d", len(im.Manifests), MaxIndexEntries)}
	}
	return im, nil
}

// Resolve returns the one image in index.json that is not an artifact
// (it has no artifactType and no subject) and not the base; when several
// are listed, the one with a reference name. Anything else is a rejection
// of the layout.
func (l *Layout) Resolve() (v1.Descriptor, error) {
	im, err := l.index()
	if err != nil {
		return v1.Descriptor{}, err
	}
	var found []v1.Descriptor
	for _, d := range im.Manifests {
		if d.MediaType.IsImage() && d.ArtifactType == "" && d.Annotations[AnnotationRole] != RoleBase {
			found = append(found, d)
		}
	}
	if len(found) > 1 {
		// Anything listed without a type looks like an image; the
		// release image is the one its writer named.
		var named []v1.Descriptor
		for _, d := range found {
			if d.Annotations[annotationRef] != "" {
				named = append(named, d)
			}
		}
		found = named
	}
	if len(found) != 1 {
		return v1.Descriptor{}, &FileError{Path: filepath.Join(l.dir, indexFile), Err: ErrMalformed, Detail: fmt.Sprintf("it lists %d release images (image manifests without an artifact type, named by %s), want exactly 1", len(found), annotationRef)}
	}
	return found[0], nil
}

func (l *Layout) blobPath(h v1.Hash) (string, error) {
	// The hex digits become a file name: nothing else may reach it.
	if h.Algorithm != "sha256" || len(h.Hex) != 64 || strings.Trim(h.Hex, "0123456789abcdef") != "" {
		return "", &DescriptorError{Digest: h.String(), Err: ErrBadDescriptor, Detail: "want a sha256 digest with 64 lowercase hex digits"}
	}
	return filepath.Join(l.dir, "blobs", h.Algorithm, h.Hex), nil
}

func (l *Layout) Manifest(d v1.Descriptor) ([]byte, error) {
	p, err := l.blobPath(d.Digest)
	if err != nil {
		return nil, err
	}
	b, err := readRegular(p, MaxManifestSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &MissingError{What: "manifest", Digest: d.Digest.String(), Location: l.dir, Detail: "no file blobs/sha256/" + d.Digest.Hex}
	}
	return b, err
}

func (l *Layout) Blob(d v1.Descriptor) (io.ReadCloser, error) {
	p, err := l.blobPath(d.Digest)
	if err != nil {
		return nil, err
	}
	f, _, err := openRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &MissingError{What: "blob", Digest: d.Digest.String(), Location: l.dir, Detail: "no file blobs/sha256/" + d.Digest.Hex}
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Referrers lists the index.json entries that may be artifacts attached
// to subject: every image manifest but subject itself and the base. None
// is read here: Candidates bounds the list, and the manifests are read
// one at a time (OpenReferrer), only as far as a caller needs, and
// checked then (their subject included).
func (l *Layout) Referrers(subject v1.Hash) ([]v1.Descriptor, error) {
	im, err := l.index()
	if err != nil {
		return nil, err
	}
	var out []v1.Descriptor
	for _, d := range im.Manifests {
		if !d.MediaType.IsImage() || d.Digest == subject || d.Annotations[AnnotationRole] == RoleBase {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// Attach writes the artifact's blobs and manifest, then replaces
// index.json atomically: a crash leaves either the old index or the new
// one, and unreferenced blobs at worst.
func (l *Layout) Attach(subject v1.Descriptor, a Artifact) (v1.Descriptor, error) {
	raw, desc, blob, err := a.Manifest(subject)
	if err != nil {
		return v1.Descriptor{}, err
	}
	for _, b := range []struct {
		d    v1.Descriptor
		data []byte
	}{{emptyDescriptor(), emptyConfig}, {blob, a.Data}, {desc, raw}} {
		if err := writeBlobBytes(l.dir, b.d.Digest, b.data); err != nil {
			return v1.Descriptor{}, err
		}
	}
	im, err := l.index()
	if err != nil {
		return v1.Descriptor{}, err
	}
	for _, d := range im.Manifests {
		if d.Digest == desc.Digest {
			return desc, nil // already attached: identical bytes, nothing to do
		}
	}
	im.Manifests = append(im.Manifests, desc)
	if err := writeIndex(l.dir, im, atomicwrite.WriteFile); err != nil {
		return v1.Descriptor{}, err
	}
	return desc, nil
}

// writeIndex writes index.json: the image first, then artifacts by digest,
// so the file depends only on its contents.
func writeIndex(dir string, im *v1.IndexManifest, write func(string, []byte, fs.FileMode) error) error {
	sort.SliceStable(im.Manifests, func(i, j int) bool {
		ai, aj := im.Manifests[i].ArtifactType != "", im.Manifests[j].ArtifactType != ""
		if ai != aj {
			return !ai
		}
		return im.Manifests[i].Digest.String() < im.Manifests[j].Digest.String()
	})
	im.SchemaVersion = 2
	im.MediaType = types.OCIImageIndex
	b, err := json.Marshal(im)
	if err != nil {
		return err
	}
	if err := write(filepath.Join(dir, indexFile), b, 0o644); err != nil {
		return fmt.Errorf("write %s/%s: %w", dir, indexFile, err)
	}
	return nil
}

// writeBlobBytes stores data as blobs/sha256/<hex>, checking the digest;
// an existing blob is kept (its name is its content).
func writeBlobBytes(dir string, h v1.Hash, data []byte) error {
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != h.Hex || h.Algorithm != "sha256" {
		return fmt.Errorf("blob %s: data hashes to sha256:%x", h, sum)
	}
	p := filepath.Join(dir, "blobs", "sha256", h.Hex)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return atomicwrite.WriteFile(p, data, 0o644)
}

// LayoutWriter builds a new release layout in a private sibling directory
// and publishes it with one rename, so a reader never sees a half-written
// release at the destination.
type LayoutWriter struct {
	dest    string
	tmp     string
	image   *v1.Descriptor
	entries []v1.Descriptor
}

// NewLayoutWriter starts a layout that will appear at dest, which must not
// exist yet or be an empty directory (a build system may create the
// declared output directory before running the action).
func NewLayoutWriter(dest string) (*LayoutWriter, error) {
	if info, err := os.Lstat(dest); err == nil {
		entries, rerr := os.ReadDir(dest)
		if !info.IsDir() || rerr != nil || len(entries) > 0 {
			return nil, fmt.Errorf("output %s already exists; a release layout is written once (an empty directory is accepted)", dest)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	parent := filepath.Dir(dest)
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("create staging directory for %s: %w", dest, err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "blobs", "sha256"), 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &LayoutWriter{dest: dest, tmp: tmp}, nil
}

// ScratchDir is a private directory inside the staging area for files that
// become blobs (it is removed before publishing); files written there can
// be moved in by AddImage without a copy.
func (w *LayoutWriter) ScratchDir() (string, error) {
	d := filepath.Join(w.tmp, "scratch")
	return d, os.MkdirAll(d, 0o700)
}

// FileBacked is a layer whose compressed bytes are already in a file.
type FileBacked interface {
	v1.Layer
	File() string
}

// AddImage writes img's blobs and manifest and lists it under refName.
func (w *LayoutWriter) AddImage(img v1.Image, refName string) (v1.Descriptor, error) {
	if w.image != nil {
		return v1.Descriptor{}, errors.New("a release layout holds exactly one image")
	}
	d, err := w.writeImage(img)
	if err != nil {
		return v1.Descriptor{}, err
	}
	if refName != "" {
		d.Annotations = map[string]string{annotationRef: refName}
	}
	w.image = &d
	w.entries = append(w.entries, d)
	return d, nil
}

// writeImage writes img's layers, config and manifest as blobs and
// returns the manifest's descriptor (without annotations).
func (w *LayoutWriter) writeImage(img v1.Image) (v1.Descriptor, error) {
	layers, err := img.Layers()
	if err != nil {
		return v1.Descriptor{}, err
	}
	for _, l := range layers {
		if err := w.addLayer(l); err != nil {
			return v1.Descriptor{}, err
		}
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return v1.Descriptor{}, err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := writeBlobBytes(w.tmp, cfgName, cfg); err != nil {
		return v1.Descriptor{}, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	h, n, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := writeBlobBytes(w.tmp, h, raw); err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Digest: h, Size: n}, nil
}

func (w *LayoutWriter) addLayer(l v1.Layer) error {
	h, err := l.Digest()
	if err != nil {
		return err
	}
	dst := filepath.Join(w.tmp, "blobs", "sha256", h.Hex)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	// A layer file staged in our scratch directory is moved in; its
	// digest was computed while it was written.
	if fb, ok := l.(FileBacked); ok && strings.HasPrefix(fb.File(), w.tmp+string(filepath.Separator)) {
		if err := os.Rename(fb.File(), dst); err != nil {
			return fmt.Errorf("move layer %s into the layout: %w", h, err)
		}
		return os.Chmod(dst, 0o644)
	}
	rc, err := l.Compressed()
	if err != nil {
		return fmt.Errorf("read layer %s: %w", h, err)
	}
	defer rc.Close()
	f, err := os.CreateTemp(filepath.Dir(dst), ".layer-*")
	if err != nil {
		return err
	}
	hasher := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, hasher), rc); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("copy layer %s: %w", h, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if got := hex.EncodeToString(hasher.Sum(nil)); got != h.Hex {
		os.Remove(f.Name())
		return fmt.Errorf("layer %s: its bytes hash to sha256:%s", h, got)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), dst)
}

// AddBase writes the manifest and config of the base image (its layers
// are the release image's first layers, written by AddImage) and lists it
// in index.json marked as the base.
func (w *LayoutWriter) AddBase(base v1.Image) (v1.Descriptor, error) {
	d, err := w.writeImage(base)
	if err != nil {
		return v1.Descriptor{}, err
	}
	d.Annotations = map[string]string{AnnotationRole: RoleBase}
	w.entries = append(w.entries, d)
	return d, nil
}

// Base returns the descriptor of the base image the layout carries.
func (l *Layout) Base() (v1.Descriptor, bool, error) {
	im, err := l.index()
	if err != nil {
		return v1.Descriptor{}, false, err
	}
	for _, d := range im.Manifests {
		if d.Annotations[AnnotationRole] == RoleBase {
			return d, true, nil
		}
	}
	return v1.Descriptor{}, false, nil
}

// Attach adds an artifact referring to the image added with AddImage.
func (w *LayoutWriter) Attach(a Artifact) (v1.Descriptor, error) {
	if w.image == nil {
		return v1.Descriptor{}, errors.New("attach before the image was added")
	}
	raw, desc, blob, err := a.Manifest(*w.image)
	if err != nil {
		return v1.Descriptor{}, err
	}
	for _, b := range []struct {
		d    v1.Descriptor
		data []byte
	}{{emptyDescriptor(), emptyConfig}, {blob, a.Data}, {desc, raw}} {
		if err := writeBlobBytes(w.tmp, b.d.Digest, b.data); err != nil {
			return v1.Descriptor{}, err
		}
	}
	w.entries = append(w.entries, desc)
	return desc, nil
}

// Commit writes index.json and oci-layout, syncs everything and renames
// the staging directory to the destination.
func (w *LayoutWriter) Commit() (*Layout, error) {
	if w.image == nil {
		return nil, errors.New("commit a layout without an image")
	}
	if err := os.RemoveAll(filepath.Join(w.tmp, "scratch")); err != nil {
		return nil, err
	}
	plainWrite := func(p string, b []byte, perm fs.FileMode) error { return os.WriteFile(p, b, perm) }
	if err := writeIndex(w.tmp, &v1.IndexManifest{Manifests: w.entries}, plainWrite); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(w.tmp, ociLayoutFile), []byte(ociLayoutContent), 0o644); err != nil {
		return nil, err
	}
	// Fixed modes whatever the umask, and everything on disk before the
	// rename makes it visible.
	err := filepath.WalkDir(w.tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
	if err != nil {
		return nil, fmt.Errorf("finish layout %s: %w", w.dest, err)
	}
	// An empty output directory made by the build system is replaced;
	// anything else at dest makes the rename fail rather than overwrite.
	if entries, err := os.ReadDir(w.dest); err == nil && len(entries) == 0 {
		os.Remove(w.dest)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, w.tmp, unix.AT_FDCWD, w.dest, unix.RENAME_NOREPLACE); err != nil {
		return nil, fmt.Errorf("publish layout %s: %w", w.dest, err)
	}
	if d, err := os.Open(filepath.Dir(w.dest)); err == nil {
		d.Sync()
		d.Close()
	}
	w.tmp = ""
	return OpenLayout(w.dest)
}

// Abort removes the staging directory; it is safe after Commit.
func (w *LayoutWriter) Abort() {
	if w.tmp != "" {
		os.RemoveAll(w.tmp)
		w.tmp = ""
	}
}
