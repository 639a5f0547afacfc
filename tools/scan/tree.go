package scan

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cacheon/engine/tools/manifest"
)

// RuleBundleLimit reports a bundle over an intake limit as a whole (file
// count or total size); such a bundle is refused before anything runs.
const RuleBundleLimit Rule = "bundle-limit"

// TreeOptions say what the tree rules know about the bundle.
type TreeOptions struct {
	// Manifest supplies the declared CUDA sources and patches. Without it
	// only the rules that need no declarations apply (links, special
	// files, compiled objects, Python sources).
	Manifest *manifest.Manifest
	// Covered lists Python files already scanned as op sources; the tree
	// scan skips them so each finding is reported once.
	Covered map[string]bool
}

// Tree walks the bundle directory root and applies the tree rules to every
// entry: links and special files anywhere, compiled objects, undeclared
// CUDA sources and patches, files that are neither source, declared input
// nor benign metadata, and the source rules on every Python file. Links
// are reported, never followed; __pycache__ and .git directories are not
// part of a bundle and are skipped. The error is for a root that cannot be
// walked at all; unreadable entries below it are findings.
func Tree(root string, opts TreeOptions) ([]Finding, error) {
	info, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("scan bundle %s: %w", root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("scan bundle %s: not a directory", root)
	}
	w := &treeWalk{root: root, opts: opts}
	err = filepath.WalkDir(root, w.visit)
	if err != nil {
		return nil, fmt.Errorf("scan bundle %s: %w", root, err)
	}
	w.limits()
	sortFindings(w.out)
	return w.out, nil
}

type treeWalk struct {
	root             string
	opts             TreeOptions
	out              []Finding
	files            int
	total, textTotal int64
}

func (w *treeWalk) add(rel string, rule Rule, format string, args ...any) {
	w.out = append(w.out, Finding{Path: rel, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (w *treeWalk) visit(p string, d fs.DirEntry, err error) error {
	rel := "."
	if p != w.root {
		r, rerr := filepath.Rel(w.root, p)
		if rerr != nil {
			return rerr
		}
		rel = filepath.ToSlash(r)
	}
	if err != nil {
		if p == w.root {
			return err
		}
		w.add(rel, RuleUnreadable, "cannot be read: %v", err)
		if d != nil && d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	}
	if p == w.root {
		return nil
	}
	mode := d.Type()
	switch {
	case mode&fs.ModeSymlink != 0:
		w.add(rel, RuleSymlink, "symbolic link; bundles may not contain links")
		return nil
	case d.IsDir():
		if d.Name() == "__pycache__" || d.Name() == ".git" {
			return filepath.SkipDir
		}
		return nil
	case !mode.IsRegular():
		w.add(rel, RuleSpecialFile, "special file (%s); bundles hold only regular files", mode.Type())
		return nil
	}
	fi, err := d.Info()
	if err != nil {
		w.add(rel, RuleUnreadable, "cannot be read: %v", err)
		return nil
	}
	w.file(rel, p, fi.Size())
	return nil
}

func (w *treeWalk) file(rel, abs string, size int64) {
	w.files++
	w.total += size
	if manifest.IsInspectable(rel) {
		w.textTotal += size
		if size > manifest.MaxInspectableFileBytes {
			w.add(rel, RuleFileTooLarge, "%d bytes; inspectable files (.py, .cu, .cuh, .patch, .diff, .toml, .json) may have at most %d", size, manifest.MaxInspectableFileBytes)
			return
		}
	} else if size > manifest.MaxFileBytes {
		w.add(rel, RuleFileTooLarge, "%d bytes; files may have at most %d", size, manifest.MaxFileBytes)
		return
	}
	switch w.classify(rel) {
	case manifest.ClassPython:
		if w.opts.Covered[rel] {
			return
		}
		src, err := readLimited(abs, manifest.MaxInspectableFileBytes)
		if err != nil {
			w.add(rel, RuleUnreadable, "cannot be read: %v", err)
			return
		}
		w.out = append(w.out, Source(rel, src)...)
	case manifest.ClassBinary:
		w.add(rel, RuleBinary, "compiled objects, libraries and bytecode may not be shipped; bundles carry source")
	case manifest.ClassUndeclaredCUDA:
		w.add(rel, RuleUndeclaredCUDA, "CUDA source not declared in any op's cuda_sources")
	case manifest.ClassUndeclaredPatch:
		w.add(rel, RuleUndeclaredPatch, "patch not declared in [[dep_patches]]")
	case manifest.ClassOther:
		w.add(rel, RuleUnexpectedFile, "not source, a declared input or benign metadata (manifest.toml, rebuild.json, README*, LICENSE*, .gitignore, metadata/*.json)")
	}
}

// classify applies the manifest's tree classes; without a manifest only
// Python files and compiled objects are told apart.
func (w *treeWalk) classify(rel string) manifest.FileClass {
	if w.opts.Manifest != nil {
		return w.opts.Manifest.Classify(rel)
	}
	switch {
	case strings.HasSuffix(rel, ".py"):
		return manifest.ClassPython
	case (&manifest.Manifest{}).Classify(rel) == manifest.ClassBinary:
		return manifest.ClassBinary
	}
	return manifest.ClassBenign
}

func (w *treeWalk) limits() {
	if w.files > manifest.MaxFiles {
		w.add(".", RuleBundleLimit, "%d files; a bundle may hold at most %d", w.files, manifest.MaxFiles)
	}
	if w.total > manifest.MaxTotalBytes {
		w.add(".", RuleBundleLimit, "%d bytes in all; a bundle may hold at most %d", w.total, manifest.MaxTotalBytes)
	}
	if w.textTotal > manifest.MaxInspectableBytes {
		w.add(".", RuleBundleLimit, "%d bytes of inspectable text; a bundle may hold at most %d", w.textTotal, manifest.MaxInspectableBytes)
	}
}

// readLimited reads a regular file, refusing one that grew past limit
// since it was listed.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}
