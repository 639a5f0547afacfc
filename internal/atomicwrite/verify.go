package atomicwrite

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"
)

// Inventory reopens the tree at root and returns its files sorted by path
// string. It fails unless the tree has the published shape: the root and
// every directory mode 0755, every file a regular file of mode 0444, no
// symbolic link or special file, no empty directory (every directory is
// the parent of some file) and every modification time at the epoch.
func Inventory(root string) ([]Written, error) {
	files, _, err := inventory(root, true)
	return files, err
}

// inventory is Inventory; with hash false it checks the shape and lists
// the files with their sizes and identities but reads no contents. ids is
// parallel to the returned files.
func inventory(root string, hash bool) (files []Written, ids []fileID, err error) {
	info, err := os.Lstat(root)
	if err != nil {
		return nil, nil, err
	}
	if err := checkEntry(root, info, true); err != nil {
		return nil, nil, err
	}
	var infos []fs.FileInfo
	dirs := map[string]bool{}
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
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := checkEntry(p, info, d.IsDir()); err != nil {
			return err
		}
		if d.IsDir() {
			dirs[rel] = true
			return nil
		}
		files = append(files, Written{Path: rel, Size: info.Size()})
		infos = append(infos, info)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	ids = make([]fileID, len(files))
	if hash {
		if err := hashAll(root, files, ids); err != nil {
			return nil, nil, err
		}
	} else {
		for i, info := range infos {
			ids[i] = identity(info)
		}
	}
	implied := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			implied[d] = true
		}
	}
	for d := range dirs {
		if !implied[d] {
			return nil, nil, fmt.Errorf("%s: directory holds no file", filepath.Join(root, filepath.FromSlash(d)))
		}
	}
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return files[order[a]].Path < files[order[b]].Path })
	sortedFiles, sortedIDs := make([]Written, len(files)), make([]fileID, len(files))
	for i, j := range order {
		sortedFiles[i], sortedIDs[i] = files[j], ids[j]
	}
	return sortedFiles, sortedIDs, nil
}

// hashAll fills in the digest of every file and its identity as it was
// read, one worker per CPU: verification rereads whole trees, and hashing
// dominates. Each file must keep the size the walk saw.
func hashAll(root string, files []Written, ids []fileID) error {
	errs := make([]error, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(files)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := sha256.New()
			buf := make([]byte, 1<<20)
			for i := range next {
				p := filepath.Join(root, filepath.FromSlash(files[i].Path))
				sum, size, id, err := hashFile(p, h, buf)
				switch {
				case err != nil:
					errs[i] = err
				case size != files[i].Size:
					errs[i] = fmt.Errorf("%s: size changed while reading (stat %d bytes, read %d)", p, files[i].Size, size)
				default:
					files[i].SHA256, ids[i] = sum, id
				}
			}
		}()
	}
	for i := range files {
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

func checkEntry(p string, info fs.FileInfo, isDir bool) error {
	mode := info.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: symbolic link in a published tree", p)
	case isDir && !mode.IsDir(), !isDir && !mode.IsRegular():
		return fmt.Errorf("%s: %s is neither a regular file nor a directory", p, mode.Type())
	case isDir && mode != fs.ModeDir|DirMode:
		return fmt.Errorf("%s: directory mode %v, want %v", p, mode.Perm(), DirMode)
	case !isDir && mode != FileMode:
		return fmt.Errorf("%s: file mode %v, want %v", p, mode, FileMode)
	case !info.ModTime().Equal(epoch):
		return fmt.Errorf("%s: modification time %s, want the Unix epoch", p, info.ModTime().UTC().Format(time.RFC3339))
	}
	return nil
}

// hashFile hashes the file at p and returns its identity, which must be
// the same before and after the read: a write during the read changes
// the change time.
func hashFile(p string, h hash.Hash, buf []byte) (string, int64, fileID, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, fileID{}, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return "", 0, fileID{}, err
	}
	h.Reset()
	n, err := io.CopyBuffer(h, f, buf)
	if err != nil {
		return "", 0, fileID{}, fmt.Errorf("read %s: %w", p, err)
	}
	after, err := f.Stat()
	if err != nil {
		return "", 0, fileID{}, err
	}
	id := identity(after)
	if identity(before) != id {
		return "", 0, fileID{}, fmt.Errorf("%s: changed while reading", p)
	}
	return hex.EncodeToString(h.Sum(nil)), n, id, nil
}

// VerifyTree reopens the tree at root and checks that it has the published
// shape (see Inventory) and holds exactly the files of want, byte for byte.
func VerifyTree(root string, want []Written) error {
	_, err := verifyTree(root, want)
	return err
}

// verifyTree is VerifyTree, returning the identity of each file of want
// (in its order) as it was read.
func verifyTree(root string, want []Written) ([]fileID, error) {
	got, ids, err := inventory(root, true)
	if err != nil {
		return nil, err
	}
	if err := sameFiles(root, got, want); err != nil {
		return nil, err
	}
	return ids, nil
}

// verifyUnchanged checks, without reading contents, that the tree at root
// has the published shape and holds exactly the files of want with the
// identities ids (parallel to want, as verifyTree returned them): the same
// inodes, not written since (the change time moves with every write) and
// of the same size. Where the platform gives no identity it rereads
// every byte instead.
func verifyUnchanged(root string, want []Written, ids []fileID) error {
	if len(want) > 0 && !ids[0].known {
		return VerifyTree(root, want)
	}
	got, gotIDs, err := inventory(root, false)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d files, want %d", root, len(got), len(want))
	}
	for i := range got {
		if got[i].Path != want[i].Path {
			return fmt.Errorf("%s: file %s where %s was written", root, got[i].Path, want[i].Path)
		}
		if got[i].Size != want[i].Size || gotIDs[i] != ids[i] {
			return fmt.Errorf("%s: file %s was replaced or written after it was verified", root, got[i].Path)
		}
	}
	return nil
}

func sameFiles(root string, got, want []Written) error {
	wantByPath := make(map[string]Written, len(want))
	for _, w := range want {
		wantByPath[w.Path] = w
	}
	for _, g := range got {
		w, ok := wantByPath[g.Path]
		if !ok {
			return fmt.Errorf("%s: unexpected file %s", root, g.Path)
		}
		if g != w {
			return fmt.Errorf("%s: file %s has sha256 %s (%d bytes), want %s (%d bytes)", root, g.Path, g.SHA256, g.Size, w.SHA256, w.Size)
		}
		delete(wantByPath, g.Path)
	}
	for p := range wantByPath {
		return fmt.Errorf("%s: file %s is missing", root, p)
	}
	return nil
}
