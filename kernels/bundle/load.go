package bundle

import (
	"fmt"
	"os"
	"path"
	"unicode/utf8"
)

var lstatFn = os.Lstat

// Bundle is a loaded bundle directory: its tree inventory and manifest.
type Bundle struct {
	Dir      string
	Tree     *Tree
	Manifest *Manifest
	Rebuild  *RebuildPlan // nil when the bundle has no rebuild.json
	// Snapshot holds the bytes every identity of the bundle is derived
	// from; nil when the bundle was loaded from disk with LoadBundle.
	Snapshot *Snapshot
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
	return loadBundle(dir, tree, nil)
}

// loadBundle loads the bundle whose tree passed the limits, reading
// declared files from snap when it holds them and from dir otherwise
// (snap is nil for a load from disk). A declared path the snapshot does
// not hold (absent, or outside every identity such as a __pycache__
// file) is checked on disk, so the refusal reads as it always has.
func loadBundle(dir string, tree *Tree, snap *Snapshot) (*Bundle, error) {
	if !tree.Has(FileName) {
		return nil, newError(ErrNoManifest, FileName, "", "not found at the bundle root")
	}
	src := source{dir: dir, snap: snap}
	data, err := src.read(FileName, MaxManifestBytes, ErrLimit, "manifest")
	if err != nil {
		return nil, err
	}
	m, err := Parse(data, FileName)
	if err != nil {
		return nil, err
	}
	if err := checkFiles(src, m); err != nil {
		return nil, err
	}
	plan, err := loadRebuildPlan(src)
	if err != nil {
		return nil, err
	}
	return &Bundle{Dir: dir, Tree: tree, Manifest: m, Rebuild: plan, Snapshot: snap}, nil
}

// source is where a load reads declared files: the snapshot's bytes for
// the files it holds, the directory for anything else.
type source struct {
	dir  string
	snap *Snapshot
}

// held returns the snapshot's bytes of the declared path rel, if any.
func (s source) held(rel string) ([]byte, bool) {
	if s.snap == nil || checkRelPath(rel) != nil {
		return nil, false
	}
	return s.snap.ReadFile(path.Clean(rel))
}

// contained checks that rel names a contained regular file reached
// without links (the snapshot's walk refused every link and special file).
func (s source) contained(rel string) error {
	if _, ok := s.held(rel); ok {
		return nil
	}
	_, err := openContained(s.dir, rel)
	return err
}

// read returns the bytes of rel under limit, as readFile does.
func (s source) read(rel string, limit int64, class error, what string) ([]byte, error) {
	data, ok := s.held(rel)
	if !ok {
		return readFile(s.dir, rel, limit, class, what)
	}
	if int64(len(data)) > limit {
		return nil, newError(class, rel, "", "%s is %d bytes; at most %d are allowed", what, len(data), limit)
	}
	return data, nil
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

func checkFiles(src source, m *Manifest) error {
	pathErr := func(key string, err error) error {
		return newError(ErrPath, FileName, key, "%v", err)
	}
	metadataCache := map[string]*Metadata{}
	for i := range m.Ops {
		op := &m.Ops[i]
		if err := src.contained(op.Source); err != nil {
			return pathErr(op.Key("source"), err)
		}
		for j, cs := range op.CUDASources {
			if err := src.contained(cs); err != nil {
				return pathErr(fmt.Sprintf("%s[%d]", op.Key("cuda_sources"), j), err)
			}
		}
		if op.Metadata == "" {
			if err := checkEligibility(op, nil); err != nil {
				return err
			}
			continue
		}
		if err := src.contained(op.Metadata); err != nil {
			return pathErr(op.Key("metadata"), err)
		}
		clean := CleanPath(op.Metadata)
		md, ok := metadataCache[clean]
		if !ok {
			data, err := src.read(clean, MaxMetadataBytes, ErrMetadata, "metadata")
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
		if err := src.contained(dp.Path); err != nil {
			return pathErr(key, err)
		}
		data, err := src.read(CleanPath(dp.Path), MaxDepPatchBytes, ErrDepPatch, "dep patch")
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
