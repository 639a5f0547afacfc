package manifest

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cacheon/engine/tools/bundlehash"
)

// Intake limits on a bundle tree (validator policy; the same limits bound
// an archive before extraction).
const (
	MaxFiles                = 4096
	MaxFileBytes            = 16 << 20
	MaxInspectableFileBytes = 8 << 20
	MaxInspectableBytes     = 32 << 20
	MaxTotalBytes           = 256 << 20
)

// inspectableSuffixes are the files a validator reads as text (scanned,
// parsed or diffed), which get the tighter per-file and total limits.
var inspectableSuffixes = []string{".py", ".cu", ".cuh", ".patch", ".diff", ".toml", ".json"}

// IsInspectable reports whether a bundle path is read as text.
func IsInspectable(rel string) bool {
	for _, s := range inspectableSuffixes {
		if strings.HasSuffix(rel, s) {
			return true
		}
	}
	return false
}

// Tree is the inventory of a bundle directory that passed the intake
// limits: every regular file, in Python path order, with its size.
type Tree struct {
	Root             string
	Files            []bundlehash.File
	TotalBytes       int64
	InspectableBytes int64
}

// Has reports whether the tree holds the file rel (clean POSIX path).
func (t *Tree) Has(rel string) bool {
	i := sort.Search(len(t.Files), func(i int) bool { return !bundlehash.PathLess(t.Files[i].Path, rel) })
	return i < len(t.Files) && t.Files[i].Path == rel
}

// ReadTree walks a bundle directory and enforces the intake limits: at most
// MaxFiles files, MaxFileBytes per file (MaxInspectableFileBytes for text
// the validator reads), MaxInspectableBytes of such text and MaxTotalBytes
// in all. Symbolic links and special files anywhere are rejected, never
// followed. Directories and files outside every bundle identity
// (__pycache__, .git, bytecode, AppleDouble names) are not counted.
func ReadTree(root string) (*Tree, error) {
	t := &Tree{Root: root}
	info, err := lstat(root)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, newError(ErrLimit, root, "", "bundle root is not a directory")
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		mode := d.Type()
		switch {
		case mode&fs.ModeSymlink != 0:
			return newError(ErrLimit, rel, "", "symbolic link; bundles may not contain links")
		case d.IsDir():
			if d.Name() == "__pycache__" || d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		case !mode.IsRegular():
			return newError(ErrLimit, rel, "", "special file (%s); bundles hold only regular files", mode.Type())
		}
		if bundlehash.Skipped(rel) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		size := fi.Size()
		if len(t.Files) >= MaxFiles {
			return newError(ErrLimit, rel, "", "bundle has more than %d files", MaxFiles)
		}
		if size > MaxFileBytes {
			return newError(ErrLimit, rel, "", "file is %d bytes; at most %d are allowed", size, MaxFileBytes)
		}
		if IsInspectable(rel) {
			if size > MaxInspectableFileBytes {
				return newError(ErrLimit, rel, "", "inspectable file is %d bytes; at most %d are allowed", size, MaxInspectableFileBytes)
			}
			t.InspectableBytes += size
			if t.InspectableBytes > MaxInspectableBytes {
				return newError(ErrLimit, rel, "", "inspectable files exceed %d bytes in total", MaxInspectableBytes)
			}
		}
		t.TotalBytes += size
		if t.TotalBytes > MaxTotalBytes {
			return newError(ErrLimit, rel, "", "bundle exceeds %d bytes in total", MaxTotalBytes)
		}
		t.Files = append(t.Files, bundlehash.File{Path: rel, Size: size})
		return nil
	})
	if err != nil {
		if _, ok := err.(*Error); ok {
			return nil, err
		}
		return nil, fmt.Errorf("read bundle %s: %w", root, err)
	}
	sort.Slice(t.Files, func(i, j int) bool { return bundlehash.PathLess(t.Files[i].Path, t.Files[j].Path) })
	return t, nil
}

func lstat(p string) (fs.FileInfo, error) {
	info, err := lstatFn(p)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	return info, nil
}
