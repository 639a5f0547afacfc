// Package workload is what a qualification asks every engine to serve: the
// prompt batches (token ids, written out or drawn from a seeded generator),
// the warmup and conditioning counts, the tokens generated per prompt and
// the sampling settings, read from a reviewed HCL file and identified by
// the upstream marginal-workload digest.
//
// The read structure is the upstream one (spec §5.2): batches run in
// order; the first Warmup batches are untimed, the Conditioning batches
// just before the first timed batch are the conditioning (compared between
// B and C), and every batch from index Warmup on is one timed window.
package workload

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/cacheon/engine/internal/identity"
)

// Workload is a decoded, validated workload file.
type Workload struct {
	Name          string
	MaxNewTokens  int
	Temperature   float64
	TopLogprobs   int
	Warmup        int
	Conditioning  int
	Engine        Engine
	PromptBatches [][][]int // batch → prompt → token ids
	// Generator is how PromptBatches were drawn, when they were (nil when
	// the file wrote them out).
	Generator *Generator
}

// Engine is the engine configuration every arm is served with.
type Engine struct {
	TensorParallel int
	CUDAGraphs     bool
}

// Generator draws prompts deterministically from a seed, so a workload
// of many batches stays a few lines of reviewed HCL.
type Generator struct {
	Seed      uint64
	Batches   int
	BatchSize int
	PromptLen int
	VocabSize int
}

// Prompts draws the batches. Token k of prompt j in batch i is the first
// eight bytes of SHA-256("cacheon-workload-prompts-v1" ‖ seed ‖ i ‖ j ‖ k),
// big-endian, modulo the vocabulary size: any language can redraw them.
func (g Generator) Prompts() [][][]int {
	batches := make([][][]int, g.Batches)
	var msg [len(generatorPrefix) + 32]byte
	copy(msg[:], generatorPrefix)
	for i := range batches {
		batches[i] = make([][]int, g.BatchSize)
		for j := range batches[i] {
			p := make([]int, g.PromptLen)
			for k := range p {
				binary.BigEndian.PutUint64(msg[len(generatorPrefix):], g.Seed)
				binary.BigEndian.PutUint64(msg[len(generatorPrefix)+8:], uint64(i))
				binary.BigEndian.PutUint64(msg[len(generatorPrefix)+16:], uint64(j))
				binary.BigEndian.PutUint64(msg[len(generatorPrefix)+24:], uint64(k))
				sum := sha256.Sum256(msg[:])
				p[k] = int(binary.BigEndian.Uint64(sum[:8]) % uint64(g.VocabSize))
			}
			batches[i][j] = p
		}
	}
	return batches
}

const generatorPrefix = "cacheon-workload-prompts-v1"

// EngineConfigDigest identifies the engine configuration.
func (w *Workload) EngineConfigDigest() (string, error) {
	d, err := identity.H(identity.DomainEngineConfig, map[string]any{
		"tensor_parallel": w.Engine.TensorParallel,
		"cuda_graphs":     w.Engine.CUDAGraphs,
	})
	return d.String(), err
}

// Digest is the upstream marginal-workload digest.
func (w *Workload) Digest() (string, error) {
	ecd, err := w.EngineConfigDigest()
	if err != nil {
		return "", err
	}
	batches := make([]any, len(w.PromptBatches))
	for i, b := range w.PromptBatches {
		prompts := make([]any, len(b))
		for j, p := range b {
			ids := make([]any, len(p))
			for k, id := range p {
				ids[k] = id
			}
			prompts[j] = ids
		}
		batches[i] = prompts
	}
	d, err := identity.H(identity.DomainMarginalWorkload, map[string]any{
		"conditioning_count":   w.Conditioning,
		"engine_config_digest": ecd,
		"max_new_tokens":       w.MaxNewTokens,
		"prompt_batches":       batches,
		"temperature":          strconv.FormatFloat(w.Temperature, 'g', 17, 64),
		"top_logprobs_num":     w.TopLogprobs,
		"warmup_count":         w.Warmup,
	})
	return d.String(), err
}

// TimedBatches is the number of timed windows one read yields.
func (w *Workload) TimedBatches() int { return len(w.PromptBatches) - w.Warmup }

// ConditioningBatches are the indexes of the conditioning batches: the
// Conditioning batches just before the first timed one.
func (w *Workload) ConditioningBatches() (first, end int) {
	return w.Warmup - w.Conditioning, w.Warmup
}

// ExpectedTokens is how many tokens batch i must return.
func (w *Workload) ExpectedTokens(i int) int { return len(w.PromptBatches[i]) * w.MaxNewTokens }

// DecodeTokens is how many of batch i's tokens its decode phase generates
// (all but each prompt's first, which the prefill gives): a window's tokens.
func (w *Workload) DecodeTokens(i int) int { return len(w.PromptBatches[i]) * (w.MaxNewTokens - 1) }

// validate checks the read structure; each problem names its field.
func (w *Workload) validate() []fieldError {
	var errs []fieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldError{field, fmt.Sprintf(format, args...)})
	}
	n := len(w.PromptBatches)
	// At least 2: a window times decode steps, and the first token is the
	// prefill's.
	if w.MaxNewTokens < 2 || w.MaxNewTokens > 4096 {
		add("max_new_tokens", "%d is outside [2, 4096] (a window times the decode steps after the prefill's token)", w.MaxNewTokens)
	}
	if math.IsNaN(w.Temperature) || w.Temperature < 0 || w.Temperature > 2 {
		add("temperature", "%v is outside [0, 2]", w.Temperature)
	}
	if w.TopLogprobs < 0 || w.TopLogprobs > 64 {
		add("top_logprobs", "%d is outside [0, 64]", w.TopLogprobs)
	}
	if w.Conditioning < 1 {
		add("conditioning", "%d: at least one conditioning batch is needed", w.Conditioning)
	}
	if w.Warmup < w.Conditioning {
		add("warmup", "%d is less than conditioning (%d): the conditioning batches are warmup batches", w.Warmup, w.Conditioning)
	}
	if n <= w.Warmup {
		add("batches", "%d batches leave no timed window after %d warmup batches", n, w.Warmup)
	}
	if w.Engine.TensorParallel < 1 || w.Engine.TensorParallel > 8 {
		add("engine.tensor_parallel", "%d is outside [1, 8]", w.Engine.TensorParallel)
	}
	for i, b := range w.PromptBatches {
		if len(b) == 0 {
			add("batch", "batch %d has no prompts", i)
			continue
		}
		for j, p := range b {
			if len(p) == 0 || len(p) != len(b[0]) {
				add("batch", "batch %d prompt %d has %d tokens; every prompt of a batch has the same, non-zero length (%d)", i, j, len(p), len(b[0]))
				break
			}
			for _, id := range p {
				if id < 0 {
					add("batch", "batch %d prompt %d holds the negative token id %d", i, j, id)
					break
				}
			}
		}
	}
	return errs
}

type fieldError struct{ field, reason string }
