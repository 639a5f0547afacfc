package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

	"github.com/cacheon/engine/internal/identity"
)

// ErrUnstable is wrapped when a file changed between the walk and its
// read, or while it was read (size, modification or change time, inode).
var ErrUnstable = errors.New("file changed while read")

// Snapshot is a bundle directory read once: one walk under the intake
// limits (links and special files refused, never followed), then one
// stable read of each file the content hash covers, kept in memory with
// its SHA-256. Every identity derived from a Snapshot (content hashes,
// manifest, metadata, patches, rebuild plan, selected payload, closure)
// comes from these bytes, so a source edited after Open has no effect on
// any of them, and nothing is read from disk twice.
//
// A Snapshot is immutable once Open returns; it is safe for concurrent use.
type Snapshot struct {
	tree  *Tree
	data  [][]byte   // file contents, parallel to tree.Files
	sums  [][32]byte // SHA-256 of data, parallel to tree.Files
	index map[string]int
	dirs  map[string]bool // every directory the walk entered; "." is the root
}

// Open walks the bundle directory root once under the intake limits (see
// ReadTree) and reads every file once. The read of each file is guarded:
// it is opened without blocking and without following a final link, the
// opened file must be the one the walk saw (same inode, size, mode and
// times), and its status must not change while it is read, so a file
// swapped, grown or rewritten under the walk is refused with ErrUnstable.
// Files are read and hashed on up to GOMAXPROCS goroutines; the result
// does not depend on scheduling.
func Open(root string) (*Snapshot, error) {
	w, err := walkTree(root, intakePolicy)
	if err != nil {
		return nil, err
	}
	return readSnapshot(root, w.t, w.seen, w.dirSet)
}

// OpenHashed reads the files ContentHash covers, which is the set upstream
// hashes a directory by: symbolic links and special files are skipped,
// not refused, and no intake limit applies. Each file is read once with
// Open's guarded read, so what is then hashed, scanned or staged is one
// set of bytes. Verification stages a miner's bundle this way, keeping
// the content hash upstream gives it; intake uses Open.
func OpenHashed(root string) (*Snapshot, error) {
	w, err := walkTree(root, hashedPolicy)
	if err != nil {
		return nil, err
	}
	return readSnapshot(root, w.t, w.seen, w.dirSet)
}

// readSnapshot reads every file of t once, guarded against the walk's
// view of it (seen), on up to GOMAXPROCS goroutines.
func readSnapshot(root string, t *Tree, seen map[string]fs.FileInfo, dirs map[string]bool) (*Snapshot, error) {
	s := &Snapshot{
		tree:  t,
		data:  make([][]byte, len(t.Files)),
		sums:  make([][32]byte, len(t.Files)),
		index: make(map[string]int, len(t.Files)),
		dirs:  dirs,
	}
	for i, f := range t.Files {
		s.index[f.Path] = i
	}
	errs := make([]error, len(t.Files))
	parallel(len(t.Files), func(i int) {
		f := t.Files[i]
		data, err := stableRead(filepath.Join(root, filepath.FromSlash(f.Path)), seen[f.Path])
		if err != nil {
			errs[i] = fmt.Errorf("read bundle %s: %s: %w", root, f.Path, err)
			return
		}
		s.data[i] = data
		s.sums[i] = sha256.Sum256(data)
	})
	// The first failing file in hash order decides the error.
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines: reading and
// hashing are independent per file, and a bundle's big files dominate.
func parallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// stableRead reads the regular file at full, which the walk saw as
// walked. It never reads more than one byte past the walked size, so a
// file growing without end cannot hold the read.
func stableRead(full string, walked fs.FileInfo) ([]byte, error) {
	if walked == nil {
		return nil, fmt.Errorf("%w: not seen by the walk", ErrUnstable)
	}
	f, opened, err := OpenRegular(full)
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return nil, fmt.Errorf("%w: no longer a regular file: %v", ErrUnstable, err)
		}
		return nil, err
	}
	defer f.Close()
	if !os.SameFile(walked, opened) || statOf(walked) != statOf(opened) {
		return nil, fmt.Errorf("%w: replaced or modified between the walk and the read", ErrUnstable)
	}
	size := walked.Size()
	data := readBuffer(size)
	if _, err := io.ReadFull(f, data); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: shrank while read (walked %d bytes)", ErrUnstable, size)
		}
		return nil, err
	}
	var extra [1]byte
	if n, _ := f.Read(extra[:]); n != 0 {
		return nil, fmt.Errorf("%w: grew while read (walked %d bytes)", ErrUnstable, size)
	}
	after, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if statOf(after) != statOf(opened) {
		return nil, fmt.Errorf("%w: modified while read", ErrUnstable)
	}
	return data, nil
}

