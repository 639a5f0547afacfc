package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
)

// The fingerprint parameters. docs/reference/anti-copy.md gives the
// measurements on the repository's contributions that chose them.
const (
	// K is the k-gram length in normalized tokens: the shortest shared
	// run that can count.
	K = 8
	// Window is the winnowing window in k-grams: every shared run of at
	// least Window+K-1 tokens yields a shared fingerprint.
	Window = 4
	// MinTokens is the size from which a file is substantial: smaller
	// files (an __init__.py, a two-line helper) are shared by unrelated
	// contributions and take no part in containment.
	MinTokens = 40
	// ThresholdPercent is the containment, in percent of a file's
	// fingerprints, from which a file counts as contained in the other
	// proposal.
	ThresholdPercent = 70
)

// SchemaVersion is the version of the normalized delta payload.
const SchemaVersion = 1

// Fingerprint is what anti-copy knows of one proposal: the three
// identities of its selected delta. Incumbent and validator bytes never
// enter it: only the selected payload's files (the Python import closure
// of the op sources, the declared CUDA sources and dependency patches)
// and its op rows do.
type Fingerprint struct {
	ContentHash           identity.Digest // the proposal's artifact digest, for reference
	SelectedPayloadDigest identity.Digest // exact bytes
	NormalizedDeltaDigest identity.Digest // comments, docstrings and formatting normalized away
	Files                 []File          // per-file fingerprints, sorted by (role, path)

	// all is the union of the files' fingerprints, computed once by Of
	// so that a census does not rebuild it for every pair.
	all []uint64
}

// hashes is the union of the files' fingerprints.
func (fp *Fingerprint) hashes() []uint64 {
	if fp.all != nil {
		return fp.all
	}
	sets := make([][]uint64, len(fp.Files))
	for i := range fp.Files {
		sets[i] = fp.Files[i].Hashes
	}
	return union(sets...)
}

// File is one selected file's normalized form and fingerprints.
type File struct {
	Path             string
	Role             string
	NormalizedSHA256 string
	Tokens           int      // normalized tokens
	Hashes           []uint64 // winnowed k-gram hashes, sorted, distinct
}

// Substantial reports whether the file takes part in containment.
func (f *File) Substantial() bool { return f.Tokens >= MinTokens }

// Of fingerprints an inspected contribution from the bytes its snapshot
// read. The inspection must have derived a selected payload.
func Of(in *contribution.Inspection) (*Fingerprint, error) {
	files, err := normalizeSelected(in)
	if err != nil {
		return nil, err
	}
	fp := &Fingerprint{ContentHash: in.ContentHash, SelectedPayloadDigest: in.SelectedPayloadDigest, Files: []File{}}
	byPath := map[string]string{}
	for _, n := range files {
		sum := sha256.Sum256([]byte(n.text))
		f := File{Path: n.path, Role: n.role, NormalizedSHA256: hex.EncodeToString(sum[:]), Tokens: len(n.toks), Hashes: winnow(n.toks, K, Window)}
		byPath[f.Path] = f.NormalizedSHA256
		fp.Files = append(fp.Files, f)
	}
	d, err := normalizedDelta(in.SelectedPayload, fp.Files, byPath)
	if err != nil {
		return nil, fmt.Errorf("fingerprint %s: %w", in.Dir, err)
	}
	fp.NormalizedDeltaDigest = d
	fp.all = fp.hashes()
	return fp, nil
}

// normalized is one selected file's normalized text and token stream.
type normalized struct {
	path, role, text string
	toks             []string
}

