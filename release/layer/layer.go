// Package layer writes deterministic, compressed OCI image layers.
//
// A layer's bytes depend only on the files it holds: entries are sorted by
// their full path (byte order), every parent directory is emitted before
// its children, every header carries the same modification time (the
// source date epoch), uid/gid 0 with empty owner names, and normalized
// modes (directories 0755, files 0644, or 0755 when any execute bit is
// set). Symlinks, devices and other special files are rejected rather than
// silently skipped, because a release must contain exactly what was
// reviewed. Nothing of the host (umask, clock, timezone, locale, owner or
// the directory the build runs in) reaches the bytes.
//
// The tar stream is compressed once, into a file, while both digests are
// computed on the fly, so a layer of any size costs one pass over its files.
package layer

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Compression names a layer compression. The compressed bytes, and so the
// layer digest, depend on the compressor's implementation: gzip comes from
// the Go standard library (pinned by the Go toolchain), zstd from the
// klauspost/compress module (pinned by go.sum).
type Compression string

const (
	Gzip Compression = "gzip"
	Zstd Compression = "zstd"
)

// MediaType returns the OCI layer media type of compression c.
func (c Compression) MediaType() (string, error) {
	switch c {
	case Gzip:
		return "application/vnd.oci.image.layer.v1.tar+gzip", nil
	case Zstd:
		return "application/vnd.oci.image.layer.v1.tar+zstd", nil
	}
	return "", fmt.Errorf("compression %q: want gzip or zstd", string(c))
}

// Options fix everything about a layer that is not a file's content.
type Options struct {
	// Epoch is the modification time of every entry, in seconds since
	// the Unix epoch (SOURCE_DATE_EPOCH).
	Epoch int64
	// Compression and Level select the compressor; Level 0 means the
	// compressor's default (gzip 6, zstd "default").
	Compression Compression
	Level       int
}

// Entry is one regular file in a layer.
type Entry struct {
	// Path is the slash-separated path inside the image, relative to
	// the image root (no leading slash, no "." or ".." components).
	Path string
	// Source is the file on disk whose bytes become the entry, unless
	// Data is set.
	Source string
	Data   []byte
	// Executable gives the entry mode 0755 instead of 0644.
	Executable bool
}

// Skip decides which files of a directory tree stay out of a layer
// (relative slash path). Nil keeps every file.
type Skip func(rel string) bool

// FromDir lists every regular file under root as entries below prefix.
// Symlinks and special files are an error naming the path. skip drops
// files (and whole directories) whose root-relative path it accepts.
func FromDir(root, prefix string, skip Skip) ([]Entry, error) {
	var entries []Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			entries = append(entries, Entry{
				Path:       path.Join(prefix, rel),
				Source:     p,
				Executable: info.Mode().Perm()&0o111 != 0,
			})
			return nil
		case t&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: symlinks are not allowed in a release layer", p)
		default:
			return fmt.Errorf("%s: %s is not a regular file or directory", p, t.Type())
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	return entries, nil
}

// Written is a layer file on disk with its identities.
type Written struct {
	Path      string // the compressed layer file
	MediaType string
	Digest    string // sha256:<hex> of the compressed bytes
	DiffID    string // sha256:<hex> of the uncompressed tar
	Size      int64  // compressed size
	// Files are the regular files of the layer, in tar order, with the
	// digests of the bytes the one pass wrote, so that callers (the SBOM)
	// need not read the sources again.
	Files []FileDigest
}

// FileDigest is one regular file of a written layer.
type FileDigest struct {
	Path   string // the entry path
	SHA1   string // hex
	SHA256 string // hex
	Size   int64
}

// Write writes the entries as a compressed tar to a new file at out and
// returns its digests. Duplicate paths, or a path that is both a file and
// a directory, are an error. On error no file is left at out.
func Write(out string, entries []Entry, opts Options) (*Written, error) {
	plan, err := plan(entries)
	if err != nil {
		return nil, err
	}
	s, err := Create(out, opts)
	if err != nil {
		return nil, err
	}
	mtime := time.Unix(opts.Epoch, 0).UTC()
	files := make([]FileDigest, 0, len(entries))
	for _, e := range plan {
		fd, err := writeEntry(s.tw, e, mtime)
		if err != nil {
			s.Abort()
			return nil, err
		}
		if !e.dir {
			files = append(files, fd)
		}
	}
	w, err := s.Close()
	if err != nil {
		return nil, err
	}
	w.Files = files
	return w, nil
}

