package models

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// Wire identifiers of model identities.
const (
	ReceiptType          = "cacheon.model-provision"
	ReceiptSchemaVersion = 1
)

// File is one file of a model tree.
type File struct {
	Path   string `json:"path"` // POSIX path relative to the model root
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lowercase hex
}

// Receipt is a model provision receipt: the sealed inventory of a tree.
type Receipt struct {
	Type          string `json:"type"`
	SchemaVersion int    `json:"schema_version"`
	ContentDigest string `json:"content_digest"`
	Files         []File `json:"files"` // sorted by path, unique
}

type contentPayload struct {
	Files []File `json:"files"`
}

// ContentDigest returns H("cacheon.model-content", {"files": files}).
func ContentDigest(files []File) (string, error) {
	id, err := identity.H(identity.DomainModelContent, contentPayload{Files: files})
	return id.String(), err
}

// NewReceipt builds the receipt of files, which must already be sorted.
func NewReceipt(files []File) (*Receipt, error) {
	d, err := ContentDigest(files)
	if err != nil {
		return nil, err
	}
	return &Receipt{Type: ReceiptType, SchemaVersion: ReceiptSchemaVersion, ContentDigest: d, Files: files}, nil
}

// Digest returns H("cacheon.model-provision-receipt", r).
func (r *Receipt) Digest() (string, error) {
	id, err := identity.H(identity.DomainModelProvisionReceipt, r)
	return id.String(), err
}

// TotalSize is the sum of the file sizes.
func (r *Receipt) TotalSize() int64 {
	var n int64
	for _, f := range r.Files {
		n += f.Size
	}
	return n
}

// Marshal returns the receipt file bytes: canonical JSON and a newline.
func (r *Receipt) Marshal() ([]byte, error) {
	b, err := canonjson.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding receipt: %w", err)
	}
	return append(b, '\n'), nil
}

// Published receipt file names are FileNamePrefix + the receipt's own
// digest + FileNameSuffix, as upstream names them.
const (
	FileNamePrefix = "model-provision-sha256-"
	FileNameSuffix = ".json"
)

// FileName is the published name of the receipt whose digest
// (Receipt.Digest) is receiptDigest. Upstream names a receipt by its own
// canonical digest and refuses to reopen one whose name says another, so
// a receipt published here opens there.
func FileName(receiptDigest string) string {
	return FileNamePrefix + receiptDigest + FileNameSuffix
}

// DefaultReceiptPath is where r is published by default for root: beside
// the root, never inside it, named by r's digest.
func DefaultReceiptPath(root string, r *Receipt) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", root, err)
	}
	d, err := r.Digest()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(abs), FileName(d)), nil
}

// ReadReceipt reads and validates the receipt file at path. A file named
// as a published receipt (FileName) must hold the receipt of that digest;
// a receipt under another name (a build's own output, say) is read as it
// is.
func ReadReceipt(path string) (*Receipt, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := ParseReceipt(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := CheckReceiptName(path, r); err != nil {
		return nil, err
	}
	return r, nil
}

// CheckReceiptName refuses r read from a file named as a published
// receipt (FileName) of another digest.
func CheckReceiptName(path string, r *Receipt) error {
	base := filepath.Base(path)
	if !strings.HasPrefix(base, FileNamePrefix) || !strings.HasSuffix(base, FileNameSuffix) {
		return nil
	}
	named := strings.TrimSuffix(strings.TrimPrefix(base, FileNamePrefix), FileNameSuffix)
	d, err := r.Digest()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if named != d {
		return fmt.Errorf("%s: %w: the file name does not match the receipt's canonical digest %s", path, ErrInvalidReceipt, d)
	}
	return nil
}

// ParseReceipt parses a receipt and checks all of it: the closed schema,
// every path, size and hash, the order and uniqueness of paths (also
// case-folded and NFC-normalized) and that content_digest is the digest of the files.
func ParseReceipt(data []byte) (*Receipt, error) {
	v, err := canonjson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidReceipt, err)
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidReceipt, field, fmt.Sprintf(format, args...))
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, bad("$", "not a JSON object")
	}
	if err := closedFields(obj, "type", "schema_version", "content_digest", "files"); err != nil {
		return nil, bad("$", "%v", err)
	}
	r := &Receipt{}
	if r.Type, ok = obj["type"].(string); !ok || r.Type != ReceiptType {
		return nil, bad("type", "must be %q", ReceiptType)
	}
	if n, ok := obj["schema_version"].(*big.Int); !ok || !n.IsInt64() || n.Int64() != ReceiptSchemaVersion {
		return nil, bad("schema_version", "must be %d", ReceiptSchemaVersion)
	}
	r.SchemaVersion = ReceiptSchemaVersion
	if r.ContentDigest, ok = obj["content_digest"].(string); !ok {
		return nil, bad("content_digest", "not a string")
	}
	if err := identity.CheckDigest("content_digest", r.ContentDigest, false); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidReceipt, err)
	}
	list, ok := obj["files"].([]any)
	if !ok {
		return nil, bad("files", "not an array")
	}
	if len(list) == 0 {
		return nil, bad("files", "empty: %v", ErrNoFiles)
	}
	paths := make([]string, 0, len(list))
	for i, item := range list {
		field := fmt.Sprintf("files[%d]", i)
		f, err := parseFile(item)
		if err != nil {
			return nil, bad(field, "%v", err)
		}
		if i > 0 && f.Path <= r.Files[i-1].Path {
			return nil, bad(field+".path", "%q is not after %q: files must be sorted by path and unique", f.Path, r.Files[i-1].Path)
		}
		r.Files = append(r.Files, f)
		paths = append(paths, f.Path)
	}
	if c := findCollision(paths); c != nil {
		return nil, bad("files", "%q and %q: %s", c.a, c.b, c.reason)
	}
	want, err := ContentDigest(r.Files)
	if err != nil {
		return nil, err
	}
	if want != r.ContentDigest {
		return nil, bad("content_digest", "%s is not the digest of the files, %s", r.ContentDigest, want)
	}
	return r, nil
}

