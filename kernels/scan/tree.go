package scan

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cacheon/engine/kernels/bundle"
)

// RuleBundleLimit reports a bundle that breaks an intake limit, with the
// error `cacheon bundle inspect` refuses it with; such a bundle is refused
// before any of its Python is parsed.
const RuleBundleLimit Rule = "bundle-limit"

// TreeOptions say what the tree rules know about the bundle.
type TreeOptions struct {
	// Manifest supplies the declared CUDA sources and patches. Without it
	// only the rules that need no declarations apply (links, special
	// files, compiled objects, Python sources).
	Manifest *bundle.Manifest
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
//
// The intake limits (manifest.ReadTree, the ones inspection applies) are
// checked first. A tree that breaks one gets no source rules: its
// findings are the intake error and the rules that need no parsing.
func Tree(root string, opts TreeOptions) ([]Finding, error) {
	info, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("scan bundle %s: %w", root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("scan bundle %s: not a directory", root)
	}
	_, intake := bundle.ReadTree(root)
	return walkTree(root, opts, intake)
}

// walkTree is Tree once the intake limits are known: intake is the error
// manifest.ReadTree returned for root, nil when the tree is within them.
func walkTree(root string, opts TreeOptions, intake error) ([]Finding, error) {
	w := &treeWalk{root: root, opts: opts, parse: intake == nil}
	if err := filepath.WalkDir(root, w.visit); err != nil {
		return nil, fmt.Errorf("scan bundle %s: %w", root, err)
	}
	if intake != nil {
		w.refused(intake)
	}
	sortFindings(w.out)
	return w.out, nil
}

type treeWalk struct {
	root  string
	opts  TreeOptions
	parse bool // apply the source rules; false once intake refused the tree
	out   []Finding
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
	if bundle.IsInspectable(rel) {
		if size > bundle.MaxInspectableFileBytes {
			w.add(rel, RuleFileTooLarge, "%d bytes; inspectable files (.py, .cu, .cuh, .patch, .diff, .toml, .json) may have at most %d", size, bundle.MaxInspectableFileBytes)
			return
		}
	} else if size > bundle.MaxFileBytes {
		w.add(rel, RuleFileTooLarge, "%d bytes; files may have at most %d", size, bundle.MaxFileBytes)
		return
	}
	switch w.classify(rel) {
	case bundle.ClassPython:
		if w.opts.Covered[rel] || !w.parse {
			return
		}
		src, err := readLimited(abs, bundle.MaxInspectableFileBytes)
		if err != nil {
			w.add(rel, RuleUnreadable, "cannot be read: %v", err)
			return
		}
		w.out = append(w.out, Source(rel, src)...)
	case bundle.ClassBinary:
		w.add(rel, RuleBinary, "compiled objects, libraries and bytecode may not be shipped; bundles carry source")
	case bundle.ClassUndeclaredCUDA:
		w.add(rel, RuleUndeclaredCUDA, "CUDA source not declared in any op's cuda_sources")
	case bundle.ClassUndeclaredPatch:
		w.add(rel, RuleUndeclaredPatch, "patch not declared in [[dep_patches]]")
	case bundle.ClassOther:
		w.add(rel, RuleUnexpectedFile, "not source, a declared input or benign metadata (manifest.toml, rebuild.json, README*, LICENSE*, .gitignore, metadata/*.json)")
	}
}

// classify applies the manifest's tree classes; without a manifest only
// Python files and compiled objects are told apart.
func (w *treeWalk) classify(rel string) bundle.FileClass {
	if w.opts.Manifest != nil {
		return w.opts.Manifest.Classify(rel)
	}
	switch {
	case strings.HasSuffix(rel, ".py"):
		return bundle.ClassPython
	case (&bundle.Manifest{}).Classify(rel) == bundle.ClassBinary:
		return bundle.ClassBinary
	}
	return bundle.ClassBenign
}

// refused reports the intake error, as inspection words it, unless the
// walk already reported the same entry (a link, a special file, an
// oversized file) under its own rule.
func (w *treeWalk) refused(intake error) {
	var e *bundle.Error
	if !errors.As(intake, &e) {
		w.add(".", RuleBundleLimit, "%v", intake)
		return
	}
	for _, f := range w.out {
		switch f.Rule {
		case RuleSymlink, RuleSpecialFile, RuleFileTooLarge, RuleUnreadable:
			if f.Path == e.File {
				return
			}
		}
	}
	w.out = append(w.out, Finding{Path: e.File, Rule: RuleBundleLimit, Message: e.Reason})
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
