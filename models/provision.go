package models

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/cacheon/engine/internal/identity"
)

// DefaultWorkers is how many files are hashed at once unless told.
const DefaultWorkers = 4

// MaxWorkers bounds --workers; beyond the core count more only adds seeks.
const MaxWorkers = 256

// hashBufferSize is large enough that SHA-256, not syscalls, bounds the
// throughput of a worker.
const hashBufferSize = 1 << 20

// Options tune Provision and Check.
type Options struct {
	// Workers is the number of files hashed concurrently (0 means
	// DefaultWorkers). The receipt does not depend on it.
	Workers int
	// ExpectedContentDigest, when set, is a precondition: a tree with any
	// other content digest is rejected and no receipt is produced.
	ExpectedContentDigest string
	// Progress, when set, is called after each file is hashed, never
	// concurrently, with the count done so far.
	Progress func(done, total int, f File)
}

// signature is the status of a file that any change to it would move:
// identity (device, inode), type and mode, link count, size and the
// modification and change times in nanoseconds. Reading a file moves
// none of them.
type signature struct {
	dev, ino uint64
	mode     uint32
	nlink    uint64
	size     int64
	mtime    int64
	ctime    int64
}

// node is one regular file found by the walk.
type node struct {
	rel string
	sig signature
}

// provisioner provisions one tree. afterRead lets tests change a file
// between reading its bytes and the closing status checks, the window a
// concurrent writer would use.
type provisioner struct {
	root      string
	opts      Options
	afterRead func(rel string)
}

// Provision walks the model tree at root, hashes every file and returns
// its receipt. It rejects trees that break a sealing rule (see the package
// documentation) and trees that change while being read.
func Provision(root string, opts Options) (*Receipt, error) {
	return (&provisioner{root: root, opts: opts}).run()
}

func (p *provisioner) run() (*Receipt, error) {
	workers := p.opts.Workers
	if workers == 0 {
		workers = DefaultWorkers
	}
	if workers < 1 || workers > MaxWorkers {
		return nil, fmt.Errorf("workers = %d must be between 1 and %d", workers, MaxWorkers)
	}
	if d := p.opts.ExpectedContentDigest; d != "" {
		if err := identity.CheckDigest("expected content digest", d, false); err != nil {
			return nil, err
		}
	}
	if err := p.checkRoot(); err != nil {
		return nil, err
	}
	nodes, err := p.walk()
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, &TreeError{Root: p.root, Path: ".", Err: ErrNoFiles}
	}
	paths := make([]string, len(nodes))
	for i, n := range nodes {
		paths[i] = n.rel
	}
	if c := findCollision(paths); c != nil {
		kind := "a case-insensitive"
		if c.err == ErrUnicodeCollision {
			kind = "a normalizing"
		}
		return nil, &TreeError{Root: p.root, Path: c.b, Err: c.err,
			Detail: fmt.Sprintf("%s and %s: %s; they would be one entry on %s file system", c.a, c.b, c.reason, kind)}
	}
	files, err := p.hashAll(nodes, workers)
	if err != nil {
		return nil, err
	}
	// Walk again: a file added, removed or replaced while the others were
	// being hashed changes the inventory even where no hashed file moved.
	again, err := p.walk()
	if err != nil {
		return nil, err
	}
	if err := compareWalks(p.root, nodes, again); err != nil {
		return nil, err
	}
	r, err := NewReceipt(files)
	if err != nil {
		return nil, err
	}
	if want := p.opts.ExpectedContentDigest; want != "" && want != r.ContentDigest {
		return nil, &DigestMismatchError{Root: p.root, Want: want, Got: r.ContentDigest}
	}
	return r, nil
}

func (p *provisioner) checkRoot() error {
	info, err := os.Lstat(p.root)
	if err != nil {
		return err
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return &TreeError{Root: p.root, Path: ".", Err: ErrSymlink,
			Detail: "the model root is a symbolic link; pass the directory it points to"}
	case !info.IsDir():
		return &TreeError{Root: p.root, Path: ".", Err: ErrNotDirectory}
	}
	if _, ok := statOf(info); !ok {
		return fmt.Errorf("%s: this platform gives no file identity and link count; model trees cannot be sealed here", p.root)
	}
	return nil
}

// walk lists the regular files of the tree sorted by path, rejecting
// every entry that breaks a sealing rule. Nothing is followed.
func (p *provisioner) walk() ([]node, error) {
	var nodes []node
	if err := p.walkDir("", &nodes); err != nil {
		return nil, err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].rel < nodes[j].rel })
	return nodes, nil
}

func (p *provisioner) walkDir(relDir string, nodes *[]node) error {
	dir := p.abs(relDir)
	d, err := os.Open(dir)
	if err != nil {
		return p.walkErr(relDir, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return p.walkErr(relDir, err)
	}
	sort.Strings(names)
	for _, name := range names {
		rel := name
		if relDir != "" {
			rel = relDir + "/" + name
		}
		if !utf8.ValidString(name) {
			return &TreeError{Root: p.root, Path: rel, Err: ErrInvalidPath, Detail: "name is not valid UTF-8"}
		}
		if name == cacheComponent {
			return &TreeError{Root: p.root, Path: rel, Err: ErrCachePath,
				Detail: "hub downloaders keep mutable state there; provision a clean copy of the model files"}
		}
		info, err := os.Lstat(p.abs(rel))
		if err != nil {
			return p.walkErr(rel, err)
		}
		mode := info.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			detail := "model trees must hold the files themselves; copy the target in"
			if target, err := os.Readlink(p.abs(rel)); err == nil {
				detail = fmt.Sprintf("points to %s; %s", target, detail)
			}
			return &TreeError{Root: p.root, Path: rel, Err: ErrSymlink, Detail: detail}
		case mode.IsDir():
			if err := p.walkDir(rel, nodes); err != nil {
				return err
			}
		case mode.IsRegular():
			sig, _ := statOf(info)
			if sig.nlink > 1 {
				return &TreeError{Root: p.root, Path: rel, Err: ErrHardlink,
					Detail: fmt.Sprintf("the file has %d links and could change through another name; copy it", sig.nlink)}
			}
			*nodes = append(*nodes, node{rel: rel, sig: sig})
		default:
			return &TreeError{Root: p.root, Path: rel, Err: ErrSpecialFile,
				Detail: describeSpecial(mode) + "; model trees hold only regular files and directories"}
		}
	}
	return nil
}

