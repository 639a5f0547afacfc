package bundle

import (
	"fmt"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// nameIndex finds two bundle paths that would be one entry on another
// file system: equal after Unicode NFC normalization (macOS stores names
// normalized, so a decomposed and a precomposed "é" are one file there),
// or after full case folding (case-insensitive file systems). Such a pair
// makes a bundle's files depend on where it is unpacked, so intake
// refuses it and names both paths.
type nameIndex struct {
	fold cases.Caser
	seen map[string]nameEntry // caseless key -> first spelling
}

type nameEntry struct {
	path string
	dir  bool
}

func newNameIndex() *nameIndex {
	return &nameIndex{fold: cases.Fold(), seen: map[string]nameEntry{}}
}

// caselessKey is the Unicode canonical caseless form of p:
// NFC(fold(NFD(p))), so canonically equivalent spellings and case variants
// map to one key.
func (x *nameIndex) caselessKey(p string) string {
	return norm.NFC.String(x.fold.String(norm.NFD.String(p)))
}

// add records one path of the tree (a file, or a directory when dir) and
// rejects it if an earlier path collides with it.
func (x *nameIndex) add(p string, dir bool) error {
	key := x.caselessKey(p)
	prev, ok := x.seen[key]
	if !ok {
		x.seen[key] = nameEntry{p, dir}
		return nil
	}
	return newError(ErrPath, p, "", "%s", collisionReason(prev.path, p, prev.dir != dir))
}

// collisionReason says why two distinct paths with one caseless key
// collide.
func collisionReason(a, b string, kindDiffers bool) string {
	switch {
	case norm.NFC.String(a) == norm.NFC.String(b):
		return fmt.Sprintf("%q and %q are equal after Unicode NFC normalization; they would be one entry on a normalizing file system", a, b)
	case kindDiffers:
		return fmt.Sprintf("%q and %q are a file and a directory equal after case folding", a, b)
	default:
		return fmt.Sprintf("%q and %q are equal after case folding; they would be one entry on a case-insensitive file system", a, b)
	}
}

// CheckBundlePaths applies intake's path rules to the bundle directory dir
// and returns the first violation (nil when there is none): every name is
// UTF-8, every file path is canonical POSIX (CheckLogicalPath), no two
// paths (files or the directories above them) are equal after Unicode NFC
// normalization or after case folding, and every path the manifest
// declares (op sources, metadata, CUDA sources, dep patches) is written
// in its canonical form. The tree is read with ReadTree, so the intake
// limits apply as well. Load enforces all of this except the canonical
// spelling of declared paths, which the selected payload requires.
func CheckBundlePaths(dir string) error {
	tree, err := ReadTree(dir)
	if err != nil {
		return err
	}
	if !tree.Has(FileName) {
		return nil
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	check := func(key, p string) error {
		if err := CheckLogicalPath(p); err != nil {
			return newError(ErrPath, FileName, key, "%v", err)
		}
		return nil
	}
	for i := range m.Ops {
		op := &m.Ops[i]
		if err := check(op.Key("source"), op.Source); err != nil {
			return err
		}
		if op.Metadata != "" {
			if err := check(op.Key("metadata"), op.Metadata); err != nil {
				return err
			}
		}
		for j, cs := range op.CUDASources {
			if err := check(fmt.Sprintf("%s[%d]", op.Key("cuda_sources"), j), cs); err != nil {
				return err
			}
		}
	}
	for _, dp := range m.DepPatches {
		if err := check(fmt.Sprintf("dep_patches[%d].path", dp.Index), dp.Path); err != nil {
			return err
		}
	}
	return nil
}
