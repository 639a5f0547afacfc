package atomicwrite

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Modes of every published tree. Files are read-only so a consumer cannot
// edit an engine in place without the change being visible as a new tree.
const (
	FileMode fs.FileMode = 0o444
	DirMode  fs.FileMode = 0o755
)

// epoch is the access and modification time of everything in a tree, so
// that archiving the tree (tar, OCI layers) never records a build time.
var epoch = time.Unix(0, 0)

// File is one regular file of a tree to write. Exactly one of Data and From
// supplies the contents.
type File struct {
	Path string // slash-separated, relative, clean: "pkg/mod.py"
	Data []byte // the contents, when held in memory
	From string // otherwise a regular file whose contents are copied
	// SHA256, when set, is the lowercase hex digest the contents must
	// have; a file copied from a source that changed is rejected.
	SHA256 string
}

// Written describes one file of a published tree.
type Written struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// ErrExists is returned when the destination of WriteTree exists.
var ErrExists = errors.New("destination exists")

// Option configures WriteTree.
type Option func(*options)

type options struct {
	afterFile     func(n int, path string)
	beforePublish func(tmp string)
	step          func(step string)
}

// AfterFile calls fn each time a file has been written and synced inside
// the temporary tree, before the tree is published, with the count of
// files written so far (from 1). Calls are serialized. It lets
// fault-injection tests stop a writer at a known point.
func AfterFile(fn func(n int, path string)) Option {
	return func(o *options) { o.afterFile = fn }
}

// BeforePublish calls fn with the temporary tree's path after it was
// reopened and verified, just before it is renamed into place. It lets
// fault-injection tests change the tree in that window.
func BeforePublish(fn func(tmp string)) Option {
	return func(o *options) { o.beforePublish = fn }
}

// Steps calls fn at each step of WriteFileWith (FileSteps, in order). It lets
// crash tests kill a writer between a file's temporary write, its rename
// and its directory sync; WriteTree ignores it.
func Steps(fn func(step string)) Option {
	return func(o *options) { o.step = fn }
}

// WriteTree publishes files as a new directory dest, which must not exist.
// It returns the inventory of the published files sorted by path string.
// On error nothing exists at dest and the temporary tree is removed.
func WriteTree(dest string, files []File, opts ...Option) (written []Written, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	sorted, dirs, err := planTree(files)
	if err != nil {
		return nil, err
	}
	dest = filepath.Clean(dest)
	if _, err := os.Lstat(dest); err == nil {
		return nil, fmt.Errorf("write tree %s: %w", dest, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("write tree %s: %w", dest, err)
	}
	parent := filepath.Dir(dest)
	if _, err := RemoveStale(dest); err != nil {
		return nil, err
	}
	scratch, err := MkdirScratch(dest, KindTmp)
	if err != nil {
		return nil, fmt.Errorf("create temporary tree beside %s: %w", dest, err)
	}
	tmp := scratch.Path
	published := false
	defer func() {
		if err == nil {
			scratch.Unlock()
			return
		}
		scratch.Remove()
		if published {
			os.RemoveAll(dest)
		}
	}()

	if written, err = fill(tmp, sorted, dirs, o); err != nil {
		return nil, err
	}
	ids, err := verifyTree(tmp, written)
	if err != nil {
		return nil, fmt.Errorf("reopen temporary tree for %s: %w", dest, err)
	}
	if o.beforePublish != nil {
		o.beforePublish(tmp)
	}
	if err := renameNoReplace(tmp, dest); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("write tree %s: %w", dest, ErrExists)
		}
		return nil, fmt.Errorf("publish tree %s: %w", dest, err)
	}
	published = true
	if err := syncDir(parent); err != nil {
		return nil, err
	}
	// The bytes were read back from the temporary tree; the published one
	// must be that tree, untouched since: the same files and inodes, no
	// write since the read. That is checked from their status alone.
	if err := verifyUnchanged(dest, written, ids); err != nil {
		return nil, fmt.Errorf("reopen published tree %s: %w", dest, err)
	}
	// Reading the tree back may have moved access times (relatime), so
	// they are pinned once more and checked without reading contents.
	if err := pinTimes(dest, dirs, written); err != nil {
		return nil, err
	}
	if err := checkTimes(dest, dirs, written); err != nil {
		return nil, fmt.Errorf("reopen published tree %s: %w", dest, err)
	}
	return written, nil
}

