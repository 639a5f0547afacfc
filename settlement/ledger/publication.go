package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
)

// ErrPublication is the root of a publication whose bytes no longer hash
// to its address.
var ErrPublication = fmt.Errorf("%w: publication does not match its content hash", ErrRefused)

// Publications is the immutable store of intake bytes beside a ledger:
// DIR/<first two hex>/<content hash>/ holds the hashed files of one
// bundle, files 0444 and directories 0555, written once through
// atomicwrite (a temporary tree, synced, re-verified, renamed into place).
// The address is the bundle content hash, so publishing the same bytes
// twice finds them there, and anything else there is a conflict.
type Publications struct{ Dir string }

func (l *Ledger) publicationPath(content string) string {
	return Publications{Dir: l.PublicationsDir()}.Path(content)
}

// Path is where the bundle with this content hash is published.
func (p Publications) Path(content string) string {
	return filepath.Join(p.Dir, content[:2], content)
}

func (l *Ledger) publish(snap *bundle.Snapshot, content string) (string, error) {
	return Publications{Dir: l.PublicationsDir()}.Publish(snap, content)
}

// Publish writes the snapshot's hashed files, whose content hash is
// content, to their address (or finds them there) and verifies the
// published tree hashes to it.
func (p Publications) Publish(snap *bundle.Snapshot, content string) (string, error) {
	if !identity.IsHex64(content) {
		return "", fmt.Errorf("publish: content hash %q is not 64 lowercase hex", content)
	}
	dest := p.Path(content)
	if _, err := os.Lstat(dest); err == nil {
		return dest, p.verify(dest, content)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("publish %s: %w", content, err)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", fmt.Errorf("publish %s: %w", content, err)
	}
	if _, err := atomicwrite.WriteTree(dest, treeFiles(snap)); errors.Is(err, atomicwrite.ErrExists) {
		// Published meanwhile by someone else: the bytes must agree.
		return dest, p.verify(dest, content)
	} else if err != nil {
		return "", fmt.Errorf("publish %s: %w", content, err)
	}
	if err := readOnlyDirs(dest); err != nil {
		return "", fmt.Errorf("publish %s: %w", content, err)
	}
	return dest, p.verify(dest, content)
}

// verify re-reads a publication (guarded reads, bundle.Open) and checks
// its content hash.
func (p Publications) verify(dir, content string) error {
	snap, err := bundle.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrPublication, dir, err)
	}
	got, err := snap.ContentHash(false)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrPublication, dir, err)
	}
	if got.String() != content {
		return fmt.Errorf("%w: %s: content hash %s, want %s", ErrPublication, dir, got, content)
	}
	return nil
}

// Checkout writes a read-only copy of the published bundle content to
// dest (which must not exist), read from the publication with guarded
// reads and verified to hash to content before and after it is written:
// the bytes a crown is built from come from here, never from the path the
// miner's bundle was taken in from.
func (p Publications) Checkout(content, dest string) error {
	if !identity.IsHex64(content) {
		return fmt.Errorf("checkout: content hash %q is not 64 lowercase hex", content)
	}
	src := p.Path(content)
	snap, err := bundle.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("checkout %s: not published: %w", content, err)
		}
		return fmt.Errorf("%w: %s: %v", ErrPublication, src, err)
	}
	if got, err := snap.ContentHash(false); err != nil || got.String() != content {
		return fmt.Errorf("%w: %s: content hash %s (%v), want %s", ErrPublication, src, got, err, content)
	}
	if _, err := atomicwrite.WriteTree(dest, treeFiles(snap)); err != nil {
		return fmt.Errorf("checkout %s: %w", content, err)
	}
	if err := readOnlyDirs(dest); err != nil {
		return fmt.Errorf("checkout %s: %w", content, err)
	}
	return p.verify(dest, content)
}

// treeFiles are the snapshot's files as a tree to write, each with the
// digest the snapshot took as it read them, so the writer checks the bytes
// it wrote against the ones hashed.
func treeFiles(snap *bundle.Snapshot) []atomicwrite.File {
	var files []atomicwrite.File
	for _, f := range snap.Files() {
		data, _ := snap.ReadFile(f.Path)
		sum, _ := snap.SHA256(f.Path)
		files = append(files, atomicwrite.File{Path: f.Path, Data: data, SHA256: sum})
	}
	return files
}

// readOnlyDirs makes every directory of a published tree 0555, so nothing
// can be added to or removed from it (files are already 0444), deepest
// first.
func readOnlyDirs(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], 0o555); err != nil {
			return err
		}
	}
	return nil
}

// Checkout writes a read-only copy of proposal id's published bytes to
// dest, verified against the content hash the ledger recorded: what a
// crown's integration review and release build start from.
func (l *Ledger) Checkout(ctx context.Context, id int64, dest string) error {
	p, err := l.Proposal(ctx, id)
	if err != nil {
		return err
	}
	if !p.Published {
		return fmt.Errorf("%w: proposal %d (%s %s) has no published bytes", ErrIllegal, id, p.Status, p.Reason)
	}
	return Publications{Dir: l.PublicationsDir()}.Checkout(p.ContentHash, dest)
}
