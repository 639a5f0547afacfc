package layer

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/cacheon/engine/internal/reject"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Limits on reading a layer back. A layer is read only after its
// compressed bytes matched their digest, but the digest says nothing about
// what they expand to: a few kilobytes of gzip can claim gigabytes.
const (
	// MaxUncompressedSize bounds the tar stream of one layer.
	MaxUncompressedSize int64 = 64 << 30
	// MaxExpansionRatio bounds the tar stream to this many times the
	// compressed size. Release layers (Python source, small binaries)
	// compress by less than 10; deflate's ceiling is about 1032.
	MaxExpansionRatio = 100
	// MinExpansionAllowance is what any layer may expand to whatever its
	// compressed size, so a tiny layer (an empty tar is 10 KiB of zeros)
	// is not refused for its ratio.
	MinExpansionAllowance int64 = 16 << 20
	// maxZstdWindow bounds the zstd decoder's window (our writer uses
	// 8 MiB at its default level); a frame asking for more is refused
	// instead of allocated.
	maxZstdWindow = 64 << 20
)

// ExpansionLimit is the most uncompressed bytes a layer of compressedSize
// compressed bytes may expand to.
func ExpansionLimit(compressedSize int64) int64 {
	if compressedSize < 0 {
		return MinExpansionAllowance
	}
	if compressedSize > MaxUncompressedSize/MaxExpansionRatio {
		return MaxUncompressedSize
	}
	return max(MinExpansionAllowance, compressedSize*MaxExpansionRatio)
}

// Decompress wraps a compressed layer stream of the given OCI media type
// in a reader of its tar bytes, with no limit: it is for layers this
// package wrote. Layers read from a store go through DecompressLimited.
// Closing the result closes rc.
func Decompress(rc io.ReadCloser, mediaType string) (io.ReadCloser, error) {
	return decompress(rc, mediaType)
}

// DecompressLimited is Decompress for a layer of compressedSize bytes from
// elsewhere: the tar stream ends with an error wrapping ErrTooLarge past
// ExpansionLimit(compressedSize), and an invalid compressed stream is an
// error wrapping ErrCompression (errors of rc itself are passed through).
func DecompressLimited(rc io.ReadCloser, mediaType string, compressedSize int64) (io.ReadCloser, error) {
	return decompressLimited(rc, mediaType, ExpansionLimit(compressedSize))
}

func decompressLimited(rc io.ReadCloser, mediaType string, limit int64) (io.ReadCloser, error) {
	src := &sourceReader{r: rc}
	zr, err := decompress(struct {
		io.Reader
		io.Closer
	}{src, rc}, mediaType)
	if err != nil {
		if src.err != nil && errors.Is(err, src.err) {
			return nil, err
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, zstd.ErrMagicMismatch) {
			return nil, fmt.Errorf("%w: %v", ErrCompression, err)
		}
		return nil, err
	}
	return &limitedStream{rc: zr, src: src, limit: limit}, nil
}

// sourceReader remembers the error of the compressed source, so that
// errors of the decompressor can be told apart from I/O errors.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

type limitedStream struct {
	rc    io.ReadCloser
	src   *sourceReader
	limit int64
	n     int64
	err   error
}

func (l *limitedStream) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if rest := l.limit - l.n + 1; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := l.rc.Read(p)
	l.n += int64(n)
	if l.n > l.limit {
		l.err = fmt.Errorf("%w: the tar stream is larger than %d bytes (limits: %d times the compressed size, at least %d, at most %d bytes)",
			ErrTooLarge, l.limit, MaxExpansionRatio, MinExpansionAllowance, MaxUncompressedSize)
		return n - int(l.n-l.limit), l.err
	}
	if err != nil && err != io.EOF {
		if l.src.err == nil || !errors.Is(err, l.src.err) {
			err = fmt.Errorf("%w: %v", ErrCompression, err)
		}
		l.err = err
	}
	return n, err
}

func (l *limitedStream) Close() error { return l.rc.Close() }

func decompress(rc io.ReadCloser, mediaType string) (io.ReadCloser, error) {
	switch {
	case strings.HasSuffix(mediaType, "+gzip"), mediaType == "application/vnd.docker.image.rootfs.diff.tar.gzip":
		// klauspost/compress's gzip reader (the module already pinned for
		// zstd) reads the same format about 1.5 times as fast as the
		// standard library's; layers are written with the standard
		// library's writer, whose bytes the release digests pin.
		zr, err := gzip.NewReader(rc)
		if err != nil {
			return nil, fmt.Errorf("open gzip layer: %w", err)
		}
		return &stacked{Reader: zr, closers: []io.Closer{zr, rc}}, nil
	case strings.HasSuffix(mediaType, "+zstd"):
		zr, err := zstd.NewReader(rc, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderMaxMemory(maxZstdWindow))
		if err != nil {
			return nil, fmt.Errorf("open zstd layer: %w", err)
		}
		return &stacked{Reader: zr, closers: []io.Closer{closerFunc(func() error { zr.Close(); return nil }), rc}}, nil
	case strings.HasSuffix(mediaType, ".tar"):
		return rc, nil
	}
	return nil, reject.Errorf("layer media type %q: unknown compression", mediaType)
}