// planTree validates the paths, sorts the files by path string and returns
// the directories they imply, parents before children.
func planTree(files []File) ([]File, []string, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	isFile := make(map[string]bool, len(sorted))
	dirSet := map[string]bool{}
	for i, f := range sorted {
		if err := checkRelPath(f.Path); err != nil {
			return nil, nil, err
		}
		if i > 0 && sorted[i-1].Path == f.Path {
			return nil, nil, fmt.Errorf("tree file %q: listed twice", f.Path)
		}
		if (f.Data != nil) == (f.From != "") {
			return nil, nil, fmt.Errorf("tree file %q: exactly one of Data and From must be set", f.Path)
		}
		isFile[f.Path] = true
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			dirSet[d] = true
		}
	}
	dirs := make([]string, 0, len(dirSet))
	for d := range dirSet {
		if isFile[d] {
			return nil, nil, fmt.Errorf("tree file %q: also needed as a directory", d)
		}
		dirs = append(dirs, d)
	}
	sort.Strings(dirs) // a parent is a prefix, so it sorts before its children
	return sorted, dirs, nil
}

func checkRelPath(p string) error {
	switch {
	case p == "":
		return errors.New("tree file with an empty path")
	case !utf8.ValidString(p) || strings.ContainsAny(p, "\x00\\"):
		return fmt.Errorf("tree file %q: path must be valid UTF-8 without NUL or backslash", p)
	case path.IsAbs(p) || path.Clean(p) != p:
		return fmt.Errorf("tree file %q: path must be relative and clean", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("tree file %q: path escapes the tree", p)
	}
	return nil
}

func fill(root string, files []File, dirs []string, o options) ([]Written, error) {
	if err := os.Chmod(root, DirMode); err != nil {
		return nil, fmt.Errorf("chmod %s: %w", root, err)
	}
	for _, d := range dirs {
		full := filepath.Join(root, filepath.FromSlash(d))
		if err := os.Mkdir(full, 0o700); err != nil {
			return nil, fmt.Errorf("create directory %s: %w", full, err)
		}
		if err := os.Chmod(full, DirMode); err != nil {
			return nil, fmt.Errorf("chmod %s: %w", full, err)
		}
	}
	written, err := writeAll(root, files, o)
	if err != nil {
		return nil, err
	}
	// Entries become durable when their directories are synced; children
	// first so a crash never leaves a synced parent naming unsynced data.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syncDir(filepath.Join(root, filepath.FromSlash(dirs[i]))); err != nil {
			return nil, err
		}
	}
	if err := syncDir(root); err != nil {
		return nil, err
	}
	if err := pinTimes(root, dirs, written); err != nil {
		return nil, err
	}
	return written, nil
}

// writeAll writes the files with one worker per CPU (each file is
// written, hashed and synced independently; the tree is the same whatever
// the order) and returns their inventory in path order.
//
// Where the platform can start a file's writeback without waiting for it
// (Linux), every file is written first, its writeback started as soon as
// its bytes are in, and only then is each one synced, so the disk works
// on one file while the next is written and the syncs mostly find their
// data already on the way. Each file is reopened for its sync, and
// refused unless it is still the inode this call created. Elsewhere each
// file is synced as soon as it is written.
func writeAll(root string, files []File, o options) ([]Written, error) {
	written := make([]Written, len(files))
	ids := make([]fileID, len(files))
	var mu sync.Mutex
	done := 0
	after := func(i int) {
		if o.afterFile != nil {
			mu.Lock()
			done++
			o.afterFile(done, files[i].Path)
			mu.Unlock()
		}
	}
	err := eachFile(len(files), func() func(int) error {
		h := sha256.New()
		buf := make([]byte, 1<<20)
		return func(i int) (err error) {
			written[i], ids[i], err = writeOne(root, files[i], h, buf)
			if err == nil && !deferSync {
				after(i)
			}
			return err
		}
	})
	if err != nil || !deferSync {
		return written, err
	}
	err = eachFile(len(files), func() func(int) error {
		return func(i int) error {
			if err := syncWritten(filepath.Join(root, filepath.FromSlash(files[i].Path)), ids[i]); err != nil {
				return err
			}
			after(i)
			return nil
		}
	})
	return written, err
}

