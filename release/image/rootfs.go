package image

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/internal/reject"
)

// ErrRootfs is wrapped when a layer cannot be applied to a root
// filesystem (an unsafe name, a device, a link leaving the root).
var ErrRootfs = reject.New("layer cannot be applied to a root filesystem")

// UnpackRootfs applies every layer of img, in order, to the existing
// directory dest, the way a container runtime prepares an image's root
// filesystem: directories, files, symbolic and hard links, and OCI
// whiteouts. Unlike Unpack (for release layers, which hold no links) it
// accepts links, because a base image is made of them; every operation
// goes through an os.Root, so no entry and no link, absolute or
// relative, makes it write outside dest. Owners are not restored and
// setuid/setgid bits are dropped. It trusts img to serve the bytes its
// digests name: verify the release first.
func UnpackRootfs(img v1.Image, dest string) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return err
	}
	defer root.Close()
	for i, l := range layers {
		if err := applyLayer(root, l); err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return nil
}

func applyLayer(root *os.Root, l v1.Layer) error {
	want, err := l.Digest()
	if err != nil {
		return err
	}
	// The bytes are hashed as they are unpacked: a store that serves
	// other bytes than it served the verifier fails the unpack (its
	// caller then discards the half-written tree).
	h := sha256.New()
	rc, err := OpenLayer(l, h)
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	// What this layer wrote: an opaque whiteout hides only lower layers.
	written := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			// Drain what the tar reader left (padding), then compare.
			if _, err := io.Copy(io.Discard, rc); err != nil {
				return err
			}
			if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want.String() {
				return fmt.Errorf("%w: the layer's bytes hash to %s, want %s", ErrRootfs, got, want)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrRootfs, err)
		}
		if err := applyEntry(root, hdr, tr, written); err != nil {
			if !errors.Is(err, ErrRootfs) && strings.Contains(err.Error(), "path escapes from parent") {
				// os.Root refused to follow a link out of the root;
				// its error is not exported, only its message.
				err = fmt.Errorf("%w: %v", ErrRootfs, err)
			}
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
	}
}

// rootfsName cleans a tar name into a slash path relative to the root
// ("" for the root itself).
func rootfsName(name string) (string, error) {
	n := strings.TrimSuffix(strings.TrimPrefix(name, "./"), "/")
	if n == "" || n == "." {
		return "", nil
	}
	if strings.HasPrefix(n, "/") || path.Clean(n) != n || n == ".." || strings.HasPrefix(n, "../") || strings.ContainsAny(n, "\x00\\") {
		return "", fmt.Errorf("%w: want a clean relative path", ErrRootfs)
	}
	return n, nil
}

func applyEntry(root *os.Root, hdr *tar.Header, r io.Reader, written map[string]bool) error {
	name, err := rootfsName(hdr.Name)
	if err != nil || name == "" {
		return err
	}
	written[name] = true
	native := filepath.FromSlash(name)
	dir, base := path.Split(name)
	if dir != "" {
		if err := root.MkdirAll(filepath.FromSlash(strings.TrimSuffix(dir, "/")), 0o755); err != nil {
			return err
		}
	}
	// Whiteouts delete what lower layers put there.
	if base == ".wh..wh..opq" {
		return clearDir(root, strings.TrimSuffix(dir, "/"), written)
	}
	if strings.HasPrefix(base, ".wh.") {
		return root.RemoveAll(filepath.FromSlash(dir + strings.TrimPrefix(base, ".wh.")))
	}
	mode := fs.FileMode(hdr.Mode) & (fs.ModePerm | fs.ModeSticky)
	if hdr.Mode&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	existing, statErr := root.Lstat(native)
	if hdr.Typeflag == tar.TypeDir {
		if statErr == nil && existing.IsDir() {
			return root.Chmod(native, mode)
		}
		if statErr == nil {
			if err := root.Remove(native); err != nil {
				return err
			}
		}
		if err := root.Mkdir(native, 0o755); err != nil {
			return err
		}
		return root.Chmod(native, mode)
	}
	// A later layer's entry replaces what is there (a directory only
	// when the new entry is not one: OCI's rule).
	if statErr == nil {
		if err := root.RemoveAll(native); err != nil {
			return err
		}
	} else if !errors.Is(statErr, fs.ErrNotExist) {
		return statErr
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		f, err := root.OpenFile(native, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		return root.Chmod(native, mode)
	case tar.TypeSymlink:
		return root.Symlink(hdr.Linkname, native)
	case tar.TypeLink:
		src, err := rootfsName(hdr.Linkname)
		if err != nil || src == "" {
			return fmt.Errorf("%w: hard link to %q", ErrRootfs, hdr.Linkname)
		}
		return root.Link(filepath.FromSlash(src), native)
	}
	return fmt.Errorf("%w: tar type %q (devices, FIFOs and sparse files are not unpacked)", ErrRootfs, hdr.Typeflag)
}

// clearDir removes what lower layers put in dir (a slash path), keeping
// what this layer wrote there.
func clearDir(root *os.Root, dir string, written map[string]bool) error {
	native := filepath.FromSlash(dir)
	if dir == "" {
		native = "."
	}
	f, err := root.Open(native)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		child := path.Join(dir, n)
		switch {
		case written[child]:
		case writtenUnder(written, child):
			// A directory this layer only wrote into: clear the rest.
			if err := clearDir(root, child, written); err != nil {
				return err
			}
		default:
			if err := root.RemoveAll(filepath.Join(native, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

func writtenUnder(written map[string]bool, dir string) bool {
	for p := range written {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}
