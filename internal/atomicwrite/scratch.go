package atomicwrite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Scratch entries are made beside a destination, in its parent, and named
//
//	.<base of the destination>.<kind>-<pid>-<random>
//
// with kind "tmp" (the temporary tree of WriteTree, the temporary file of
// WriteFile) or "work" (a caller's working directory, see MkdirScratch).
// The creator holds an exclusive flock(2) on the entry for as long as it
// uses it. A run killed part-way leaves its entry behind unlocked: the
// kernel drops the lock with the process. RemoveStale, which WriteTree
// calls before it creates its own, removes such leftovers and nothing
// else. (WriteFile does not call it: it writes many files into
// one directory, and listing the directory each time would cost a
// quadratic total; its leftovers go with the next RemoveStale there.)
const (
	KindTmp  = "tmp"
	KindWork = "work"
)

// staleAfter is how old an unlocked scratch entry must be before it is
// removed: a creator takes its lock right after creating the entry, and
// an entry younger than this may be one whose lock is not taken yet.
const staleAfter = time.Minute

// Scratch is a scratch directory or file this process created and holds
// the lock of.
type Scratch struct {
	Path string
	lock *os.File
}

func scratchPattern(dest, kind string) string {
	return "." + filepath.Base(dest) + "." + kind + "-" + strconv.Itoa(os.Getpid()) + "-"
}

// MkdirScratch creates and locks a new scratch directory of kind beside
// dest. Release it with Remove, or with Unlock once it has been renamed
// away.
func MkdirScratch(dest, kind string) (*Scratch, error) {
	dir, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dest)), scratchPattern(dest, kind))
	if err != nil {
		return nil, err
	}
	lock, err := os.Open(dir)
	if err == nil {
		err = lockExclusive(lock)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.Remove(dir)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Scratch{Path: dir, lock: lock}, nil
}

// createScratchFile creates and locks a new scratch file beside dest.
func createScratchFile(dest string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(filepath.Clean(dest)), scratchPattern(dest, KindTmp)+"*")
	if err != nil {
		return nil, err
	}
	if err := lockExclusive(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// Unlock releases the lock of a scratch entry that has been renamed into
// place or removed.
func (s *Scratch) Unlock() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// Remove removes the scratch directory, then releases its lock.
func (s *Scratch) Remove() error {
	defer s.Unlock()
	return removeTree(s.Path)
}

// scratchName matches the name of a scratch entry of base, capturing
// nothing: kind, a decimal pid and os.MkdirTemp's decimal random suffix.
func scratchName(base string) *regexp.Regexp {
	return regexp.MustCompile(`^\.` + regexp.QuoteMeta(base) + `\.(` + KindTmp + `|` + KindWork + `)-[1-9][0-9]{0,9}-[0-9]{1,20}$`)
}

// RemoveStale removes the scratch entries beside dest that a killed run
// left behind: those named for dest by this package whose lock nobody
// holds and that are older than a minute. Entries of live runs are locked
// and stay; so does everything not named exactly like a scratch entry. It
// returns the paths it removed.
func RemoveStale(dest string) ([]string, error) {
	dest = filepath.Clean(dest)
	parent := filepath.Dir(dest)
	entries, err := os.ReadDir(parent)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list %s for stale scratch entries: %w", parent, err)
	}
	match := scratchName(filepath.Base(dest))
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") || !match.MatchString(e.Name()) || !(e.IsDir() || e.Type().IsRegular()) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		ok, err := removeIfStale(p)
		if err != nil {
			return removed, fmt.Errorf("remove stale scratch entry %s: %w", p, err)
		}
		if ok {
			removed = append(removed, p)
		}
	}
	return removed, nil
}

func removeIfStale(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // removed meanwhile
		}
		return false, err
	}
	defer f.Close()
	locked, err := tryLockExclusive(f)
	if err != nil || !locked {
		return false, err // a live run holds it
	}
	info, err := f.Stat()
	if err != nil {
		return false, err
	}
	if time.Since(info.ModTime()) < staleAfter {
		return false, nil
	}
	return true, removeTree(p)
}

// removeTree removes p and everything below it, making directories
// writable first where their mode forbids removing their entries.
func removeTree(p string) error {
	if err := os.RemoveAll(p); err == nil {
		return nil
	}
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}
