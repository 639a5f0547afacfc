package materialize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/kernels/bundle"
)

// Names of the runtime files at the tree root and under metadata/.
const (
	RuntimeManifestName = "manifest.toml"
	RuntimeRebuildName  = "rebuild.json"
	TreeMetadataName    = "metadata/cacheon_engine_tree.json"
	runtimeBundleID     = bundle.MaterializedBundleID
)

// runtimeOp is one op row of the runtime manifest, with every path
// already rewritten to the emitted tree.
type runtimeOp struct {
	Slot          string
	Variant       string
	Source        string // the entry shim
	Entry         string
	Prepare       string
	Setup         string
	BaseKernel    string
	OverridePoint string
	Metadata      string
	Dtypes        []string
	Architectures []string
	CUDASources   []string
}

// runtimePatch is one dependency patch of the runtime manifest.
type runtimePatch struct {
	Target string
	Path   string
}

// runtimeManifest renders the manifest.toml the substrate loads: the
// materialized bundle id and ABI, dependency patches sorted by (target,
// path), then the ops in the order given (contributions in active-target
// order, each sorted by slot and variant). Strings are written as JSON
// strings, which TOML reads as basic strings.
func runtimeManifest(abi string, ops []runtimeOp, patches []runtimePatch) ([]byte, error) {
	var b bytes.Buffer
	if err := kv(&b, "bundle_id", runtimeBundleID); err != nil {
		return nil, err
	}
	if err := kv(&b, "abi_version", abi); err != nil {
		return nil, err
	}
	sorted := append([]runtimePatch(nil), patches...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Target != sorted[j].Target {
			return sorted[i].Target < sorted[j].Target
		}
		return sorted[i].Path < sorted[j].Path
	})
	for _, p := range sorted {
		b.WriteString("\n[[dep_patches]]\n")
		if err := kv(&b, "target", p.Target); err != nil {
			return nil, err
		}
		if err := kv(&b, "path", p.Path); err != nil {
			return nil, err
		}
	}
	for _, op := range ops {
		b.WriteString("\n[[ops]]\n")
		for _, f := range []struct {
			key, value string
			optional   bool
		}{
			{"slot", op.Slot, false}, {"variant", op.Variant, false}, {"source", op.Source, false}, {"entry", op.Entry, false},
			{"prepare", op.Prepare, true}, {"setup", op.Setup, true}, {"base_kernel", op.BaseKernel, true},
			{"override_point", op.OverridePoint, true}, {"metadata", op.Metadata, true},
		} {
			if f.optional && f.value == "" {
				continue
			}
			if err := kv(&b, f.key, f.value); err != nil {
				return nil, err
			}
		}
		for _, f := range []struct {
			key    string
			values []string
		}{{"dtypes", op.Dtypes}, {"architectures", op.Architectures}, {"cuda_sources", op.CUDASources}} {
			if len(f.values) == 0 {
				continue
			}
			quoted := make([]string, len(f.values))
			for i, v := range f.values {
				q, err := canonjson.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("runtime manifest %s: %w", f.key, err)
				}
				quoted[i] = string(q)
			}
			fmt.Fprintf(&b, "%s = [%s]\n", f.key, strings.Join(quoted, ", "))
		}
	}
	return b.Bytes(), nil
}

func kv(b *bytes.Buffer, key, value string) error {
	q, err := canonjson.Marshal(value)
	if err != nil {
		return fmt.Errorf("runtime manifest %s: %w", key, err)
	}
	fmt.Fprintf(b, "%s = %s\n", key, q)
	return nil
}

// indentedJSON renders v as Python's json.dumps(v, indent=2,
// sort_keys=True, ensure_ascii=False) plus a newline: the canonical JSON,
// re-indented.
func indentedJSON(v any) ([]byte, error) {
	c, err := canonjson.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, c, "", "  "); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// rebuildStep is one step of the runtime rebuild plan.
type rebuildStep struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

// patcherOrder is the order the runtime rebuild runs reviewed patchers
// in: dependency patches first, then CUDA extensions, then CuTe CUBINs.
var patcherOrder = map[string]int{"apply_dep_patch.py": 0, "build_cuda_ext.py": 1, "build_cute_cubin.py": 2}

// unionRebuild merges the rebuild steps of every contribution into one
// plan ordered by patcher. The same patcher named twice runs once; two
// steps that name one patcher differently (another type or location)
// conflict.
func unionRebuild(steps []rebuildStep) ([]rebuildStep, error) {
	byName := map[string]rebuildStep{}
	for _, s := range steps {
		name := s.Path[strings.LastIndexByte(s.Path, '/')+1:]
		if _, ok := patcherOrder[name]; !ok {
			return nil, fmt.Errorf("rebuild step %s: not a registered patcher", s.Path)
		}
		if prev, ok := byName[name]; ok && prev != s {
			return nil, fmt.Errorf("rebuild steps conflict: %s/%s and %s/%s", prev.Type, prev.Path, s.Type, s.Path)
		}
		byName[name] = s
	}
	out := make([]rebuildStep, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		return patcherOrder[out[i].Path[strings.LastIndexByte(out[i].Path, '/')+1:]] < patcherOrder[out[j].Path[strings.LastIndexByte(out[j].Path, '/')+1:]]
	})
	return out, nil
}

// entryShim renders the module that the runtime manifest names as an
// op's source: it imports the names the runtime calls from the namespaced
// module, so the runtime never imports a bundle path directly. Optional
// names (an override row's plain entry) are imported only if present.
func entryShim(module string, required, optional []string) []byte {
	var b bytes.Buffer
	for _, n := range required {
		fmt.Fprintf(&b, "from %s import %s as %s\n", module, n, n)
	}
	for _, n := range optional {
		fmt.Fprintf(&b, "try:\n    from %s import %s as %s\nexcept ImportError:\n    pass\n", module, n, n)
	}
	return b.Bytes()
}
