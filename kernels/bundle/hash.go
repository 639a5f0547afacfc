// Package bundlehash computes the content hash of a contribution bundle:
// the identity a proposal is committed under, byte-compatible with the
// upstream Python SDK.
//
// The hash is one running SHA-256 over every regular file below the root,
// in Python pathlib order (component by component, so "a/b" < "a-c"), each
// file contributing a 4-byte big-endian path length, the UTF-8 POSIX
// relative path, an 8-byte big-endian content length and the content.
// Symbolic links and special files are skipped and never followed; so is
// anything under a __pycache__ or .git component, .pyc and .pyo files and
// AppleDouble names starting with "._". Modes, mtimes and the name of the
// root directory do not affect the hash.
package bundle

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cacheon/engine/internal/identity"
)

// CarrierReceiptName is the top-level validator carrier receipt that the
// committed variant of the hash leaves out.
const CarrierReceiptName = ".cacheon-native-artifact.json"

// ErrNoFiles is returned for a bundle with no hashable file.
var ErrNoFiles = errors.New("bundle has no files to hash")

// File is one hashed file of a bundle.
type File struct {
	Path string // POSIX path relative to the bundle root
	Size int64
}

// ContentHash returns the bundle content hash of the directory root.
func ContentHash(root string) (identity.Digest, error) {
	return hashTree(root, false)
}

// CommittedContentHash is ContentHash without the top-level carrier
// receipt; a file of the same name deeper in the tree is still hashed.
func CommittedContentHash(root string) (identity.Digest, error) {
	return hashTree(root, true)
}

// Files lists the files ContentHash covers, in hash order.
func Files(root string) ([]File, error) {
	w, err := walkTree(root, hashedPolicy)
	if err != nil {
		return nil, err
	}
	return w.t.Files, nil
}

// Skipped reports whether a relative POSIX path is outside every bundle
// identity by name alone (cache directories, bytecode, AppleDouble files).
func Skipped(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "__pycache__" || p == ".git" {
			return true
		}
	}
	name := parts[len(parts)-1]
	return strings.HasSuffix(name, ".pyc") || strings.HasSuffix(name, ".pyo") || strings.HasPrefix(name, "._")
}

// hashBufferSize is large enough that SHA-256 throughput, not syscalls,
// bounds hashing of big files.
const hashBufferSize = 1 << 20

func hashTree(root string, committed bool) (identity.Digest, error) {
	w, err := walkTree(root, hashedPolicy)
	if err != nil {
		return identity.Digest{}, err
	}
	return hashFiles(root, w.t.Files, committed)
}

// HashFiles returns the content hash (committed: without the top-level
// carrier receipt) of exactly the files of an inventory taken earlier,
// such as one that passed the intake limits: nothing is walked again, so
// a file added since then is not read. files must be in hash order
// (PathLess). Each file must still be a regular file of the size the
// inventory recorded; it is opened without blocking, checked through the
// opened descriptor, and never read past that size.
func HashFiles(root string, files []File, committed bool) (identity.Digest, error) {
	for i := range files {
		if !utf8.ValidString(files[i].Path) {
			return identity.Digest{}, fmt.Errorf("%s: path %q is not valid UTF-8", root, files[i].Path)
		}
		if i > 0 && !PathLess(files[i-1].Path, files[i].Path) {
			return identity.Digest{}, fmt.Errorf("%s: inventory is not in hash order at %q", root, files[i].Path)
		}
	}
	return hashFiles(root, files, committed)
}

func hashFiles(root string, files []File, committed bool) (identity.Digest, error) {
	h := sha256.New()
	buf := make([]byte, hashBufferSize)
	var hashed int
	for _, f := range files {
		if committed && f.Path == CarrierReceiptName {
			continue
		}
		if err := hashFile(h, root, f, buf); err != nil {
			return identity.Digest{}, err
		}
		hashed++
	}
	if hashed == 0 {
		return identity.Digest{}, fmt.Errorf("%s: %w", root, ErrNoFiles)
	}
	return identity.SHA256Sum([32]byte(h.Sum(nil))), nil
}

