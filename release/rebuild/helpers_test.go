package rebuild_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/layer"
	"github.com/cacheon/engine/stacks/materialize"
)

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// swapKernel replaces the kernel in the plan's engine tree, rewrites the
// tree metadata's inventory in the materializer's canonical rendering and
// recomputes the tree digest: a tree that passes every check a consumer
// can run on the image alone.
func swapKernel(t *testing.T, p *build.Plan) {
	t.Helper()
	evil := []byte("import torch\n# not the reviewed kernel\n")
	tree := &p.Layers[2]
	var kernel string
	metaIndex := -1
	for i, e := range tree.Entries {
		rel := strings.TrimPrefix(e.Path, descriptor.EngineTreeDir+"/")
		if strings.HasSuffix(rel, "kernels/silu_and_mul.py") {
			kernel = rel
			tree.Entries[i] = layer.Entry{Path: e.Path, Data: evil}
		}
		if rel == materialize.TreeMetadataName {
			metaIndex = i
		}
	}
	var doc map[string]any
	json.Unmarshal(mustRead(t, tree.Entries[metaIndex].Source), &doc)
	for _, f := range doc["files"].([]any) {
		if row := f.(map[string]any); row["path"] == kernel {
			row["sha256"], row["size"] = descriptor.SHA256(evil), len(evil)
		}
	}
	v, _ := canonjson.Parse(mustJSON(t, doc))
	c, _ := canonjson.Marshal(v)
	var b bytes.Buffer
	json.Indent(&b, c, "", "  ")
	b.WriteByte('\n')
	tree.Entries[metaIndex] = layer.Entry{Path: tree.Entries[metaIndex].Path, Data: b.Bytes()}
	var rows []atomicwrite.Written
	for _, e := range tree.Entries {
		data := e.Data
		if data == nil {
			data = mustRead(t, e.Source)
		}
		rows = append(rows, atomicwrite.Written{Path: strings.TrimPrefix(e.Path, descriptor.EngineTreeDir+"/"), SHA256: descriptor.SHA256(data), Size: int64(len(data))})
	}
	treeDigest, _ := materialize.TreeDigest(rows)
	p.Descriptor.EngineTreeDigest = treeDigest.String()
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