// Stream is a layer file being written entry by entry, for callers whose
// entries are not files on disk (the Debian base writes the entries of
// package archives as it reads them). The caller decides every header, so
// the determinism Write guarantees is the caller's to keep; the stream
// only compresses, hashes and checks the expansion readers accept.
type Stream struct {
	out          string
	mediaType    string
	compression  Compression
	f            *os.File
	comp         io.WriteCloser
	compressed   *countingHash
	uncompressed *countingHash
	tw           *tar.Writer
}

// Create starts a layer file at out, which must not exist.
func Create(out string, opts Options) (*Stream, error) {
	mediaType, err := opts.Compression.MediaType()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create layer file: %w", err)
	}
	s := &Stream{out: out, mediaType: mediaType, compression: opts.Compression, f: f,
		compressed: &countingHash{h: sha256.New()}, uncompressed: &countingHash{h: sha256.New()}}
	if s.comp, err = newCompressor(io.MultiWriter(f, s.compressed), opts); err != nil {
		s.Abort()
		return nil, err
	}
	s.tw = tar.NewWriter(io.MultiWriter(s.comp, s.uncompressed))
	return s, nil
}

// WriteHeader starts the next entry; see tar.Writer.WriteHeader.
func (s *Stream) WriteHeader(hdr *tar.Header) error {
	if err := s.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write tar header %s: %w", hdr.Name, err)
	}
	return nil
}

// Write writes the current entry's contents.
func (s *Stream) Write(p []byte) (int, error) { return s.tw.Write(p) }

// Abort removes the partial layer file.
func (s *Stream) Abort() {
	s.f.Close()
	os.Remove(s.out)
}

// Close finishes the tar and compressed streams, syncs the file and
// returns its digests (Files is left empty). On error the file is removed.
func (s *Stream) Close() (w *Written, err error) {
	defer func() {
		if err != nil {
			s.Abort()
		}
	}()
	if err := s.tw.Close(); err != nil {
		return nil, fmt.Errorf("finish tar: %w", err)
	}
	if err := s.comp.Close(); err != nil {
		return nil, fmt.Errorf("finish %s stream: %w", s.compression, err)
	}
	if limit := ExpansionLimit(s.compressed.n); s.uncompressed.n > limit {
		// Readers refuse it (DecompressLimited): better not to release it.
		return nil, fmt.Errorf("layer of %d compressed bytes holds a %d-byte tar, over the %d bytes a reader accepts (MaxExpansionRatio %d, MaxUncompressedSize %d)",
			s.compressed.n, s.uncompressed.n, limit, MaxExpansionRatio, MaxUncompressedSize)
	}
	if err := s.f.Sync(); err != nil {
		return nil, fmt.Errorf("sync layer file: %w", err)
	}
	if err := s.f.Close(); err != nil {
		return nil, fmt.Errorf("close layer file: %w", err)
	}
	return &Written{
		Path:      s.out,
		MediaType: s.mediaType,
		Digest:    "sha256:" + hex.EncodeToString(s.compressed.h.Sum(nil)),
		DiffID:    "sha256:" + hex.EncodeToString(s.uncompressed.h.Sum(nil)),
		Size:      s.compressed.n,
	}, nil
}

type planned struct {
	name  string // path in the tar, without a trailing slash
	dir   bool
	entry Entry
}