// hashFile hashes one file of the inventory. The size the walk saw is the
// size hashed: a file that grew or shrank since is refused, and at most
// one byte more than that size is ever read, so a file growing without
// end cannot hold the hash.
func hashFile(h io.Writer, root string, f File, buf []byte) error {
	full := filepath.Join(root, filepath.FromSlash(f.Path))
	fh, info, err := OpenRegular(full)
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return fmt.Errorf("%s: changed into a non-regular file while hashing: %w", full, err)
		}
		return fmt.Errorf("%s: %w", full, err)
	}
	defer fh.Close()
	if info.Size() != f.Size {
		return fmt.Errorf("%s: size changed while hashing (walked %d bytes, now %d)", full, f.Size, info.Size())
	}
	writeFrameHeader(h, f.Path, f.Size)
	n, err := io.CopyBuffer(h, io.LimitReader(fh, f.Size+1), buf)
	if err != nil {
		return fmt.Errorf("%s: %w", full, err)
	}
	if n != f.Size {
		return fmt.Errorf("%s: size changed while hashing (walked %d bytes, read %d)", full, f.Size, n)
	}
	return nil
}

// writeFrameHeader writes what precedes a file's bytes in the content
// hash: the path's length (4 bytes, big-endian), the path, and the
// contents' length (8 bytes, big-endian).
func writeFrameHeader(h io.Writer, path string, size int64) {
	var header [8]byte
	binary.BigEndian.PutUint32(header[:4], uint32(len(path)))
	h.Write(header[:4])
	io.WriteString(h, path)
	binary.BigEndian.PutUint64(header[:], uint64(size))
	h.Write(header[:])
}

// writeFileFrame writes one file held in memory into the content hash.
func writeFileFrame(h io.Writer, path string, data []byte) {
	writeFrameHeader(h, path, int64(len(data)))
	h.Write(data)
}

// MemFile is one file of a tree held in memory (see ContentHashOf).
type MemFile struct {
	Path string // POSIX path relative to the tree's root
	Data []byte
}

// ContentHashOf is ContentHash of a tree held in memory, such as one read
// from a verified image layer: the same files (Skipped paths left out;
// a tree in memory has no links or special files), the same order and
// framing, so a tree has one content hash whether it is on disk or not.
func ContentHashOf(files []MemFile) (identity.Digest, error) {
	kept := make([]MemFile, 0, len(files))
	for _, f := range files {
		if !utf8.ValidString(f.Path) {
			return identity.Digest{}, fmt.Errorf("path %q is not valid UTF-8", f.Path)
		}
		if !Skipped(f.Path) {
			kept = append(kept, f)
		}
	}
	if len(kept) == 0 {
		return identity.Digest{}, ErrNoFiles
	}
	sort.Slice(kept, func(i, j int) bool { return PathLess(kept[i].Path, kept[j].Path) })
	h := sha256.New()
	for i, f := range kept {
		if i > 0 && kept[i-1].Path == f.Path {
			return identity.Digest{}, fmt.Errorf("path %q listed twice", f.Path)
		}
		writeFileFrame(h, f.Path, f.Data)
	}
	return identity.SHA256Sum([32]byte(h.Sum(nil))), nil
}

// PathLess orders POSIX relative paths the way Python's PurePosixPath
// does: component by component, each compared by code point.
func PathLess(a, b string) bool {
	for {
		ai := strings.IndexByte(a, '/')
		bi := strings.IndexByte(b, '/')
		ac, bc := a, b
		if ai >= 0 {
			ac = a[:ai]
		}
		if bi >= 0 {
			bc = b[:bi]
		}
		if ac != bc {
			return ac < bc
		}
		if ai < 0 || bi < 0 {
			// One path is a prefix of the other by components: the
			// shorter sorts first.
			return ai < 0 && bi >= 0
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}
