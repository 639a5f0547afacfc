package verify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/layer"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/stacks/materialize"
)

// checkBlobs (CheckBlobs) hashes the config and every layer against its
// descriptor, and reads our layers' contents for the checks after it.
func (v *verification) checkBlobs() error {
	contents, verified, err := readBlobs(v.s, v.m, v.ours())
	if err != nil {
		return err
	}
	v.contents = contents
	v.rep.BytesVerified = verified + int64(len(v.raw))
	v.rep.pass(CheckBlobs, "config and %d layers (%d bytes) match their descriptors", len(v.m.Layers), verified)
	return nil
}

// layerContents is what verification reads out of one of our layers.
type layerContents struct {
	diffID      string
	files       map[string][]byte // release layer
	rows        []atomicwrite.Written
	sbomFiles   []sbom.File
	metadata    []byte
	contentHash string
	entryBytes  []byte
	entrySHA256 string
	entrySize   int64
	treeDigest  string // the materializer's check of the engine tree
	treeErr     error
}

// readBlobs checks the config and every layer against its descriptor,
// in parallel; the layers from index ours on are also read for their
// contents. It returns the contents by role and the bytes hashed.
func readBlobs(s store.Store, m *v1.Manifest, ours int) (map[string]*layerContents, int64, error) {
	type job struct {
		desc v1.Descriptor
		role string // "" for blobs only hashed
	}
	jobs := []job{{desc: m.Config}}
	for i, l := range m.Layers {
		j := job{desc: l}
		if i >= ours {
			j.role = ourLayers[i-ours]
		}
		jobs = append(jobs, j)
	}
	out := map[string]*layerContents{}
	var mu sync.Mutex
	var total int64
	var firstErr error
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func(j job) {
			defer wg.Done()
			defer func() { <-sem }()
			var c *layerContents
			var err error
			if j.role == "" {
				err = store.CheckBlob(s, j.desc, io.Discard)
			} else {
				c, err = readLayer(s, j.desc, j.role)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					if errors.Is(err, errLayerContent) || errors.Is(err, errBrokenLayer) || layer.IsRejection(err) {
						firstErr = fail(CheckBlobs, err)
					} else {
						firstErr = classify(CheckBlobs, err)
					}
				}
				return
			}
			total += j.desc.Size
			if c != nil {
				out[j.role] = c
			}
		}(j)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, 0, firstErr
	}
	return out, total, nil
}

var errLayerContent = errors.New("unexpected layer content")

// errBrokenLayer is a layer whose bytes match its descriptor but do not
// decompress or unpack (a bad gzip stream, a truncated or corrupt tar):
// a fault of the release, so a failed check (exit 2), never an I/O
// error.
var errBrokenLayer = errors.New("the layer does not decompress or unpack")

func broken(err error) error {
	if err == nil || errors.Is(err, errLayerContent) || layer.IsRejection(err) {
		return err
	}
	return fmt.Errorf("%w: %w", errBrokenLayer, err)
}

// readLayer reads one of our layers: its compressed bytes are copied to
// a temporary file and checked against the descriptor first, and only the
// checked bytes are decompressed (within layer.DecompressLimited's
// limits) and read; a layer that does not match its digest is never
// unpacked.
func readLayer(s store.Store, d v1.Descriptor, role string) (*layerContents, error) {
	f, err := store.Fetch(s, d, "")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &layerContents{files: map[string][]byte{}}
	if err := readLayerContents(f, d, role, c); err != nil {
		return nil, fmt.Errorf("%s layer %s: %w", role, d.Digest, err)
	}
	return c, nil
}

// maxEntrypointSize bounds the entrypoint binary, which is held in memory
// for the SBOM (a static Go binary is tens of MiB).
const maxEntrypointSize = 512 << 20