// plan validates the entries and returns them with every implied parent
// directory, in byte order of the full path: a directory's name is a
// prefix of its children's, so it always sorts before them.
func plan(entries []Entry) ([]planned, error) {
	files := make(map[string]Entry, len(entries))
	dirs := make(map[string]bool)
	for _, e := range entries {
		if err := checkPath(e.Path); err != nil {
			return nil, err
		}
		if _, dup := files[e.Path]; dup {
			return nil, fmt.Errorf("layer entry %s: listed twice", e.Path)
		}
		files[e.Path] = e
		for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	out := make([]planned, 0, len(files)+len(dirs))
	for d := range dirs {
		if _, clash := files[d]; clash {
			return nil, fmt.Errorf("layer entry %s: is both a file and a directory", d)
		}
		out = append(out, planned{name: d, dir: true})
	}
	for p, e := range files {
		out = append(out, planned{name: p, entry: e})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || path.Clean(p) != p ||
		p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("layer entry %q: want a clean relative slash path", p)
	}
	for _, r := range p {
		if r == 0 || r == '\\' {
			return fmt.Errorf("layer entry %q: NUL and backslash are not allowed in paths", p)
		}
	}
	return nil
}

// writeEntry writes one planned entry and, for a file, returns the
// digests of the bytes it wrote.
func writeEntry(tw *tar.Writer, e planned, mtime time.Time) (FileDigest, error) {
	hdr := &tar.Header{
		Name:    e.name,
		ModTime: mtime,
		Format:  tar.FormatPAX, // PAX records only where ustar cannot hold a field (long names)
	}
	if e.dir {
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
		hdr.Mode = 0o755
		if err := tw.WriteHeader(hdr); err != nil {
			return FileDigest{}, fmt.Errorf("write tar header %s: %w", hdr.Name, err)
		}
		return FileDigest{}, nil
	}
	hdr.Typeflag = tar.TypeReg
	hdr.Mode = 0o644
	if e.entry.Executable {
		hdr.Mode = 0o755
	}
	h1, h2 := sha1.New(), sha256.New()
	digest := func() FileDigest {
		return FileDigest{Path: e.entry.Path, SHA1: hex.EncodeToString(h1.Sum(nil)), SHA256: hex.EncodeToString(h2.Sum(nil)), Size: hdr.Size}
	}
	if e.entry.Data != nil || e.entry.Source == "" {
		hdr.Size = int64(len(e.entry.Data))
		if err := tw.WriteHeader(hdr); err != nil {
			return FileDigest{}, fmt.Errorf("write tar header %s: %w", hdr.Name, err)
		}
		if _, err := tw.Write(e.entry.Data); err != nil {
			return FileDigest{}, fmt.Errorf("write %s: %w", hdr.Name, err)
		}
		h1.Write(e.entry.Data)
		h2.Write(e.entry.Data)
		return digest(), nil
	}
	f, err := os.Open(e.entry.Source)
	if err != nil {
		return FileDigest{}, fmt.Errorf("layer entry %s: %w", hdr.Name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return FileDigest{}, fmt.Errorf("layer entry %s: %w", hdr.Name, err)
	}
	if !info.Mode().IsRegular() {
		return FileDigest{}, fmt.Errorf("layer entry %s: %s is not a regular file", hdr.Name, e.entry.Source)
	}
	hdr.Size = info.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return FileDigest{}, fmt.Errorf("write tar header %s: %w", hdr.Name, err)
	}
	n, err := io.Copy(io.MultiWriter(tw, h1, h2), f)
	if err != nil {
		return FileDigest{}, fmt.Errorf("copy %s into layer: %w", e.entry.Source, err)
	}
	if n != hdr.Size {
		// A file that changes size while it is read must not be released.
		return FileDigest{}, fmt.Errorf("layer entry %s: %s changed size while being read (%d, then %d bytes)", hdr.Name, e.entry.Source, hdr.Size, n)
	}
	return digest(), nil
}

func newCompressor(w io.Writer, opts Options) (io.WriteCloser, error) {
	switch opts.Compression {
	case Gzip:
		level := opts.Level
		if level == 0 {
			level = gzip.DefaultCompression
		}
		zw, err := gzip.NewWriterLevel(w, level)
		if err != nil {
			return nil, fmt.Errorf("gzip level %d: %w", opts.Level, err)
		}
		// The header's name, comment and mtime stay empty/zero, so the
		// stream depends on the tar bytes alone.
		return zw, nil
	case Zstd:
		level := zstd.SpeedDefault
		if opts.Level != 0 {
			level = zstd.EncoderLevelFromZstd(opts.Level)
		}
		// One encoder goroutine: the frame layout must not depend on the
		// number of CPUs.
		zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd level %d: %w", opts.Level, err)
		}
		return zw, nil
	}
	_, err := opts.Compression.MediaType()
	return nil, err
}

type countingHash struct {
	h hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

type stacked struct {
	io.Reader
	closers []io.Closer
}

func (s *stacked) Close() error {
	var first error
	for _, c := range s.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
