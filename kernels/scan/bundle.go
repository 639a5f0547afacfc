package scan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cacheon/engine/kernels/bundle"
)

// FormatVersion is the version of the JSON report.
const FormatVersion = 1

// Op statuses, as `cacheon scan` prints them.
const (
	StatusClean        = "clean"
	StatusViolations   = "VIOLATIONS"
	StatusBrokenKernel = "BROKEN KERNEL"
)

// OpReport is the scan of one op row's source file.
type OpReport struct {
	Slot     string    `json:"slot"`
	Variant  string    `json:"variant"`
	Source   string    `json:"source"`
	Status   string    `json:"status"`
	Findings []Finding `json:"findings"`
}

// Report is the scan of a whole bundle: each op's source, then every other
// file of the tree.
type Report struct {
	FormatVersion int        `json:"format_version"`
	BundleID      string     `json:"bundle_id"`
	ABIVersion    string     `json:"abi_version"`
	Ops           []OpReport `json:"ops"`
	TreeFindings  []Finding  `json:"tree_findings"`
	Violations    int        `json:"violations"`
	Advisories    int        `json:"advisories"`
	Clean         bool       `json:"clean"`
}

// Bundle scans the bundle directory dir: it reads the manifest, scans each
// op's source with the source rules and the compilability heuristic, then
// walks the tree. The error is for a bundle whose manifest cannot be read
// or parsed (nothing to scan against); every problem found by scanning is
// a finding in the report.
//
// The intake limits come first, as in `cacheon bundle inspect`: a bundle
// that breaks one (too many files or bytes, a link, a special file, an
// oversized file) is refused before any Python is parsed. Its report holds
// the intake error and the tree findings that need no parsing; no op
// source is scanned.
func Bundle(dir string) (*Report, error) {
	m, intake, err := loadManifest(dir)
	if err != nil {
		return nil, err
	}
	r := &Report{FormatVersion: FormatVersion, BundleID: m.BundleID, ABIVersion: m.ABIVersion,
		Ops: []OpReport{}, TreeFindings: []Finding{}}
	if intake != nil {
		tree, err := walkTree(dir, TreeOptions{Manifest: m}, intake)
		if err != nil {
			return nil, err
		}
		r.TreeFindings = append(r.TreeFindings, tree...)
		for _, f := range tree {
			r.count(f)
		}
		return r, nil
	}
	covered := map[string]bool{}
	cache := map[string][]Finding{}
	for _, op := range m.Ops {
		src := bundle.CleanPath(op.Source)
		findings, ok := cache[src]
		if !ok {
			findings = scanOpSource(dir, src)
			cache[src] = findings
		}
		covered[src] = true
		r.Ops = append(r.Ops, OpReport{Slot: op.Slot, Variant: op.Variant, Source: src,
			Status: status(findings), Findings: append([]Finding{}, findings...)})
		for _, f := range findings {
			r.count(f)
		}
	}
	tree, err := walkTree(dir, TreeOptions{Manifest: m, Covered: covered}, nil)
	if err != nil {
		return nil, err
	}
	r.TreeFindings = append(r.TreeFindings, tree...)
	for _, f := range tree {
		r.count(f)
	}
	r.Clean = r.Violations == 0 && r.Advisories == 0
	return r, nil
}

func (r *Report) count(f Finding) {
	if f.Advisory() {
		r.Advisories++
	} else {
		r.Violations++
	}
}

func status(fs []Finding) string {
	st := StatusClean
	for _, f := range fs {
		if !f.Advisory() {
			return StatusViolations
		}
		st = StatusBrokenKernel
	}
	return st
}

// loadManifest loads and checks the manifest. When the bundle tree breaks
// an intake limit, the intake error comes back as intake and the manifest
// is still parsed on its own, so the scan can report that problem among
// its findings instead of stopping at it.
func loadManifest(dir string) (m *bundle.Manifest, intake, err error) {
	m, err = bundle.Load(dir)
	if err == nil {
		return m, nil, nil
	}
	if !errors.Is(err, bundle.ErrLimit) {
		return nil, nil, err
	}
	intake = err
	data, rerr := readContained(dir, bundle.FileName, bundle.MaxInspectableFileBytes)
	if rerr != nil {
		return nil, nil, fmt.Errorf("read %s: %w", bundle.FileName, rerr)
	}
	m, err = bundle.Parse(data, bundle.FileName)
	return m, intake, err
}

// scanOpSource reads an op's source without following links and scans it.
func scanOpSource(dir, rel string) []Finding {
	src, err := readContained(dir, rel, bundle.MaxInspectableFileBytes)
	if err != nil {
		return []Finding{{Path: rel, Rule: RuleUnreadable, Message: "op source cannot be read: " + err.Error()}}
	}
	return Source(rel, src)
}

// readContained reads the regular file rel inside dir, refusing paths that
// leave dir or pass through a link, and files above limit.
func readContained(dir, rel string, limit int64) ([]byte, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("path %q leaves the bundle", rel)
	}
	cur := dir
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		info, err := os.Lstat(cur)
		if err != nil {
			return nil, err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("path %q passes through a symbolic link", rel)
		}
		if i == len(parts)-1 && !info.Mode().IsRegular() {
			return nil, fmt.Errorf("path %q is not a regular file", rel)
		}
	}
	return readLimited(cur, limit)
}