// normalizeSelected normalizes every selected file of an inspection, in
// the payload's (role, path) order, from the snapshot's bytes.
//
// Imports are followed within the bundle: in an import statement, the
// name of a bundle-local module (the Python closure's) is replaced by
// _local_ and 16 hex digits of the digest of that module's own
// normalized text with its local import names blanked. A renamed or
// moved helper module thus keeps every identity, while the statement
// still says which content it imports. Blanking first makes the
// replacement well defined for modules that import each other.
func normalizeSelected(in *contribution.Inspection) ([]normalized, error) {
	if in == nil || in.SelectedPayload == nil || in.Bundle == nil {
		return nil, errors.New("fingerprint: the inspection derived no selected payload")
	}
	snap := in.Bundle.Snapshot
	if snap == nil {
		return nil, fmt.Errorf("fingerprint %s: the inspection kept no snapshot of the bundle's bytes", in.Dir)
	}
	p := in.SelectedPayload
	data := map[string][]byte{}
	for _, row := range p.Files {
		b, ok := snap.ReadFile(row.Path)
		if !ok {
			return nil, fmt.Errorf("fingerprint %s: selected file %s is not in the snapshot", in.Dir, row.Path)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != row.SHA256 {
			return nil, fmt.Errorf("fingerprint %s: selected file %s does not have the bytes the payload names", in.Dir, row.Path)
		}
		data[row.Path] = b
	}
	imports := map[string]*localImports{}
	if p.Closure != nil {
		blank := map[string]string{}
		for _, f := range p.Closure.Files {
			blank[f.Module] = "_local_"
		}
		names := map[string]string{}
		for _, f := range p.Closure.Files {
			b, ok := data[f.Path]
			if !ok {
				return nil, fmt.Errorf("fingerprint %s: closure file %s is not a selected file", in.Dir, f.Path)
			}
			lines, err := pythonLinesIn(f.Path, b, &localImports{module: f.Module, isPackage: f.IsPackage, names: blank})
			if err != nil {
				return nil, fmt.Errorf("fingerprint %s: %w", in.Dir, err)
			}
			sum := sha256.Sum256([]byte(renderLines(lines)))
			names[f.Module] = "_local_" + hex.EncodeToString(sum[:8])
		}
		for _, f := range p.Closure.Files {
			imports[f.Path] = &localImports{module: f.Module, isPackage: f.IsPackage, names: names}
		}
	}
	out := make([]normalized, 0, len(p.Files))
	for _, row := range p.Files {
		text, toks, err := normalizeFile(row.Path, row.Role, data[row.Path], imports[row.Path])
		if err != nil {
			return nil, fmt.Errorf("fingerprint %s: %w", in.Dir, err)
		}
		out = append(out, normalized{path: row.Path, role: row.Role, text: text, toks: toks})
	}
	return out, nil
}

// normalizeFile is a selected file's normalized text and token stream,
// by its role; li follows a Python file's bundle-local imports.
func normalizeFile(path, role string, data []byte, li *localImports) (string, []string, error) {
	switch role {
	case contribution.RolePython:
		lines, err := pythonLinesIn(path, data, li)
		if err != nil {
			return "", nil, err
		}
		return renderLines(lines), pythonTokens(lines), nil
	case contribution.RoleCUDA:
		ct := cudaLex(string(data))
		return renderCUDA(ct), cudaTokens(ct), nil
	case contribution.RoleDepPatch:
		text, toks := normalizePatch(data)
		return text, toks, nil
	}
	return "", nil, fmt.Errorf("selected file %s has an unknown role %q", path, role)
}

// normalizedDelta is H(cacheon.contribution.normalized-delta.v1, ...)
// over what the selected payload holds with paths and labels left out:
// the multiset of normalized file digests by role, the op rows with each
// path replaced by the normalized digest of the file it names (metadata
// by its canonical projection's digest) and without the variant label,
// the patch targets and the rebuild patchers. Moving or renaming files,
// modules (imports are followed by content, see normalizeSelected) and
// variants therefore keeps the identity.
func normalizedDelta(p *contribution.SelectedPayload, files []File, byPath map[string]string) (identity.Digest, error) {
	type fileRow struct {
		Role   string `json:"role"`
		SHA256 string `json:"normalized_sha256"`
	}
	rows := make([]fileRow, 0, len(files))
	for _, f := range files {
		rows = append(rows, fileRow{Role: f.Role, SHA256: f.NormalizedSHA256})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Role != rows[j].Role {
			return rows[i].Role < rows[j].Role
		}
		return rows[i].SHA256 < rows[j].SHA256
	})
	meta := map[string]string{}
	for _, m := range p.Metadata {
		meta[m.Path] = m.SHA256
	}
	ops := make([]map[string]any, 0, len(p.Ops))
	for _, op := range p.Ops {
		row := map[string]any{}
		for k, v := range op {
			switch k {
			case "variant":
				// A label: variants of one slot are told apart by their
				// eligibility domains, which stay.
			case "source":
				s, _ := v.(string)
				d, ok := byPath[s]
				if !ok {
					return identity.Digest{}, fmt.Errorf("op source %s is not a selected file", s)
				}
				row[k] = d
			case "metadata":
				if s, ok := v.(string); ok {
					row[k] = meta[s]
				} else {
					row[k] = nil
				}
			case "cuda_sources":
				srcs, _ := v.([]string)
				ds := make([]string, 0, len(srcs))
				for _, s := range srcs {
					d, ok := byPath[s]
					if !ok {
						return identity.Digest{}, fmt.Errorf("op CUDA source %s is not a selected file", s)
					}
					ds = append(ds, d)
				}
				sort.Strings(ds)
				row[k] = ds
			default:
				row[k] = v
			}
		}
		ops = append(ops, row)
	}
	// Rows sort by their canonical bytes, the variant order being a label too.
	keys := make([]string, len(ops))
	for i, o := range ops {
		b, err := canonjson.Marshal(o)
		if err != nil {
			return identity.Digest{}, err
		}
		keys[i] = string(b)
	}
	sort.Sort(byKey{ops, keys})
	patches := make([]string, 0, len(p.Patches))
	for _, pr := range p.Patches {
		patches = append(patches, pr.Target)
	}
	sort.Strings(patches)
	patchers := make([]string, 0, len(p.Rebuild.Steps))
	for _, s := range p.Rebuild.Steps {
		patchers = append(patchers, s.PatcherID)
	}
	return identity.HVersion(identity.DomainNormalizedDelta, map[string]any{
		"abi_version":     p.ABIVersion,
		"files":           rows,
		"ops":             ops,
		"patch_targets":   patches,
		"rebuild_patcher": patchers,
	}, SchemaVersion)
}

type byKey struct {
	ops  []map[string]any
	keys []string
}

func (s byKey) Len() int           { return len(s.ops) }
func (s byKey) Less(i, j int) bool { return s.keys[i] < s.keys[j] }
func (s byKey) Swap(i, j int) {
	s.ops[i], s.ops[j] = s.ops[j], s.ops[i]
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
}