func readLayerContents(r io.Reader, d v1.Descriptor, role string, c *layerContents) error {
	tarStream, err := layer.DecompressLimited(io.NopCloser(r), string(d.MediaType), d.Size)
	if err != nil {
		return broken(err)
	}
	defer tarStream.Close()
	diff := newHasher()
	tee := io.TeeReader(tarStream, diff)
	prefix := map[string]string{"substrate": descriptor.SubstrateDir, "entrypoint": "cacheon/bin", "engine-tree": descriptor.EngineTreeDir, "release": descriptor.ReleaseDir}[role] + "/"
	// The substrate and the engine tree are also written out, so that the
	// content hash and the materializer's own tree check run on them.
	var substrateDir, scratch string
	if role == "substrate" || role == "engine-tree" {
		if scratch, err = os.MkdirTemp("", "cacheon-verify-"+role+"-"); err != nil {
			return err
		}
		defer os.RemoveAll(scratch)
	}
	var treeFiles []atomicwrite.File
	visit := func(name string, exec bool, contents io.Reader) error {
		if !strings.HasPrefix(name, prefix) {
			return fmt.Errorf("%w: %s is outside %s", errLayerContent, name, prefix)
		}
		rel := strings.TrimPrefix(name, prefix)
		switch role {
		case "release":
			b, err := io.ReadAll(io.LimitReader(contents, maxReleaseFile+1))
			if err != nil {
				return err
			}
			if len(b) > maxReleaseFile {
				return fmt.Errorf("%w: %s is larger than %d bytes", errLayerContent, name, maxReleaseFile)
			}
			c.files[name] = b
		case "entrypoint":
			if name != descriptor.EntrypointPath {
				return fmt.Errorf("%w: %s in the entrypoint layer", errLayerContent, name)
			}
			b, err := io.ReadAll(io.LimitReader(contents, maxEntrypointSize+1))
			if err != nil {
				return err
			}
			if len(b) > maxEntrypointSize {
				return fmt.Errorf("%w: %s is larger than %d bytes", errLayerContent, name, maxEntrypointSize)
			}
			c.entryBytes, c.entrySHA256, c.entrySize = b, descriptor.SHA256(b), int64(len(b))
		case "engine-tree", "substrate":
			h := newHasher()
			var w io.Writer = h
			var meta bytes.Buffer
			if role == "engine-tree" && rel == materialize.TreeMetadataName {
				w = io.MultiWriter(h, &limitedBuffer{b: &meta, limit: maxReleaseFile})
			}
			treeFiles = append(treeFiles, atomicwrite.File{Path: rel, From: filepath.Join(substrateDir, filepath.FromSlash(rel))})
			n, err := io.Copy(w, contents)
			if err != nil {
				return err
			}
			if meta.Len() > 0 {
				c.metadata = meta.Bytes()
			}
			c.rows = append(c.rows, atomicwrite.Written{Path: rel, SHA256: h.sha256(), Size: n})
			c.sbomFiles = append(c.sbomFiles, sbom.File{Path: name, SHA1: h.sha1(), SHA256: h.sha256()})
		}
		return nil
	}
	if scratch != "" {
		// The one safe unpacker writes the files under the scratch
		// directory and nowhere else.
		files := filepath.Join(scratch, "files")
		if err := os.Mkdir(files, 0o700); err != nil {
			return err
		}
		substrateDir = filepath.Join(files, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
		err = layer.Unpack(tee, files, visit)
	} else {
		err = layer.Walk(tee, visit)
	}
	if err != nil {
		return broken(err)
	}
	// Drain what follows the tar's end marker so the diff ID covers the
	// whole stream.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return broken(err)
	}
	c.diffID = "sha256:" + diff.sha256()
	switch role {
	case "substrate":
		hash, err := bundle.ContentHash(substrateDir)
		if err != nil {
			return err
		}
		c.contentHash = hash.String()
	case "engine-tree":
		// A tree in the materializer's published shape, reopened by the
		// materializer: canonical metadata whose inventory is the tree.
		dest := filepath.Join(scratch, "tree")
		if _, err := atomicwrite.WriteTree(dest, treeFiles); err != nil {
			c.treeErr = err
		} else if res, err := materialize.Verify(dest); err != nil {
			c.treeErr = err
		} else {
			c.treeDigest = res.TreeDigest.String()
		}
	}
	sortFiles(c.sbomFiles)
	return nil
}

// limitedBuffer keeps at most limit bytes and then refuses more.
type limitedBuffer struct {
	b     *bytes.Buffer
	limit int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) > l.limit {
		return 0, fmt.Errorf("%w: the engine tree metadata is larger than %d bytes", errLayerContent, l.limit)
	}
	return l.b.Write(p)
}