// fileStat is what must not change about a file from the walk to the end
// of its read.
type fileStat struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	ctime int64
}

func statOf(info fs.FileInfo) fileStat {
	return fileStat{mode: info.Mode(), size: info.Size(), mtime: info.ModTime(), ctime: changeTime(info)}
}

// Root is the directory the snapshot was read from.
func (s *Snapshot) Root() string { return s.tree.Root }

// Tree is the inventory the intake limits passed.
func (s *Snapshot) Tree() *Tree { return s.tree }

// Files lists the snapshot's files in hash order.
func (s *Snapshot) Files() []File { return s.tree.Files }

// Has reports whether the snapshot holds the file rel (clean POSIX path).
func (s *Snapshot) Has(rel string) bool {
	_, ok := s.index[rel]
	return ok
}

// ReadFile returns the bytes of the file rel (clean POSIX path) as they
// were read. The slice is shared: callers must not modify it.
func (s *Snapshot) ReadFile(rel string) ([]byte, bool) {
	i, ok := s.index[rel]
	if !ok {
		return nil, false
	}
	return s.data[i], true
}

// SHA256 returns the hex SHA-256 of the file rel as it was read.
func (s *Snapshot) SHA256(rel string) (string, bool) {
	i, ok := s.index[rel]
	if !ok {
		return "", false
	}
	return hex.EncodeToString(s.sums[i][:]), true
}

// ContentHash is the bundle content hash (committed: without the
// top-level carrier receipt) of the snapshot's bytes: the same value
// ContentHash and CommittedContentHash compute over the directory while
// it does not change.
func (s *Snapshot) ContentHash(committed bool) (identity.Digest, error) {
	h := sha256.New()
	hashed := 0
	for i, f := range s.tree.Files {
		if committed && f.Path == CarrierReceiptName {
			continue
		}
		writeFileFrame(h, f.Path, s.data[i])
		hashed++
	}
	if hashed == 0 {
		return identity.Digest{}, fmt.Errorf("%s: %w", s.tree.Root, ErrNoFiles)
	}
	return identity.SHA256Sum([32]byte(h.Sum(nil))), nil
}

// ContentHashes returns ContentHash(false) and ContentHash(true). Without
// a top-level carrier receipt both hash the same byte stream, so the
// bytes are hashed once.
func (s *Snapshot) ContentHashes() (content, committed identity.Digest, err error) {
	if content, err = s.ContentHash(false); err != nil {
		return identity.Digest{}, identity.Digest{}, err
	}
	if !s.Has(CarrierReceiptName) {
		return content, content, nil
	}
	if committed, err = s.ContentHash(true); err != nil {
		return identity.Digest{}, identity.Digest{}, err
	}
	return content, committed, nil
}

// Modes are the permissions WriteTo leaves on what it wrote: every file,
// and every directory including the destination itself.
type Modes struct {
	File, Dir fs.FileMode
}

// Modes a snapshot is commonly written with.
var (
	// ReadOnly is for a staged copy nothing may change: a worker's view of
	// a bundle, a published tree.
	ReadOnly = Modes{File: 0o444, Dir: 0o555}
	// SourceTree is for a copy checked into a repository, readable by
	// everyone as source files are.
	SourceTree = Modes{File: 0o644, Dir: 0o755}
)

