package testmodel

import (
	"encoding/json"
	"fmt"
)

// RMSNormEps and RopeTheta are fixed for every test model.
const (
	RMSNormEps = 1e-6
	RopeTheta  = 10000
)

// hfConfig is config.json in the Hugging Face layout. Field order is the
// file's key order, which keeps the file byte-deterministic. config.json is
// read by model loaders, not hashed as an identity payload, so floats are
// fine here.
type hfConfig struct {
	Architectures         []string `json:"architectures"`
	ModelType             string   `json:"model_type"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	VocabSize             int      `json:"vocab_size"`
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	NumLocalExperts       int      `json:"num_local_experts,omitempty"`
	NumExpertsPerTok      int      `json:"num_experts_per_tok,omitempty"`
	HiddenAct             string   `json:"hidden_act"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	RopeTheta             float64  `json:"rope_theta"`
	AttentionBias         bool     `json:"attention_bias"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	TorchDType            string   `json:"torch_dtype"`
	InitializerRange      float64  `json:"initializer_range"`
	TestModel             origin   `json:"cacheon_test_model"`
}

// origin records how the weights were made, so a model directory says how
// to regenerate itself.
type origin struct {
	Generator string `json:"generator"`
	Seed      uint64 `json:"seed"`
}

// ConfigJSON returns the bytes of config.json for a model of shape s made
// from seed.
func ConfigJSON(s Shape, seed uint64) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := hfConfig{
		Architectures:         []string{"LlamaForCausalLM"},
		ModelType:             "llama",
		HiddenSize:            s.Hidden,
		IntermediateSize:      s.Intermediate,
		NumAttentionHeads:     s.Heads,
		NumKeyValueHeads:      s.KVHeads,
		HeadDim:               s.HeadDim(),
		NumHiddenLayers:       s.Layers,
		VocabSize:             s.Vocab,
		MaxPositionEmbeddings: s.MaxPositions,
		HiddenAct:             "silu",
		RMSNormEps:            RMSNormEps,
		RopeTheta:             RopeTheta,
		TorchDType:            "bfloat16",
		InitializerRange:      weightStd,
		TestModel:             origin{Generator: GeneratorName, Seed: seed},
	}
	if s.MoE {
		c.Architectures = []string{"MixtralForCausalLM"}
		c.ModelType = "mixtral"
		c.NumLocalExperts = s.Experts
		c.NumExpertsPerTok = s.TopK
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding config.json: %w", err)
	}
	return append(b, '\n'), nil
}