func describeSpecial(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "socket"
	case mode&fs.ModeCharDevice != 0:
		return "character device"
	case mode&fs.ModeDevice != 0:
		return "block device"
	default:
		return "irregular file " + mode.String()
	}
}

// walkErr turns an entry vanishing under the walk into a mutation
// rejection; other errors are I/O failures.
func (p *provisioner) walkErr(rel string, err error) error {
	if rel == "" {
		rel = "."
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &TreeError{Root: p.root, Path: rel, Err: ErrMutated, Detail: "removed while the tree was being listed"}
	}
	return fmt.Errorf("reading model tree %s: %w", p.abs(rel), err)
}

func (p *provisioner) abs(rel string) string {
	if rel == "" {
		return p.root
	}
	return filepath.Join(p.root, filepath.FromSlash(rel))
}

// hashAll hashes nodes with workers goroutines. Results land at the
// index of their node, so the output never depends on scheduling; the
// largest files start first so one big shard does not finish last alone.
func (p *provisioner) hashAll(nodes []node, workers int) ([]File, error) {
	order := make([]int, len(nodes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return nodes[order[a]].sig.size > nodes[order[b]].sig.size })

	files := make([]File, len(nodes))
	errs := make([]error, len(nodes))
	var next atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for w := 0; w < min(workers, len(nodes)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, hashBufferSize)
			for !failed.Load() {
				k := int(next.Add(1) - 1)
				if k >= len(order) {
					return
				}
				i := order[k]
				f, err := p.hashOne(nodes[i], buf)
				if err != nil {
					errs[i] = err
					failed.Store(true)
					return
				}
				files[i] = f
				if p.opts.Progress != nil {
					mu.Lock()
					done++
					p.opts.Progress(done, len(nodes), f)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// hashOne hashes one file and proves it did not change while read: the
// status through the path before opening, through the descriptor before
// and after reading and through the path again afterwards must all equal
// the status the walk saw, and exactly the listed size must be read.
func (p *provisioner) hashOne(n node, buf []byte) (File, error) {
	full := p.abs(n.rel)
	mutated := func(detail string) error {
		return &TreeError{Root: p.root, Path: n.rel, Err: ErrMutated, Detail: detail}
	}
	before, err := os.Lstat(full)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return File{}, mutated("removed before it was read")
		}
		return File{}, fmt.Errorf("reading model file %s: %w", full, err)
	}
	if sig, _ := statOf(before); sig != n.sig {
		return File{}, mutated("status changed between listing and reading")
	}
	fh, err := os.OpenFile(full, openFlags, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			return File{}, mutated("replaced before it was read")
		}
		return File{}, fmt.Errorf("reading model file %s: %w", full, err)
	}
	defer fh.Close()
	opened, err := fh.Stat()
	if err != nil {
		return File{}, fmt.Errorf("reading model file %s: %w", full, err)
	}
	if sig, _ := statOf(opened); sig != n.sig {
		return File{}, mutated("the opened file is not the listed one")
	}
	h := sha256.New()
	// One byte past the listed size reveals a file that grew.
	read, err := io.CopyBuffer(h, io.LimitReader(fh, n.sig.size+1), buf)
	if err != nil {
		return File{}, fmt.Errorf("reading model file %s: %w", full, err)
	}
	if read != n.sig.size {
		return File{}, mutated(fmt.Sprintf("listed with %d bytes, %d read", n.sig.size, read))
	}
	if p.afterRead != nil {
		p.afterRead(n.rel)
	}
	closing, err := fh.Stat()
	if err != nil {
		return File{}, fmt.Errorf("reading model file %s: %w", full, err)
	}
	if sig, _ := statOf(closing); sig != n.sig {
		return File{}, mutated("changed while it was read (size, times, mode or link count moved)")
	}
	after, err := os.Lstat(full)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return File{}, mutated("removed while it was read")
		}
		return File{}, fmt.Errorf("reading model file %s: %w", full, err)
	}
	if sig, _ := statOf(after); sig != n.sig {
		return File{}, mutated("the path names another or a changed file after reading")
	}
	return File{Path: n.rel, Size: n.sig.size, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// compareWalks rejects a tree whose inventory moved between two walks.
func compareWalks(root string, first, second []node) error {
	i, j := 0, 0
	for i < len(first) || j < len(second) {
		switch {
		case j == len(second) || (i < len(first) && first[i].rel < second[j].rel):
			return &TreeError{Root: root, Path: first[i].rel, Err: ErrMutated, Detail: "removed while the tree was being hashed"}
		case i == len(first) || second[j].rel < first[i].rel:
			return &TreeError{Root: root, Path: second[j].rel, Err: ErrMutated, Detail: "added while the tree was being hashed"}
		case first[i].sig != second[j].sig:
			return &TreeError{Root: root, Path: first[i].rel, Err: ErrMutated, Detail: "changed after it was hashed"}
		}
		i++
		j++
	}
	return nil
}
