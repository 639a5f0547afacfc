package bundle

import (
	"fmt"
	"path"
	"strings"
)

// FileClass is what the tree rules make of one bundle file.
type FileClass int

// File classes, from the static tree rules. Only the Violation classes
// reject a bundle; the others say how the file is checked.
const (
	ClassPython          FileClass = iota // .py: parsed and scanned
	ClassCUDASource                       // declared .cu/.cuh
	ClassDepPatch                         // declared .patch/.diff
	ClassBenign                           // manifest, rebuild plan, README*, LICENSE*, .gitignore, metadata JSON
	ClassBinary                           // compiled object, library or bytecode: violation
	ClassUndeclaredCUDA                   // .cu/.cuh no op declares: violation
	ClassUndeclaredPatch                  // .patch/.diff no dep_patches row declares: violation
	ClassOther                            // anything else: violation
)

// String names the class for reports.
func (c FileClass) String() string {
	return [...]string{"python", "cuda_source", "dep_patch", "benign", "binary",
		"undeclared_cuda", "undeclared_patch", "other"}[c]
}

// Violation reports whether a file of this class rejects the bundle.
func (c FileClass) Violation() bool { return c >= ClassBinary }

// binarySuffixes are compiled artifacts a bundle may never carry.
var binarySuffixes = []string{".so", ".o", ".a", ".dylib", ".bin", ".pyc"}

// RebuildPlanName is the optional rebuild plan at the bundle root.
const RebuildPlanName = "rebuild.json"

// Classify applies the tree rules to one bundle path (clean POSIX,
// relative to the root) given the manifest's declarations: Python is
// scanned; CUDA sources and patches must be declared; compiled objects are
// never allowed; anything else must be benign metadata — manifest.toml,
// rebuild.json, .gitignore, names starting README or LICENSE, or a .json
// file with a "metadata" directory component.
func (m *Manifest) Classify(rel string) FileClass {
	return m.classifier().classify(rel)
}

// classifier holds the declared paths the tree rules look up, gathered
// once so that classifying a whole tree costs one pass over the manifest.
type classifier struct {
	cuda, patches map[string]bool
}

func (m *Manifest) classifier() classifier {
	c := classifier{cuda: map[string]bool{}, patches: map[string]bool{}}
	for _, op := range m.Ops {
		for _, cs := range op.CUDASources {
			c.cuda[CleanPath(cs)] = true
		}
	}
	for _, dp := range m.DepPatches {
		c.patches[CleanPath(dp.Path)] = true
	}
	return c
}

func (c classifier) classify(rel string) FileClass {
	name := path.Base(rel)
	switch {
	case hasSuffix(rel, binarySuffixes):
		return ClassBinary
	case strings.HasSuffix(rel, ".py"):
		return ClassPython
	case strings.HasSuffix(rel, ".cu") || strings.HasSuffix(rel, ".cuh"):
		if c.cuda[rel] {
			return ClassCUDASource
		}
		return ClassUndeclaredCUDA
	case strings.HasSuffix(rel, ".patch") || strings.HasSuffix(rel, ".diff"):
		if c.patches[rel] {
			return ClassDepPatch
		}
		return ClassUndeclaredPatch
	case name == FileName || name == RebuildPlanName || name == ".gitignore",
		strings.HasPrefix(name, "README"), strings.HasPrefix(name, "LICENSE"):
		return ClassBenign
	case strings.HasSuffix(rel, ".json") && hasMetadataDir(rel):
		return ClassBenign
	}
	return ClassOther
}

func hasMetadataDir(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		if p == "metadata" {
			return true
		}
	}
	return false
}

func hasSuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// ErrTreeRule is the class of a file the static tree rules refuse.
var ErrTreeRule = fmt.Errorf("%w: tree rule", ErrInvalid)

// TreeViolations applies the static tree rules to every file of a loaded
// bundle and returns one error per refused file, in tree order: compiled
// objects, undeclared CUDA sources or patches, and stray files. Python
// files are not judged here; the source scanner reads them.
func (b *Bundle) TreeViolations() []*Error {
	var out []*Error
	c := b.Manifest.classifier()
	for _, f := range b.Tree.Files {
		class := c.classify(f.Path)
		if !class.Violation() {
			continue
		}
		var why string
		switch class {
		case ClassBinary:
			why = "compiled objects, libraries and bytecode may not be shipped; bundles carry source"
		case ClassUndeclaredCUDA:
			why = "CUDA source not declared in any op's cuda_sources"
		case ClassUndeclaredPatch:
			why = "patch not declared in [[dep_patches]]"
		default:
			why = "not source, a declared input or benign metadata (manifest.toml, rebuild.json, README*, LICENSE*, .gitignore, metadata/*.json)"
		}
		out = append(out, newError(ErrTreeRule, f.Path, "", "%s [%s]", why, class))
	}
	return out
}
