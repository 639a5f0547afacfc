package bundle

import (
	"fmt"
	"os"
	"unicode/utf8"
)

var lstatFn = os.Lstat

// Bundle is a loaded bundle directory: its tree inventory and manifest.
type Bundle struct {
	Dir      string
	Tree     *Tree
	Manifest *Manifest
	Rebuild  *RebuildPlan // nil when the bundle has no rebuild.json
}

// Load reads the bundle directory dir: it enforces the intake limits,
// parses manifest.toml, and checks every declared path (op sources,
// metadata, CUDA sources, dep patches) names a contained regular file
// reached without links. Metadata JSON and dep patches are parsed and
// attached to the manifest. Bundle code is never imported or run.
func Load(dir string) (*Manifest, error) {
	b, err := LoadBundle(dir)
	if err != nil {
		return nil, err
	}
	return b.Manifest, nil
}

// LoadBundle is Load that also returns the tree inventory.
func LoadBundle(dir string) (*Bundle, error) {
	tree, err := ReadTree(dir)
	if err != nil {
		return nil, err
	}
	if !tree.Has(FileName) {
		return nil, newError(ErrNoManifest, FileName, "", "not found at the bundle root")
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if err := checkFiles(dir, m); err != nil {
		return nil, err
	}
	plan, err := LoadRebuildPlan(dir)
	if err != nil {
		return nil, err
	}
	return &Bundle{Dir: dir, Tree: tree, Manifest: m, Rebuild: plan}, nil
}

// ReadManifest reads and parses dir's manifest.toml alone, through the
// manifest size limit and without blocking on a non-regular file; no
// declared path is checked (Load does that).
func ReadManifest(dir string) (*Manifest, error) {
	data, err := readFile(dir, FileName, MaxManifestBytes, ErrLimit, "manifest")
	if err != nil {
		return nil, err
	}
	return Parse(data, FileName)
}

func checkFiles(dir string, m *Manifest) error {
	pathErr := func(key string, err error) error {
		return newError(ErrPath, FileName, key, "%v", err)
	}
	metadataCache := map[string]*Metadata{}
	for i := range m.Ops {
		op := &m.Ops[i]
		if _, err := openContained(dir, op.Source); err != nil {
			return pathErr(op.Key("source"), err)
		}
		for j, cs := range op.CUDASources {
			if _, err := openContained(dir, cs); err != nil {
				return pathErr(fmt.Sprintf("%s[%d]", op.Key("cuda_sources"), j), err)
			}
		}
		if op.Metadata == "" {
			if err := checkEligibility(op, nil); err != nil {
				return err
			}
			continue
		}
		if _, err := openContained(dir, op.Metadata); err != nil {
			return pathErr(op.Key("metadata"), err)
		}
		clean := CleanPath(op.Metadata)
		md, ok := metadataCache[clean]
		if !ok {
			data, err := readFile(dir, clean, MaxMetadataBytes, ErrMetadata, "metadata")
			if err != nil {
				return err
			}
			md, err = parseMetadata(clean, data)
			if err != nil {
				return err
			}
			metadataCache[clean] = md
		}
		op.MetadataDoc = md
		if err := checkEligibility(op, md); err != nil {
			return err
		}
	}
	for i := range m.DepPatches {
		dp := &m.DepPatches[i]
		key := fmt.Sprintf("dep_patches[%d].path", dp.Index)
		if _, err := openContained(dir, dp.Path); err != nil {
			return pathErr(key, err)
		}
		data, err := readFile(dir, CleanPath(dp.Path), MaxDepPatchBytes, ErrDepPatch, "dep patch")
		if err != nil {
			return err
		}
		if !utf8.Valid(data) {
			return newError(ErrDepPatch, CleanPath(dp.Path), "", "dep patch for %s is not UTF-8 text", dp.Target)
		}
		patch, err := ParsePatch(string(data))
		if err != nil {
			return newError(ErrDepPatch, CleanPath(dp.Path), "", "dep patch for %s rejected: %v", dp.Target, err)
		}
		dp.Diff = patch
	}
	return nil
}