// eachFile calls a function for every index below n, on one worker per
// CPU (each made by worker, so it can keep its own buffers), and returns
// the error of the lowest failing index.
func eachFile(n int, worker func() func(int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), n); w++ {
		wg.Add(1)
		do := worker()
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = do(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// writeOne creates and writes one file of the tree. Where syncs are not
// deferred (deferSync) it syncs the file too; otherwise it starts the
// file's writeback and returns the identity of the file it created (its
// device and inode, and its size and change time once written), which
// syncWritten checks before the sync.
func writeOne(root string, f File, h hash.Hash, buf []byte) (Written, fileID, error) {
	full := filepath.Join(root, filepath.FromSlash(f.Path))
	out, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Written{}, fileID{}, fmt.Errorf("create %s: %w", full, err)
	}
	defer out.Close()
	h.Reset()
	var size int64
	var sum string
	switch {
	case f.Data != nil && f.SHA256 != "":
		// The digest is known: hashing the same memory here would prove
		// nothing the reopened tree's verification does not (it rereads
		// every file and compares it with this digest).
		n, err := out.Write(f.Data)
		if err != nil {
			return Written{}, fileID{}, fmt.Errorf("write %s: %w", full, err)
		}
		size, sum = int64(n), f.SHA256
	case f.Data != nil:
		n, err := io.MultiWriter(out, h).Write(f.Data)
		if err != nil {
			return Written{}, fileID{}, fmt.Errorf("write %s: %w", full, err)
		}
		size = int64(n)
	default:
		size, err = copyFrom(io.MultiWriter(out, h), f.From, buf)
		if err != nil {
			return Written{}, fileID{}, fmt.Errorf("write %s: %w", full, err)
		}
	}
	if sum == "" {
		sum = hex.EncodeToString(h.Sum(nil))
	}
	if f.SHA256 != "" && f.SHA256 != sum {
		return Written{}, fileID{}, fmt.Errorf("write %s: contents have sha256 %s, want %s", f.Path, sum, f.SHA256)
	}
	if deferSync {
		// A hint: a filesystem that refuses it (or fails the write it
		// starts) leaves the work, and the error, to the sync.
		startWriteback(out)
	} else if err := out.Sync(); err != nil {
		return Written{}, fileID{}, fmt.Errorf("sync %s: %w", full, err)
	}
	if err := out.Chmod(FileMode); err != nil {
		return Written{}, fileID{}, fmt.Errorf("chmod %s: %w", full, err)
	}
	var id fileID
	if deferSync {
		info, err := out.Stat()
		if err != nil {
			return Written{}, fileID{}, fmt.Errorf("stat %s: %w", full, err)
		}
		if id = identity(info); !id.known {
			return Written{}, fileID{}, fmt.Errorf("stat %s: no inode number", full)
		}
	}
	if err := out.Close(); err != nil {
		return Written{}, fileID{}, fmt.Errorf("close %s: %w", full, err)
	}
	return Written{Path: f.Path, SHA256: sum, Size: size}, id, nil
}

// syncWritten reopens a file writeOne wrote, without following a
// symbolic link, and syncs it, unless it is no longer the file writeOne
// created (id): a file put in its place is refused, never synced and
// published as if it were the one written. The inode number alone would
// not do: a file created after the written one was removed may be given
// the same number, but not the same change time, which moves with every
// write and cannot be set back.
func syncWritten(full string, id fileID) error {
	f, err := openNoFollow(full)
	if err != nil {
		return fmt.Errorf("reopen %s to sync it: %w", full, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", full, err)
	}
	if !info.Mode().IsRegular() || identity(info) != id {
		return fmt.Errorf("sync %s: not the file written there (replaced before it was synced)", full)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", full, err)
	}
	return f.Close()
}

func copyFrom(w io.Writer, src string, buf []byte) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if !info.Mode().IsRegular() {
		return 0, fmt.Errorf("source %s is not a regular file", src)
	}
	n, err := io.CopyBuffer(w, in, buf)
	if err != nil {
		return n, fmt.Errorf("copy from %s: %w", src, err)
	}
	if n != info.Size() {
		return n, fmt.Errorf("source %s changed size while copying (stat %d bytes, read %d)", src, info.Size(), n)
	}
	return n, nil
}

// pinTimes sets access and modification times to the epoch: files first,
// then directories deepest first, then the root, because creating an entry
// moves its directory's modification time.
func pinTimes(root string, dirs []string, files []Written) error {
	for _, f := range files {
		if err := chtimes(filepath.Join(root, filepath.FromSlash(f.Path))); err != nil {
			return err
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := chtimes(filepath.Join(root, filepath.FromSlash(dirs[i]))); err != nil {
			return err
		}
	}
	return chtimes(root)
}

func chtimes(p string) error {
	if err := os.Chtimes(p, epoch, epoch); err != nil {
		return fmt.Errorf("pin times of %s: %w", p, err)
	}
	return nil
}

func checkTimes(root string, dirs []string, files []Written) error {
	paths := []string{root}
	for _, d := range dirs {
		paths = append(paths, filepath.Join(root, filepath.FromSlash(d)))
	}
	for _, f := range files {
		paths = append(paths, filepath.Join(root, filepath.FromSlash(f.Path)))
	}
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !info.ModTime().Equal(epoch) {
			return fmt.Errorf("%s: modification time %s, want the Unix epoch", p, info.ModTime().UTC().Format(time.RFC3339))
		}
		if at, ok := accessTime(info); ok && !at.Equal(epoch) {
			return fmt.Errorf("%s: access time %s, want the Unix epoch", p, at.UTC().Format(time.RFC3339))
		}
	}
	return nil
}
