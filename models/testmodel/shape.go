// Package testmodel makes small deterministic Llama-style models for tests
// and CPU lanes: a Hugging Face style config.json and a BF16
// model.safetensors whose values come from a documented counter-based
// generator (see generator.go), so a seed and a shape name the exact
// bytes. Dense models follow the Llama tensor layout; MoE models follow
// Mixtral's. Weights are plain random matrices with std 0.02 and norm
// weights near 1: the model is deliberately not "peaked" (no scaled heads
// or embeddings), so numerical bugs in kernels stay visible in its logits.
package testmodel

import (
	"errors"
	"fmt"
)

// Shape is the architecture of a test model.
type Shape struct {
	Layers       int // num_hidden_layers
	Hidden       int // hidden_size
	Heads        int // num_attention_heads
	KVHeads      int // num_key_value_heads
	Intermediate int // intermediate_size (per expert for MoE)
	Vocab        int // vocab_size
	MaxPositions int // max_position_embeddings

	MoE     bool
	Experts int // num_local_experts (MoE only)
	TopK    int // num_experts_per_tok (MoE only)
}

// DefaultShape is small enough that tests and the CPU lane run in
// milliseconds, with grouped-query attention (4 query heads over 2 KV
// heads) so that path is exercised too.
func DefaultShape(moe bool) Shape {
	s := Shape{
		Layers:       2,
		Hidden:       64,
		Heads:        4,
		KVHeads:      2,
		Intermediate: 128,
		Vocab:        256,
		MaxPositions: 2048,
	}
	if moe {
		s.MoE = true
		s.Experts = 4
		s.TopK = 2
	}
	return s
}

// maxDim bounds every dimension so products of two dimensions cannot
// overflow and a typo cannot ask for a petabyte.
const maxDim = 1 << 24

// HeadDim is hidden_size / num_attention_heads.
func (s Shape) HeadDim() int { return s.Hidden / s.Heads }

// Validate reports the first inconsistency of s, naming the config field.
func (s Shape) Validate() error {
	dims := []struct {
		name string
		v    int
	}{
		{"num_hidden_layers", s.Layers},
		{"hidden_size", s.Hidden},
		{"num_attention_heads", s.Heads},
		{"num_key_value_heads", s.KVHeads},
		{"intermediate_size", s.Intermediate},
		{"vocab_size", s.Vocab},
		{"max_position_embeddings", s.MaxPositions},
	}
	for _, d := range dims {
		if d.v < 1 || d.v > maxDim {
			return fmt.Errorf("%s = %d must be between 1 and %d", d.name, d.v, maxDim)
		}
	}
	if s.Layers > 1<<12 {
		return fmt.Errorf("num_hidden_layers = %d exceeds %d", s.Layers, 1<<12)
	}
	if s.Hidden%s.Heads != 0 {
		return fmt.Errorf("hidden_size %d is not a multiple of num_attention_heads %d", s.Hidden, s.Heads)
	}
	if s.HeadDim()%2 != 0 {
		return fmt.Errorf("head dimension %d (hidden_size / num_attention_heads) must be even for rotary embeddings", s.HeadDim())
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("num_attention_heads %d is not a multiple of num_key_value_heads %d", s.Heads, s.KVHeads)
	}
	if !s.MoE {
		if s.Experts != 0 || s.TopK != 0 {
			return errors.New("num_local_experts and num_experts_per_tok apply only to MoE models")
		}
		return nil
	}
	if s.Experts < 1 || s.Experts > 1<<12 {
		return fmt.Errorf("num_local_experts = %d must be between 1 and %d", s.Experts, 1<<12)
	}
	if s.TopK < 1 || s.TopK > s.Experts {
		return fmt.Errorf("num_experts_per_tok = %d must be between 1 and num_local_experts %d", s.TopK, s.Experts)
	}
	return nil
}

// kind says how a tensor's values are drawn.
type kind int

const (
	matrix kind = iota // N(0, 0.02²)-like, see generator.go
	norm               // 1 + N(0, 0.02²)-like
)

// weightStd is the standard deviation of every matrix and of the noise on
// norm weights. 0.02 is the usual initializer range; larger embedding or
// head scales "peak" the logits and hide kernel bugs.
const weightStd = 0.02

type tensorSpec struct {
	name  string
	shape []int64
	kind  kind
}

// tensors lists every tensor of the model with its Hugging Face name.
func (s Shape) tensors() []tensorSpec {
	h, v, in := int64(s.Hidden), int64(s.Vocab), int64(s.Intermediate)
	q := int64(s.Heads * s.HeadDim())
	kv := int64(s.KVHeads * s.HeadDim())
	out := []tensorSpec{
		{"model.embed_tokens.weight", []int64{v, h}, matrix},
		{"model.norm.weight", []int64{h}, norm},
		{"lm_head.weight", []int64{v, h}, matrix},
	}
	for i := 0; i < s.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		out = append(out,
			tensorSpec{p + "input_layernorm.weight", []int64{h}, norm},
			tensorSpec{p + "self_attn.q_proj.weight", []int64{q, h}, matrix},
			tensorSpec{p + "self_attn.k_proj.weight", []int64{kv, h}, matrix},
			tensorSpec{p + "self_attn.v_proj.weight", []int64{kv, h}, matrix},
			tensorSpec{p + "self_attn.o_proj.weight", []int64{h, q}, matrix},
			tensorSpec{p + "post_attention_layernorm.weight", []int64{h}, norm},
		)
		if !s.MoE {
			out = append(out,
				tensorSpec{p + "mlp.gate_proj.weight", []int64{in, h}, matrix},
				tensorSpec{p + "mlp.up_proj.weight", []int64{in, h}, matrix},
				tensorSpec{p + "mlp.down_proj.weight", []int64{h, in}, matrix},
			)
			continue
		}
		out = append(out, tensorSpec{p + "block_sparse_moe.gate.weight", []int64{int64(s.Experts), h}, matrix})
		for e := 0; e < s.Experts; e++ {
			ep := fmt.Sprintf("%sblock_sparse_moe.experts.%d.", p, e)
			out = append(out,
				tensorSpec{ep + "w1.weight", []int64{in, h}, matrix}, // gate
				tensorSpec{ep + "w3.weight", []int64{in, h}, matrix}, // up
				tensorSpec{ep + "w2.weight", []int64{h, in}, matrix}, // down
			)
		}
	}
	return out
}
