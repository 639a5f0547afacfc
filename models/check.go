package models

import "fmt"

// Change kinds of a Difference.
const (
	Added   = "added"   // in the tree, not in the receipt
	Removed = "removed" // in the receipt, not in the tree
	Changed = "changed" // in both, with other bytes
)

// Difference is one file where a tree and its receipt disagree.
type Difference struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	Want   *File  `json:"want,omitempty"` // the receipt's entry
	Got    *File  `json:"got,omitempty"`  // the tree's entry
}

func (d Difference) String() string {
	switch d.Change {
	case Added:
		return fmt.Sprintf("added    %s (%d bytes, not in the receipt)", d.Path, d.Got.Size)
	case Removed:
		return fmt.Sprintf("removed  %s (the receipt lists %d bytes)", d.Path, d.Want.Size)
	default:
		return fmt.Sprintf("changed  %s: size %d, sha256 %s; the receipt has size %d, sha256 %s",
			d.Path, d.Got.Size, d.Got.SHA256, d.Want.Size, d.Want.SHA256)
	}
}

// Compare lists the differences between the receipt want and the
// receipt got of a tree, in path order.
func Compare(want, got *Receipt) []Difference {
	var diffs []Difference
	i, j := 0, 0
	for i < len(want.Files) || j < len(got.Files) {
		switch {
		case j == len(got.Files) || (i < len(want.Files) && want.Files[i].Path < got.Files[j].Path):
			w := want.Files[i]
			diffs = append(diffs, Difference{Path: w.Path, Change: Removed, Want: &w})
			i++
		case i == len(want.Files) || got.Files[j].Path < want.Files[i].Path:
			g := got.Files[j]
			diffs = append(diffs, Difference{Path: g.Path, Change: Added, Got: &g})
			j++
		default:
			w, g := want.Files[i], got.Files[j]
			if w != g {
				diffs = append(diffs, Difference{Path: w.Path, Change: Changed, Want: &w, Got: &g})
			}
			i++
			j++
		}
	}
	return diffs
}

// MismatchError is a tree that no longer matches its receipt.
type MismatchError struct {
	Root        string
	Differences []Difference
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: %v: %d file(s) differ, first %s", e.Root, ErrTreeMismatch, len(e.Differences), e.Differences[0])
}

func (e *MismatchError) Unwrap() error { return ErrTreeMismatch }

// Check provisions the tree at root afresh under the same rules and
// compares it with want. It returns the fresh receipt, and a
// *MismatchError listing every difference when the contents differ. A
// tree that breaks a sealing rule (a symbolic link, say) is rejected as in
// Provision. opts.ExpectedContentDigest is ignored: the receipt's digest is
// the expectation.
func Check(root string, want *Receipt, opts Options) (*Receipt, error) {
	opts.ExpectedContentDigest = ""
	got, err := Provision(root, opts)
	if err != nil {
		return nil, err
	}
	if diffs := Compare(want, got); len(diffs) > 0 {
		return got, &MismatchError{Root: root, Differences: diffs}
	}
	if got.ContentDigest != want.ContentDigest {
		// Equal files give equal digests; a receipt read through
		// ParseReceipt has a digest consistent with its files.
		return got, &DigestMismatchError{Root: root, Want: want.ContentDigest, Got: got.ContentDigest}
	}
	return got, nil
}