func parseFile(item any) (File, error) {
	obj, ok := item.(map[string]any)
	if !ok {
		return File{}, errors.New("not a JSON object")
	}
	if err := closedFields(obj, "path", "size", "sha256"); err != nil {
		return File{}, err
	}
	var f File
	if f.Path, ok = obj["path"].(string); !ok {
		return File{}, errors.New("path: not a string")
	}
	if err := checkRelPath(f.Path); err != nil {
		return File{}, fmt.Errorf("path: %v", err)
	}
	size, ok := obj["size"].(*big.Int)
	if !ok || size.Sign() < 0 || !size.IsInt64() {
		return File{}, errors.New("size: not a non-negative 64-bit integer")
	}
	f.Size = size.Int64()
	if f.SHA256, ok = obj["sha256"].(string); !ok {
		return File{}, errors.New("sha256: not a string")
	}
	// A file's hash may legitimately be anything, the all-zero value
	// included; only its form is checked.
	if !identity.IsHex64(f.SHA256) {
		return File{}, fmt.Errorf("sha256: %q is not 64 lowercase hex digits", f.SHA256)
	}
	return f, nil
}

// closedFields checks that obj has exactly the named fields.
func closedFields(obj map[string]any, names ...string) error {
	var missing, unknown []string
	for _, n := range names {
		if _, ok := obj[n]; !ok {
			missing = append(missing, n)
		}
	}
	for k := range obj {
		known := false
		for _, n := range names {
			if k == n {
				known = true
				break
			}
		}
		if !known {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	switch {
	case len(missing) > 0:
		return fmt.Errorf("missing field(s) %s", strings.Join(missing, ", "))
	case len(unknown) > 0:
		return fmt.Errorf("unknown field(s) %s", strings.Join(unknown, ", "))
	}
	return nil
}

// WriteReceipt publishes r at dest, read-only (0444), through a synced
// temporary file and a rename. dest must lie outside the model root (a
// receipt inside the tree it describes would change the tree). An
// identical receipt already at dest is accepted as published; any other
// file there is left alone and reported.
func WriteReceipt(dest, root string, r *Receipt) error {
	if err := CheckReceiptDestination(dest, root); err != nil {
		return err
	}
	data, err := r.Marshal()
	if err != nil {
		return err
	}
	if info, err := os.Lstat(dest); err == nil {
		if info.Mode().IsRegular() {
			if old, err := os.ReadFile(dest); err == nil && bytes.Equal(old, data) {
				return nil
			}
		}
		return fmt.Errorf("%s: %w; remove it or choose another --out", dest, ErrReceiptExists)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := atomicwrite.WriteFile(dest, data, 0o444); err != nil {
		return fmt.Errorf("publishing receipt: %w", err)
	}
	return nil
}

// CheckReceiptDestination refuses a receipt destination that is the model
// root or lies inside it.
func CheckReceiptDestination(dest, root string) error {
	inside, err := within(dest, root)
	if err != nil {
		return err
	}
	if inside {
		return fmt.Errorf("%s: %w %s; write it beside the model directory", dest, ErrReceiptInsideRoot, root)
	}
	return nil
}

// within reports whether path is root or lies below it, comparing real
// paths so that neither a symbolic link nor ".." can hide the nesting.
func within(path, root string) (bool, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false, fmt.Errorf("resolving model root: %w", err)
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return false, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	// The destination need not exist yet: resolve its directory.
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return false, fmt.Errorf("resolving receipt directory: %w", err)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	real := filepath.Join(dir, filepath.Base(abs))
	rel, err := filepath.Rel(realRoot, real)
	if err != nil {
		return false, nil
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))), nil
}