// WriteTo writes the snapshot's files below dir, which must not exist or
// be empty: a private copy whose bytes are the snapshot's, whatever
// happens to the source since. Files are created exclusively with mode
// 0600 (directories 0700), on up to GOMAXPROCS goroutines; each file
// gets modes.File once written, and the directories (the destination
// included) get modes.Dir once nothing more is created in them. The
// snapshot knows every path it wrote, so nothing is walked.
func (s *Snapshot) WriteTo(dir string, modes Modes) error {
	if modes.File == 0 || modes.Dir == 0 || modes.File&^fs.ModePerm != 0 || modes.Dir&^fs.ModePerm != 0 {
		return fmt.Errorf("write snapshot of %s: modes %v must be permission bits, both set", s.tree.Root, modes)
	}
	dirs := make([]string, 0, len(s.dirs))
	for d := range s.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs) // a parent sorts before its children
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o700); err != nil {
			return fmt.Errorf("write snapshot of %s: %w", s.tree.Root, err)
		}
	}
	errs := make([]error, len(s.tree.Files))
	parallel(len(s.tree.Files), func(i int) {
		p := filepath.Join(dir, filepath.FromSlash(s.tree.Files[i].Path))
		if errs[i] = writeNew(p, s.data[i]); errs[i] == nil {
			errs[i] = os.Chmod(p, modes.File)
		}
	})
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("write snapshot of %s: %w", s.tree.Root, err)
		}
	}
	for _, d := range dirs { // "." (the destination) is among them
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(d)), modes.Dir); err != nil {
			return fmt.Errorf("write snapshot of %s: %w", s.tree.Root, err)
		}
	}
	return nil
}

func writeNew(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Bundle loads the bundle from the snapshot as LoadBundle loads it from
// disk (manifest, declared paths, metadata, dep patches, rebuild plan),
// reading no file again. The returned Bundle carries the snapshot.
func (s *Snapshot) Bundle() (*Bundle, error) {
	return loadBundle(s.tree.Root, s.tree, s)
}

// FS is the snapshot as a read-only file system of its files and of the
// directories the walk entered, for the closure builders.
func (s *Snapshot) FS() fs.FS { return snapFS{s} }

type snapFS struct{ s *Snapshot }

// Bytes returns the snapshot's bytes of the file name, shared (see
// ReadFile): the closure reads them without a copy.
func (f snapFS) Bytes(name string) ([]byte, bool) { return f.s.ReadFile(name) }

// Sum256 returns the SHA-256 the snapshot took of the file name as it
// read it (pyclosure keys its facts cache by it).
func (f snapFS) Sum256(name string) ([32]byte, bool) {
	i, ok := f.s.index[name]
	if !ok {
		return [32]byte{}, false
	}
	return f.s.sums[i], true
}

func (f snapFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if i, ok := f.s.index[name]; ok {
		return &snapFile{info: snapInfo{name: path.Base(name), size: int64(len(f.s.data[i]))}, r: bytes.NewReader(f.s.data[i])}, nil
	}
	if f.s.dirs[name] {
		return &snapDir{info: snapInfo{name: path.Base(name), dir: true}, s: f.s, name: name}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (f snapFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	if i, ok := f.s.index[name]; ok {
		return snapInfo{name: path.Base(name), size: int64(len(f.s.data[i]))}, nil
	}
	if f.s.dirs[name] {
		return snapInfo{name: path.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

type snapInfo struct {
	name string
	size int64
	dir  bool
}

func (i snapInfo) Name() string { return i.name }
func (i snapInfo) Size() int64  { return i.size }
func (i snapInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i snapInfo) ModTime() time.Time { return time.Time{} }
func (i snapInfo) IsDir() bool        { return i.dir }
func (i snapInfo) Sys() any           { return nil }

type snapFile struct {
	info snapInfo
	r    *bytes.Reader
}

func (f *snapFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *snapFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *snapFile) Close() error               { return nil }

type snapDir struct {
	info    snapInfo
	s       *Snapshot
	name    string
	entries []fs.DirEntry // listed on the first ReadDir
	listed  bool
}

func (d *snapDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *snapDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
func (d *snapDir) Close() error { return nil }

// ReadDir lists the directory's files and subdirectories in name order,
// as fs.ReadDirFile specifies.
func (d *snapDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.listed {
		d.listed = true
		d.entries = d.s.list(d.name)
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}

// list is the entries of the directory name in name order.
func (s *Snapshot) list(name string) []fs.DirEntry {
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	seen := map[string]fs.DirEntry{}
	add := func(rel string, info snapInfo) {
		if rel == "." || !strings.HasPrefix(rel, prefix) {
			return
		}
		rest := rel[len(prefix):]
		if rest == "" || strings.Contains(rest, "/") {
			return
		}
		info.name = rest
		seen[rest] = fs.FileInfoToDirEntry(info)
	}
	for rel, i := range s.index {
		add(rel, snapInfo{size: int64(len(s.data[i]))})
	}
	for rel := range s.dirs {
		add(rel, snapInfo{dir: true})
	}
	out := make([]fs.DirEntry, 0, len(seen))
	for _, e := range seen {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}
