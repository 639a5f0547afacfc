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
	info, err := os.Lstat(root)
	if err != nil {
		return nil, err
	}
	if err := checkEntry(root, info, true); err != nil {
		return nil, err
	}
	var files []Written
	var sizes []int64
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
		files = append(files, Written{Path: rel})
		sizes = append(sizes, info.Size())
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := hashAll(root, files, sizes); err != nil {
		return nil, err
	}
	implied := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			implied[d] = true
		}
	}
	for d := range dirs {
		if !implied[d] {
			return nil, fmt.Errorf("%s: directory holds no file", filepath.Join(root, filepath.FromSlash(d)))
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// hashAll fills in the digest and size of every file, one worker per CPU:
// verification rereads whole trees, and hashing dominates.
func hashAll(root string, files []Written, sizes []int64) error {
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
				sum, size, err := hashFile(p, h, buf)
				switch {
				case err != nil:
					errs[i] = err
				case size != sizes[i]:
					errs[i] = fmt.Errorf("%s: size changed while reading (stat %d bytes, read %d)", p, sizes[i], size)
				default:
					files[i].SHA256, files[i].Size = sum, size
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

func hashFile(p string, h hash.Hash, buf []byte) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h.Reset()
	n, err := io.CopyBuffer(h, f, buf)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// VerifyTree reopens the tree at root and checks that it has the published
// shape (see Inventory) and holds exactly the files of want, byte for byte.
func VerifyTree(root string, want []Written) error {
	got, err := Inventory(root)
	if err != nil {
		return err
	}
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
