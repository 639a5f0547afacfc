package contribution

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/patchers"
	"github.com/cacheon/engine/kernels/pyclosure"
)

// MaterializerPolicyVersion is the engine-tree materializer policy the
// selected payload is computed under.
const MaterializerPolicyVersion = 2

// FileMode is the normalized mode every identity records (0444).
const FileMode = 0o444

// File roles in a selected payload.
const (
	RolePython   = "python"
	RoleCUDA     = "cuda"
	RoleDepPatch = "dep_patch"
)

// ClosureFunc returns the Python import closure of a loaded bundle's op
// sources: the bundle-relative Python files (canonical paths) reached by
// bundle-local imports, the sources included, with the bytes and import
// spans it parsed (the materializer rewrites those spans, so the closure
// is computed once, at inspection). It reads the bundle's snapshot when
// it has one and must never import or run bundle code.
type ClosureFunc func(b *bundle.Bundle, opSources []string) (*pyclosure.Closure, error)

// CUDACheckFunc validates the include closure of the declared CUDA
// sources of a loaded bundle: every local include declared, no
// compilation unit included.
type CUDACheckFunc func(b *bundle.Bundle, cudaSources []string) error

// FileRow is one selected file.
type FileRow struct {
	Mode   int    `json:"mode"`
	Path   string `json:"path"`
	Role   string `json:"role"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// MetadataRow is one op metadata file as the engine tree emits it (its
// canonical projection).
type MetadataRow struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// PatchRow is one declared dependency patch.
type PatchRow struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// SelectedPayload is what a target executes of a bundle.
type SelectedPayload struct {
	ABIVersion                string           `json:"abi_version"`
	Files                     []FileRow        `json:"files"`
	MaterializerPolicyVersion int              `json:"materializer_policy_version"`
	Metadata                  []MetadataRow    `json:"metadata"`
	Ops                       []map[string]any `json:"ops"`
	Patches                   []PatchRow       `json:"patches"`
	Rebuild                   RebuildIdentity  `json:"rebuild"`

	// EmittedMetadata maps each metadata path to the canonical bytes the
	// engine tree writes for it. Not part of the identity payload.
	EmittedMetadata map[string][]byte `json:"-"`
	// Closure is the Python import closure the payload's Python files
	// come from, with the bytes and import spans parsed once; the
	// materializer rewrites those spans. Not part of the identity payload.
	Closure *pyclosure.Closure `json:"-"`
}

// RebuildIdentity is the parsed rebuild plan's identity.
type RebuildIdentity struct {
	SchemaVersion int           `json:"schema_version"`
	Steps         []RebuildStep `json:"steps"`
}

// RebuildStep is one reviewed patcher invocation, bound to the patcher's
// bytes by its SHA-256.
type RebuildStep struct {
	Type          string `json:"type"`
	PatcherID     string `json:"patcher_id"`
	Path          string `json:"path"`
	PatcherSHA256 string `json:"patcher_sha256"`
}

// PayloadOptions are the validator-owned inputs of a selected payload.
type PayloadOptions struct {
	// Closure computes the Python import closure. Required.
	Closure ClosureFunc
	// CUDACheck validates the CUDA include closure; nil skips it (only
	// for bundles without cuda_sources).
	CUDACheck CUDACheckFunc
	// PatcherDigests maps a registered patcher's file name to the SHA-256
	// of the reviewed patcher. A patcher it does not name is bound to the
	// validator's own (kernels/patchers) where there is one; a rebuild.json
	// step with neither is refused.
	PatcherDigests map[string]string
}

// ComputeSelectedPayload derives the selected payload of a loaded bundle.
func ComputeSelectedPayload(b *bundle.Bundle, opts PayloadOptions) (*SelectedPayload, error) {
	m := b.Manifest
	if opts.Closure == nil {
		return nil, fmt.Errorf("selected payload of %s: no Python closure function", b.Dir)
	}
	p := &SelectedPayload{
		ABIVersion:                m.ABIVersion,
		MaterializerPolicyVersion: MaterializerPolicyVersion,
		Files:                     []FileRow{},
		Metadata:                  []MetadataRow{},
		Ops:                       []map[string]any{},
		Patches:                   []PatchRow{},
		EmittedMetadata:           map[string][]byte{},
	}

	// Metadata: one canonical projection per path; two ops sharing a path
	// must project it identically (they do: same bytes).
	for i := range m.Ops {
		op := &m.Ops[i]
		if op.Metadata == "" {
			continue
		}
		if err := bundle.CheckLogicalPath(op.Metadata); err != nil {
			return nil, fieldErr(op.Key("metadata"), err)
		}
		if op.MetadataDoc == nil {
			return nil, fmt.Errorf("%s: metadata %s was not loaded", op.Key("metadata"), op.Metadata)
		}
		emitted, err := op.MetadataDoc.CanonicalBytes()
		if err != nil {
			return nil, err
		}
		if prev, ok := p.EmittedMetadata[op.Metadata]; ok && string(prev) != string(emitted) {
			return nil, fmt.Errorf("metadata %s has conflicting projections", op.Metadata)
		}
		p.EmittedMetadata[op.Metadata] = emitted
	}
	for path, emitted := range p.EmittedMetadata {
		sum := sha256.Sum256(emitted)
		p.Metadata = append(p.Metadata, MetadataRow{Path: path, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(emitted))})
	}
	sort.Slice(p.Metadata, func(i, j int) bool { return p.Metadata[i].Path < p.Metadata[j].Path })

	cudaSet := map[string]bool{}
	for i := range m.Ops {
		op := &m.Ops[i]
		for j, cs := range op.CUDASources {
			if err := bundle.CheckLogicalPath(cs); err != nil {
				return nil, fieldErr(fmt.Sprintf("%s[%d]", op.Key("cuda_sources"), j), err)
			}
			cudaSet[cs] = true
		}
	}
	cudaFiles := keys(cudaSet)
	if len(cudaFiles) > 0 {
		if opts.CUDACheck == nil {
			return nil, fmt.Errorf("selected payload of %s: declares CUDA sources but no CUDA include check was given", b.Dir)
		}
		if err := opts.CUDACheck(b, cudaFiles); err != nil {
			return nil, fmt.Errorf("CUDA include closure: %w", err)
		}
	}
	var patchFiles []string
	for _, dp := range m.DepPatches {
		if err := bundle.CheckLogicalPath(dp.Path); err != nil {
			return nil, fieldErr(fmt.Sprintf("dep_patches[%d].path", dp.Index), err)
		}
		patchFiles = append(patchFiles, dp.Path)
		p.Patches = append(p.Patches, PatchRow{Path: dp.Path, Target: dp.Target})
	}
	sort.Slice(p.Patches, func(i, j int) bool {
		if p.Patches[i].Target != p.Patches[j].Target {
			return p.Patches[i].Target < p.Patches[j].Target
		}
		return p.Patches[i].Path < p.Patches[j].Path
	})

	sources := make([]string, 0, len(m.Ops))
	for i := range m.Ops {
		op := &m.Ops[i]
		if err := bundle.CheckLogicalPath(op.Source); err != nil {
			return nil, fieldErr(op.Key("source"), err)
		}
		sources = append(sources, op.Source)
	}
	closure, err := opts.Closure(b, sources)
	if err != nil {
		return nil, fmt.Errorf("python import closure: %w", err)
	}
	p.Closure = closure
	pyFiles := closure.Paths()
	for _, f := range pyFiles {
		if err := bundle.CheckLogicalPath(f); err != nil {
			return nil, fmt.Errorf("python import closure: %w", err)
		}
	}
	for _, group := range []struct {
		role  string
		paths []string
	}{{RolePython, pyFiles}, {RoleCUDA, cudaFiles}, {RoleDepPatch, patchFiles}} {
		for _, rel := range group.paths {
			sum, size, err := selectedFile(b, rel)
			if err != nil {
				return nil, err
			}
			p.Files = append(p.Files, FileRow{Mode: FileMode, Path: rel, Role: group.role, SHA256: sum, Size: size})
		}
	}
	sort.Slice(p.Files, func(i, j int) bool {
		if p.Files[i].Role != p.Files[j].Role {
			return p.Files[i].Role < p.Files[j].Role
		}
		return p.Files[i].Path < p.Files[j].Path
	})

	ops := make([]*bundle.Op, len(m.Ops))
	for i := range m.Ops {
		ops[i] = &m.Ops[i]
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Slot != ops[j].Slot {
			return ops[i].Slot < ops[j].Slot
		}
		return ops[i].Variant < ops[j].Variant
	})
	for _, op := range ops {
		row, err := opIdentity(op)
		if err != nil {
			return nil, err
		}
		p.Ops = append(p.Ops, row)
	}

	p.Rebuild = RebuildIdentity{SchemaVersion: 1, Steps: []RebuildStep{}}
	if b.Rebuild != nil {
		for _, s := range b.Rebuild.Steps {
			sum, ok := opts.PatcherDigests[s.Name]
			if !ok {
				sum, ok = patchers.Reviewed()[s.Name]
			}
			if !ok || !identity.IsHex64(sum) {
				return nil, fmt.Errorf("rebuild.json: no reviewed digest for patcher %s", s.Name)
			}
			p.Rebuild.Steps = append(p.Rebuild.Steps, RebuildStep{
				Type: "repo_python", PatcherID: s.ID, Path: bundle.PatcherDir + "/" + s.Name, PatcherSHA256: sum,
			})
		}
	}
	return p, nil
}

// Digest is H(cacheon.contribution.selected-payload, payload).
func (p *SelectedPayload) Digest() (identity.Digest, error) {
	return identity.H(identity.DomainSelectedPayload, p)
}

// SelectedDelta is H(cacheon.contribution.selected_delta, {selected
// payload digest, target id, target-spec digest}): a payload bound to the
// target it was resolved to.
func SelectedDelta(selectedPayloadDigest identity.Digest, targetID string, targetSpecDigest identity.Digest) (identity.Digest, error) {
	for _, f := range []struct {
		name string
		v    identity.Digest
	}{
		{"selected_payload_digest", selectedPayloadDigest}, {"target_spec_digest", targetSpecDigest},
	} {
		if err := identity.CheckField(f.name, f.v, false); err != nil {
			return identity.Digest{}, err
		}
	}
	if targetID == "" {
		return identity.Digest{}, fmt.Errorf("selected delta: empty target id")
	}
	return identity.H(identity.DomainSelectedDelta, map[string]any{
		"selected_payload_digest": selectedPayloadDigest,
		"target_id":               targetID,
		"target_spec_digest":      targetSpecDigest,
	})
}

// opIdentity is one op row's identity in the selected payload. Unknown op
// keys never reach a selected payload: resolution already refused them.
func opIdentity(op *bundle.Op) (map[string]any, error) {
	if len(op.Extra) > 0 {
		return nil, fmt.Errorf("%s: target-selected op %s carries unregistered fields %q", op.Key(""), op.Slot, keys(boolKeys(op.Extra)))
	}
	archs, err := canonicalSet("architecture", op.Architectures)
	if err != nil {
		return nil, fieldErr(op.Key("architectures"), err)
	}
	dtypes, err := canonicalSet("dtype", op.Dtypes)
	if err != nil {
		return nil, fieldErr(op.Key("dtypes"), err)
	}
	cuda := map[string]bool{}
	for _, c := range op.CUDASources {
		cuda[c] = true
	}
	if len(op.AOTExports) > 0 {
		// The AOT identity fields (artifact resource plan and the exports'
		// execution identity) depend on the provider's call ABI, which is
		// not modelled yet; refuse rather than emit a partial identity.
		return nil, fmt.Errorf("%s: selected payloads of AOT rows are not supported yet", op.Key("aot_exports"))
	}
	return map[string]any{
		"architectures":  archs,
		"base_kernel":    nullable(op.BaseKernel),
		"cuda_sources":   keys(cuda),
		"dtypes":         dtypes,
		"entry":          op.Entry,
		"metadata":       nullable(op.Metadata),
		"override_point": nullable(op.OverridePoint),
		"prepare":        nullable(op.Prepare),
		"setup":          nullable(op.Setup),
		"slot":           op.Slot,
		"source":         op.Source,
		"variant":        op.Variant,
	}, nil
}

func canonicalSet(field string, values []string) ([]string, error) {
	set := map[string]bool{}
	for _, v := range values {
		c, err := bundle.CanonicalText(field, v)
		if err != nil {
			return nil, err
		}
		set[c] = true
	}
	return keys(set), nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func keys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boolKeys(m map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func fieldErr(key string, err error) error {
	return &bundle.Error{File: bundle.FileName, Key: key, Reason: err.Error(), Class: bundle.ErrPath}
}

// selectedFile is the SHA-256 and size of a selected file: from the
// bundle's snapshot, which read it once, when it holds the file, and
// otherwise from one guarded read of the directory.
func selectedFile(b *bundle.Bundle, rel string) (string, int64, error) {
	if b.Snapshot != nil {
		if data, ok := b.Snapshot.ReadFile(rel); ok {
			sum, _ := b.Snapshot.SHA256(rel)
			return sum, int64(len(data)), nil
		}
	}
	return hashFile(b.Dir, rel)
}

// hashFile reads a selected file once, refusing links and special files
// and a file that changes while it is read. The open never blocks (a FIFO
// swapped in after the walk is refused by its descriptor's status) and
// reads at most one byte past the size first seen.
func hashFile(root, rel string) (string, int64, error) {
	full := filepath.Join(root, filepath.FromSlash(rel))
	before, err := os.Lstat(full)
	if err != nil {
		return "", 0, fmt.Errorf("selected file %s: %w", rel, err)
	}
	if !before.Mode().IsRegular() {
		return "", 0, fmt.Errorf("selected file %s is not a regular file", rel)
	}
	if before.Size() > bundle.MaxFileBytes {
		return "", 0, fmt.Errorf("selected file %s is %d bytes; at most %d are allowed", rel, before.Size(), bundle.MaxFileBytes)
	}
	f, opened, err := bundle.OpenRegular(full)
	if err != nil {
		return "", 0, fmt.Errorf("selected file %s: %w", rel, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, before.Size()+1))
	f.Close()
	if err != nil {
		return "", 0, fmt.Errorf("selected file %s: %w", rel, err)
	}
	after, err := os.Lstat(full)
	if err != nil {
		return "", 0, fmt.Errorf("selected file %s: %w", rel, err)
	}
	if !os.SameFile(before, opened) || !os.SameFile(before, after) || after.Size() != before.Size() || after.ModTime() != before.ModTime() || int64(len(data)) != after.Size() {
		return "", 0, fmt.Errorf("selected file %s changed while being read", rel)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), int64(len(data)), nil
}
