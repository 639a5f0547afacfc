package bundle

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/cacheon/engine/internal/identity"
)

// Intake limits on a bundle tree (validator policy; the same limits bound
// an archive before extraction, and `cacheon hash` applies them too).
const (
	MaxFiles                = 4096
	MaxFileBytes            = 16 << 20
	MaxInspectableFileBytes = 8 << 20
	MaxInspectableBytes     = 32 << 20
	MaxTotalBytes           = 256 << 20
	// MaxDirs bounds the directories below the root. Empty directories
	// hash to nothing, so without it a tree of them costs walking time
	// and counts against no other limit.
	MaxDirs = 1024
)

// maxTreeEntries bounds every entry the walk meets, ignored bytecode and
// AppleDouble files included: no valid tree has more.
const maxTreeEntries = MaxFiles + MaxDirs

// dirReadBatch is how many entries the walk reads from a directory at a
// time, so a huge directory is refused after maxTreeEntries entries
// rather than listed whole.
const dirReadBatch = 256

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
	Files            []File
	TotalBytes       int64
	InspectableBytes int64
}

// Has reports whether the tree holds the file rel (clean POSIX path).
func (t *Tree) Has(rel string) bool {
	i := sort.Search(len(t.Files), func(i int) bool { return !PathLess(t.Files[i].Path, rel) })
	return i < len(t.Files) && t.Files[i].Path == rel
}

// ReadTree walks a bundle directory and enforces the intake limits: at most
// MaxFiles files, MaxFileBytes per file (MaxInspectableFileBytes for text
// the validator reads), MaxInspectableBytes of such text, MaxTotalBytes in
// all and MaxDirs directories. Symbolic links and special files anywhere
// are rejected, never followed, and so are names that break the path
// rules (see CheckBundlePaths). Directories and files outside every bundle
// identity (__pycache__, .git, bytecode, AppleDouble names) are not
// counted as files, but every entry the walk meets counts against a bound,
// and directories are read in batches, so no tree costs more than the
// limits allow before it is refused.
func ReadTree(root string) (*Tree, error) {
	w, err := walkTree(root, intakePolicy)
	if err != nil {
		return nil, err
	}
	return w.t, nil
}

// walkPolicy is what a walk does with what it meets. It is the one place
// the link and special-file policy of a bundle tree is decided.
type walkPolicy int

const (
	// intakePolicy is ReadTree's: links, special files and names that
	// break the path rules are refused, and the intake limits apply.
	intakePolicy walkPolicy = iota
	// hashedPolicy walks the set the content hash covers, as upstream
	// does: links and special files are skipped (never followed), and no
	// limit applies, since a substrate or engine tree is hashed the same
	// way and is far larger than a bundle.
	hashedPolicy
)

// walkTree is ReadTree under policy that also keeps what the walk saw of
// each file (its lstat status) and the directories it entered, for Open
// and OpenHashed.
func walkTree(root string, policy walkPolicy) (*treeWalker, error) {
	t := &Tree{Root: root}
	info, err := lstat(root)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, newError(ErrEntry, root, "", "bundle root is not a directory")
	}
	w := &treeWalker{t: t, policy: policy, names: newNameIndex(), seen: map[string]fs.FileInfo{}, dirSet: map[string]bool{".": true}}
	if err := w.dir(root, ""); err != nil {
		if _, ok := err.(*Error); ok {
			return nil, err
		}
		return nil, fmt.Errorf("read bundle %s: %w", root, err)
	}
	sort.Slice(t.Files, func(i, j int) bool { return PathLess(t.Files[i].Path, t.Files[j].Path) })
	return w, nil
}

// ContentHash is the content hash (committed: without the top-level
// carrier receipt) of exactly the files this tree holds, each read no
// further than the size the walk saw. Identical to ContentHash
// of the directory while it does not change.
func (t *Tree) ContentHash(committed bool) (identity.Digest, error) {
	return HashFiles(t.Root, t.Files, committed)
}

// treeWalker is the state of one ReadTree walk.
type treeWalker struct {
	t       *Tree
	policy  walkPolicy
	dirs    int
	entries int
	names   *nameIndex
	// seen is each file's status as the walk found it, so that a later
	// read can tell the file it opens is the one the limits passed.
	seen map[string]fs.FileInfo
	// dirSet holds every directory the walk entered ("." is the root).
	dirSet map[string]bool
}

// dir walks the directory abs, whose bundle path is rel ("" for the
// root), in name order.
func (w *treeWalker) dir(abs, rel string) error {
	entries, err := w.readDir(abs, rel)
	if err != nil {
		return err
	}
	for _, d := range entries {
		name := d.Name()
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		if !utf8.ValidString(name) {
			return newError(ErrPath, strings.ToValidUTF8(childRel, "\uFFFD"), "", "name is not valid UTF-8; bundle paths are UTF-8 text")
		}
		mode := d.Type()
		switch {
		case mode&fs.ModeSymlink != 0:
			if w.policy == hashedPolicy {
				continue // never followed, never hashed
			}
			return newError(ErrEntry, childRel, "", "symbolic link; bundles may not contain links")
		case d.IsDir():
			if name == "__pycache__" || name == ".git" {
				continue
			}
			if w.policy == intakePolicy {
				w.dirs++
				if w.dirs > MaxDirs {
					return newError(ErrLimit, childRel, "", "bundle has more than %d directories", MaxDirs)
				}
				if err := w.names.add(childRel, true); err != nil {
					return err
				}
			}
			w.dirSet[childRel] = true
			if err := w.dir(filepath.Join(abs, name), childRel); err != nil {
				return err
			}
			continue
		case !mode.IsRegular():
			if w.policy == hashedPolicy {
				continue // sockets, fifos, devices
			}
			return newError(ErrEntry, childRel, "", "special file (%s); bundles hold only regular files", mode.Type())
		}
		if Skipped(childRel) {
			continue
		}
		if err := w.file(d, childRel); err != nil {
			return err
		}
	}
	return nil
}

// readDir lists a directory in batches, refusing it once the walk has met
// more entries than any valid tree holds, and sorts the entries by name.
func (w *treeWalker) readDir(abs, rel string) ([]fs.DirEntry, error) {
	f, err := OpenDir(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []fs.DirEntry
	for {
		batch, err := f.ReadDir(dirReadBatch)
		out = append(out, batch...)
		w.entries += len(batch)
		if w.policy == intakePolicy && w.entries > maxTreeEntries {
			where := rel
			if where == "" {
				where = "."
			}
			return nil, newError(ErrLimit, where, "", "bundle has more than %d entries (files, directories and ignored files together)", maxTreeEntries)
		}
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (w *treeWalker) file(d fs.DirEntry, rel string) error {
	t := w.t
	if w.policy == hashedPolicy {
		fi, err := d.Info()
		if err != nil {
			return err
		}
		t.Files = append(t.Files, File{Path: rel, Size: fi.Size()})
		t.TotalBytes += fi.Size()
		w.seen[rel] = fi
		return nil
	}
	if err := CheckLogicalPath(rel); err != nil {
		return newError(ErrPath, rel, "", "%v", err)
	}
	if err := w.names.add(rel, false); err != nil {
		return err
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
	t.Files = append(t.Files, File{Path: rel, Size: size})
	w.seen[rel] = fi
	return nil
}

func lstat(p string) (fs.FileInfo, error) {
	info, err := lstatFn(p)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	return info, nil
}
