package workload

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/cacheon/engine/internal/hclload"
)

var workloadSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "max_new_tokens", Required: true},
		{Name: "temperature", Required: true},
		{Name: "top_logprobs"},
		{Name: "warmup", Required: true},
		{Name: "conditioning", Required: true},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "engine"}, {Type: "prompts"}, {Type: "batch"}},
}

var engineSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "tensor_parallel", Required: true},
	{Name: "cuda_graphs", Required: true},
}}

var generatorSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "seed", Required: true},
	{Name: "batches", Required: true},
	{Name: "batch_size", Required: true},
	{Name: "prompt_len", Required: true},
	{Name: "vocab_size", Required: true},
}}

var batchSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "prompts", Required: true}}}

// Limits on a generated workload, so a few lines cannot ask for gigabytes.
const (
	maxBatches   = 4096
	maxBatchSize = 1024
	maxPromptLen = 32768
	maxTokens    = 1 << 24 // token ids in all batches together
)

// Load reads the workload file at path.
func Load(path string) (*Workload, hcl.Diagnostics) {
	src, err := hclload.ReadPath(path)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read workload file", Detail: fmt.Sprintf("Reading %s failed: %v.", path, err)}}
	}
	return Parse(path, src)
}

// Parse decodes a workload file from src; filename names it in diagnostics.
func Parse(filename string, src []byte) (*Workload, hcl.Diagnostics) {
	block, diags := hclload.OneBlock(filename, src, "workload")
	if diags.HasErrors() {
		return nil, diags
	}
	w, d := decodeWorkloadBlock(block)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return nil, diags
	}
	return w, diags
}

func decodeWorkloadBlock(block *hcl.Block) (*Workload, hcl.Diagnostics) {
	w := &Workload{Name: block.Labels[0]}
	content, diags := block.Body.Content(workloadSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	ranges := map[string]hcl.Range{"batches": block.DefRange, "batch": block.DefRange}
	for name, a := range content.Attributes {
		ranges[name] = a.Expr.Range()
	}
	ints := map[string]*int{"max_new_tokens": &w.MaxNewTokens, "top_logprobs": &w.TopLogprobs, "warmup": &w.Warmup, "conditioning": &w.Conditioning}
	for name, dst := range ints {
		if a, ok := content.Attributes[name]; ok {
			*dst = hclload.Int(a, &diags)
		}
	}
	w.Temperature = hclload.Number(content.Attributes["temperature"], &diags)

	engines := content.Blocks.OfType("engine")
	if len(engines) != 1 {
		diags = append(diags, hclload.ErrorAt(block.DefRange, "One engine block required", fmt.Sprintf("A workload has one `engine { tensor_parallel = N, cuda_graphs = BOOL }` block; found %d.", len(engines))))
	} else {
		ec, d := engines[0].Body.Content(engineSchema)
		diags = append(diags, d...)
		if !d.HasErrors() {
			w.Engine.TensorParallel = hclload.Int(ec.Attributes["tensor_parallel"], &diags)
			w.Engine.CUDAGraphs = hclload.Bool(ec.Attributes["cuda_graphs"], &diags)
			ranges["engine.tensor_parallel"] = ec.Attributes["tensor_parallel"].Expr.Range()
		}
	}

	gens, batches := content.Blocks.OfType("prompts"), content.Blocks.OfType("batch")
	switch {
	case len(gens) == 1 && len(batches) == 0:
		gc, d := gens[0].Body.Content(generatorSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			break
		}
		g := &Generator{}
		seed := hclload.Int(gc.Attributes["seed"], &diags)
		g.Seed = uint64(seed)
		if seed < 0 {
			diags = append(diags, hclload.ErrorAt(gc.Attributes["seed"].Expr.Range(), "Invalid seed", "seed is a non-negative integer."))
		}
		dims := []struct {
			name string
			dst  *int
			max  int
		}{{"batches", &g.Batches, maxBatches}, {"batch_size", &g.BatchSize, maxBatchSize}, {"prompt_len", &g.PromptLen, maxPromptLen}, {"vocab_size", &g.VocabSize, 1 << 24}}
		for _, dim := range dims {
			a := gc.Attributes[dim.name]
			*dim.dst = hclload.Int(a, &diags)
			if *dim.dst < 1 || *dim.dst > dim.max {
				diags = append(diags, hclload.ErrorAt(a.Expr.Range(), "Value out of range", fmt.Sprintf("%s is %d; allowed: 1 to %d.", dim.name, *dim.dst, dim.max)))
			}
		}
		if !diags.HasErrors() && g.Batches*g.BatchSize*g.PromptLen > maxTokens {
			diags = append(diags, hclload.ErrorAt(gens[0].DefRange, "Workload too large", fmt.Sprintf("batches × batch_size × prompt_len is %d token ids; the limit is %d.", g.Batches*g.BatchSize*g.PromptLen, maxTokens)))
		}
		if !diags.HasErrors() {
			w.Generator = g
			w.PromptBatches = g.Prompts()
		}
		ranges["batches"] = gens[0].DefRange
	case len(gens) == 0 && len(batches) > 0:
		total := 0
		for _, b := range batches {
			bc, d := b.Body.Content(batchSchema)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			prompts := tokenLists(bc.Attributes["prompts"], &diags)
			for _, p := range prompts {
				total += len(p)
			}
			if total > maxTokens {
				diags = append(diags, hclload.ErrorAt(b.DefRange, "Workload too large", fmt.Sprintf("the batches hold more than %d token ids.", maxTokens)))
				break
			}
			w.PromptBatches = append(w.PromptBatches, prompts)
		}
		if len(batches) > maxBatches {
			diags = append(diags, hclload.ErrorAt(batches[maxBatches].DefRange, "Too many batches", fmt.Sprintf("A workload has at most %d batches.", maxBatches)))
		}
	default:
		diags = append(diags, hclload.ErrorAt(block.DefRange, "Prompts required",
			fmt.Sprintf("A workload has either one `prompts { seed = ..., batches = ..., batch_size = ..., prompt_len = ..., vocab_size = ... }` block or one or more `batch { prompts = [[ids], ...] }` blocks; found %d prompts and %d batch blocks.", len(gens), len(batches))))
	}
	if diags.HasErrors() {
		return nil, diags
	}
	for _, fe := range w.validate() {
		rng, ok := ranges[fe.field]
		if !ok {
			rng = block.DefRange
		}
		diags = append(diags, hclload.ErrorAt(rng, "Invalid workload", fe.field+": "+fe.reason+"."))
	}
	return w, diags
}

// tokenLists decodes [[id, ...], ...].
func tokenLists(a *hcl.Attribute, diags *hcl.Diagnostics) [][]int {
	v, ok := hclload.Value(a, diags)
	if !ok {
		return nil
	}
	bad := func() [][]int {
		*diags = append(*diags, hclload.ErrorAt(a.Expr.Range(), "Token lists required", "prompts is a list of prompts, each a list of token ids: [[1, 2, 3], [4, 5, 6]]."))
		return nil
	}
	if !v.Type().IsTupleType() && !v.Type().IsListType() {
		return bad()
	}
	var out [][]int
	for it := v.ElementIterator(); it.Next(); {
		_, p := it.Element()
		if !p.Type().IsTupleType() && !p.Type().IsListType() {
			return bad()
		}
		var ids []int
		for jt := p.ElementIterator(); jt.Next(); {
			_, id := jt.Element()
			if id.IsNull() || id.Type() != cty.Number {
				return bad()
			}
			ids = append(ids, hclload.IntOf(id, a.Name, a.Expr.Range(), diags))
		}
		out = append(out, ids)
	}
	return out
}