// entryName validates a tar header's name and returns it as a clean
// relative slash path ("" for the root directory itself). One leading
// "./" is accepted (tar's own convention); an absolute name, a ".."
// component, a name that is not clean, NUL or a backslash is refused.
func entryName(hdr *tar.Header) (string, error) {
	name := strings.TrimPrefix(hdr.Name, "./")
	if hdr.Typeflag == tar.TypeDir {
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			return "", nil
		}
	}
	if err := checkPath(name); err != nil {
		return "", &EntryError{Name: hdr.Name, Err: ErrUnsafePath, Detail: "want a clean relative path inside the layer, with no \"..\", NUL or backslash"}
	}
	return name, nil
}

// each reads a layer tar and calls fn for every directory and regular
// file, after checking its name and type; it is the one reader of layer
// tars, so every caller refuses the same entries.
func each(r io.Reader, fn func(hdr *tar.Header, name string, contents io.Reader) error) error {
	tr := tar.NewReader(r)
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if IsRejection(err) {
				return err
			}
			if errors.Is(err, tar.ErrHeader) || errors.Is(err, tar.ErrFieldTooLong) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			return fmt.Errorf("read layer tar: %w", err)
		}
		if sparse(hdr) {
			// A sparse entry expands its holes to zeros that are in no
			// byte of the stream: no limit on the stream bounds it.
			return &EntryError{Name: hdr.Name, Err: ErrNotRegular, Detail: "a sparse file"}
		}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeReg:
		case tar.TypeSymlink, tar.TypeLink:
			return &EntryError{Name: hdr.Name, Err: ErrNotRegular, Detail: fmt.Sprintf("a link to %q (release layers hold no links)", hdr.Linkname)}
		default:
			return &EntryError{Name: hdr.Name, Err: ErrNotRegular, Detail: fmt.Sprintf("tar type %q", hdr.Typeflag)}
		}
		name, err := entryName(hdr)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		if seen[name] {
			return &EntryError{Name: hdr.Name, Err: ErrDuplicateEntry}
		}
		seen[name] = true
		if err := fn(hdr, name, tr); err != nil {
			return err
		}
	}
}

func sparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// Walk reads an uncompressed layer tar and calls fn for every regular file
// with its clean slash path (no leading "./") and contents. Directories
// are skipped. A link, device, FIFO or other special entry is an error
// wrapping ErrNotRegular; an absolute or climbing name one wrapping
// ErrUnsafePath; a name listed twice one wrapping ErrDuplicateEntry.
func Walk(r io.Reader, fn func(name string, executable bool, contents io.Reader) error) error {
	return each(r, func(hdr *tar.Header, name string, contents io.Reader) error {
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		return fn(name, hdr.Mode&0o111 != 0, contents)
	})
}

// Extract writes the regular files and directories of an uncompressed
// layer tar under dest (which must exist); see Unpack.
func Extract(r io.Reader, dest string) error { return Unpack(r, dest, nil) }

// Unpack is the one safe unpacker of layer tars: it refuses what Walk
// refuses and writes the regular files and directories under dest (which
// must exist) and nowhere else, through an os.Root, so no entry and no
// link on disk can reach outside it; a file that already exists is not
// overwritten. Modes are the entries' (0644 or 0755); times are not
// restored. When fn is not nil it sees every regular file's contents as
// they are written (what it leaves unread is still written).
func Unpack(r io.Reader, dest string, fn func(name string, executable bool, contents io.Reader) error) error {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return err
	}
	defer root.Close()
	return each(r, func(hdr *tar.Header, name string, contents io.Reader) error {
		native := filepath.FromSlash(name)
		if hdr.Typeflag == tar.TypeDir {
			return root.MkdirAll(native, 0o755)
		}
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
				return fmt.Errorf("extract %s: %w", name, err)
			}
		}
		mode := fs.FileMode(0o644)
		if hdr.Mode&0o111 != 0 {
			mode = 0o755
		}
		f, err := root.OpenFile(native, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return fmt.Errorf("extract %s: %w", name, err)
		}
		if fn != nil {
			tee := io.TeeReader(contents, f)
			err = fn(name, hdr.Mode&0o111 != 0, tee)
			if err == nil {
				_, err = io.Copy(io.Discard, tee)
			}
		} else {
			_, err = io.Copy(f, contents)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("extract %s: %w", name, err)
		}
		return nil
	})
}
