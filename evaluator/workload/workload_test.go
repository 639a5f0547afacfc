package workload

import (
	"strconv"
	"strings"
	"testing"
)

const generated = `
workload "cpu-smoke" {
  max_new_tokens = 8
  temperature    = 0
  warmup         = 2
  conditioning   = 1

  engine {
    tensor_parallel = 1
    cuda_graphs     = false
  }

  prompts {
    seed       = 7
    batches    = 6
    batch_size = 2
    prompt_len = 4
    vocab_size = 512
  }
}
`

func TestGeneratedWorkload(t *testing.T) {
	w, diags := Parse("w.hcl", []byte(generated))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(w.PromptBatches) != 6 || len(w.PromptBatches[0]) != 2 || len(w.PromptBatches[0][0]) != 4 {
		t.Fatalf("shape %d×%d×%d", len(w.PromptBatches), len(w.PromptBatches[0]), len(w.PromptBatches[0][0]))
	}
	if w.TimedBatches() != 4 || w.ExpectedTokens(0) != 16 {
		t.Fatalf("timed %d, expected tokens %d", w.TimedBatches(), w.ExpectedTokens(0))
	}
	if first, end := w.ConditioningBatches(); first != 1 || end != 2 {
		t.Fatalf("conditioning batches [%d, %d)", first, end)
	}
	// The first prompt and the digest, recomputed independently in Python:
	//   hashlib.sha256(b"cacheon-workload-prompts-v1" + struct.pack(">QQQQ", 7, 0, 0, k))
	// and json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False).
	if got := w.PromptBatches[0][0]; got[0] != 41 || got[1] != 26 || got[2] != 215 || got[3] != 265 {
		t.Fatalf("first prompt %v", got)
	}
	d, err := w.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d != "287ac53f82492481a2b00f3b0b7726c757a1708a010f64bceeb9b5aaba395fb4" {
		t.Fatalf("digest %s", d)
	}
}

func TestExplicitBatchesEqualTheirGeneratedTwin(t *testing.T) {
	w, diags := Parse("w.hcl", []byte(generated))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var b strings.Builder
	b.WriteString("workload \"cpu-smoke\" {\n  max_new_tokens = 8\n  temperature = 0\n  warmup = 2\n  conditioning = 1\n  engine {\n    tensor_parallel = 1\n    cuda_graphs = false\n  }\n")
	for _, batch := range w.PromptBatches {
		b.WriteString("  batch {\n    prompts = [")
		for j, p := range batch {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("[")
			for k, id := range p {
				if k > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Itoa(id))
			}
			b.WriteString("]")
		}
		b.WriteString("]\n  }\n")
	}
	b.WriteString("}\n")
	e, diags := Parse("explicit.hcl", []byte(b.String()))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	dw, _ := w.Digest()
	de, _ := e.Digest()
	if dw != de {
		t.Fatalf("explicit batches digest %s, generated %s: the digest must depend on the prompts only", de, dw)
	}
}

func TestWorkloadErrorsNameTheField(t *testing.T) {
	edit := func(old, new string) string { return strings.Replace(generated, old, new, 1) }
	cases := []struct {
		name, src, want string
	}{
		{"warmup below conditioning", edit("warmup         = 2", "warmup = 0"), "w.hcl:5,"},
		{"no timed window", edit("batches    = 6", "batches = 2"), "no timed window"},
		{"negative temperature", edit("temperature    = 0", "temperature = -1"), "temperature: -1 is outside [0, 2]"},
		{"no decode step", edit("max_new_tokens = 8", "max_new_tokens = 1"), "max_new_tokens: 1 is outside [2, 4096]"},
		{"fractional tokens", edit("max_new_tokens = 8", "max_new_tokens = 8.5"), "whole number"},
		{"string count", edit("warmup         = 2", `warmup = "2"`), "Integer required"},
		{"missing engine", edit("engine {", "enginex {"), "Unsupported block type"},
		{"prompts and batch", edit("prompts {", "batch {\n prompts = [[1]]\n}\n  prompts {"), "either one `prompts"},
		{"huge generator", strings.Replace(edit("batch_size = 2", "batch_size = 1024"), "prompt_len = 4", "prompt_len = 32768", 1), "Workload too large"},
		{"ragged batch", edit("prompts {\n    seed       = 7\n    batches    = 6\n    batch_size = 2\n    prompt_len = 4\n    vocab_size = 512\n  }", "batch {\n prompts = [[1, 2], [3]]\n}\nbatch {\n prompts = [[1]]\n}\nbatch {\n prompts = [[1]]\n}"), "same, non-zero length"},
		{"two workloads", generated + generated, "One workload block required"},
		{"unknown attribute", edit("warmup ", "warmupx = 1\n  warmup "), "Unsupported argument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, diags := Parse("w.hcl", []byte(c.src))
			if !diags.HasErrors() || !strings.Contains(diags.Error(), c.want) {
				t.Fatalf("diags = %v, want an error containing %q", diags, c.want)
			}
		})
	}
}
