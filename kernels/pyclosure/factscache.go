package pyclosure

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/cacheon/engine/kernels/pyparse"
)

// FactsCache keeps the Facts of Python files by the SHA-256 of their
// bytes. Load reports a miss for anything it cannot read back exactly;
// Store is best effort. Implementations are safe for concurrent use.
type FactsCache interface {
	Load(sum [32]byte) (*Facts, bool)
	Store(sum [32]byte, facts *Facts)
}

// code is this package's own source; with the parser's it names the
// directory a DirCache uses (see CodeVersion).
//
//go:embed *.go
var code embed.FS

// CodeVersion names the analyzer: a digest of this package's source and
// the parser's. Facts computed by one analyzer are only ever read back by
// the same analyzer, so a change to the grammar, the ban or the facts'
// shape can never be answered from an older build's cache.
func CodeVersion() string {
	own, err := pyparse.DigestFS(code)
	if err != nil {
		panic("pyclosure: embedded source unreadable: " + err.Error()) // an embed.FS cannot fail to read
	}
	parser := pyparse.CodeDigest()
	sum := sha256.Sum256(append(own[:], parser[:]...))
	return hex.EncodeToString(sum[:16])
}

// maxFactsBytes bounds one cache entry: a file of MaxFileBytes made only
// of import statements has facts well under this; a larger entry is
// neither stored nor read.
const maxFactsBytes = 64 << 20

// DirCache is a FactsCache in a directory shared by every process of a
// user, like a compiler's build cache: one JSON file per file content,
// <dir>/pyfacts-<CodeVersion>/<2 hex>/<64 hex>.json, written to a
// temporary file and renamed into place, so a reader sees a whole entry
// or none. An entry holds its own key; one that does not decode strictly
// or names another key is a miss. The cache only saves parses: a file
// whose entry is missing or unreadable is parsed again.
//
// Anyone who can write the directory can change what the closure sees,
// as with any build cache; it belongs to the user who runs the tools.
type DirCache struct {
	root string
	once sync.Once
	dir  string // root/pyfacts-<CodeVersion>, named on first use
}

// NewDirCache returns the cache kept under root (created on first store).
func NewDirCache(root string) *DirCache { return &DirCache{root: root} }

type factsEntry struct {
	SHA256 string `json:"sha256"`
	Facts  *Facts `json:"facts"`
}

func (c *DirCache) path(key string) string {
	c.once.Do(func() { c.dir = filepath.Join(c.root, "pyfacts-"+CodeVersion()) })
	return filepath.Join(c.dir, key[:2], key+".json")
}

// Load implements FactsCache.
func (c *DirCache) Load(sum [32]byte) (*Facts, bool) {
	key := hex.EncodeToString(sum[:])
	f, err := os.Open(c.path(key))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFactsBytes+1))
	if err != nil || len(data) > maxFactsBytes {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e factsEntry
	if err := dec.Decode(&e); err != nil || dec.More() || e.SHA256 != key || e.Facts == nil {
		return nil, false
	}
	return e.Facts, true
}

// Store implements FactsCache. A failure (a read-only or full disk)
// leaves the cache as it was.
func (c *DirCache) Store(sum [32]byte, facts *Facts) {
	key := hex.EncodeToString(sum[:])
	data, err := json.Marshal(factsEntry{SHA256: key, Facts: facts})
	if err != nil || len(data) > maxFactsBytes {
		return
	}
	dest := c.path(key)
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+key[:16]+".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), dest) != nil {
		os.Remove(tmp.Name())
	}
}

// SnapshotFS is a file system that holds its files in memory and already
// knows their SHA-256 (a bundle snapshot read and hashed each file once).
// The closure then neither copies a file's bytes nor hashes them again to
// key the facts cache.
type SnapshotFS interface {
	fs.FS
	// Bytes returns the file's contents, shared: the caller must not
	// modify them.
	Bytes(name string) ([]byte, bool)
	// Sum256 returns the SHA-256 of those contents.
	Sum256(name string) ([32]byte, bool)
}
