package enginecli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/models/testmodel"
)

// modelMakeTestView is the --json document of make-test.
type modelMakeTestView struct {
	FormatVersion int              `json:"format_version"`
	Dir           string           `json:"dir"`
	Seed          uint64           `json:"seed"`
	Generator     string           `json:"generator"`
	ModelType     string           `json:"model_type"`
	Shape         modelShapeView   `json:"shape"`
	Tensors       int              `json:"tensors"`
	Parameters    int64            `json:"parameters"`
	Files         []testmodel.File `json:"files"`
}

type modelShapeView struct {
	Layers       int `json:"num_hidden_layers"`
	Hidden       int `json:"hidden_size"`
	Heads        int `json:"num_attention_heads"`
	KVHeads      int `json:"num_key_value_heads"`
	HeadDim      int `json:"head_dim"`
	Intermediate int `json:"intermediate_size"`
	Vocab        int `json:"vocab_size"`
	MaxPositions int `json:"max_position_embeddings"`
	Experts      int `json:"num_local_experts,omitempty"`
	TopK         int `json:"num_experts_per_tok,omitempty"`
}

func newModelMakeTestCommand(s Streams) *cobra.Command {
	var seed uint64
	var out string
	var moe, asJSON bool
	var shape testmodel.Shape
	cmd := &cobra.Command{
		Use:   "make-test --seed N --out DIR [--moe] [shape flags] [--json]",
		Short: "Write a small deterministic Llama-style test model",
		Long: `Write a new model directory DIR holding config.json (Hugging Face Llama
layout; Mixtral with --moe) and model.safetensors (BF16, Hugging Face
tensor names). The bytes are a function of the seed and the shape alone:
the same flags give the same files on every machine.

Weights come from the counter-based generator "cacheon.test-model.v1":
SplitMix64 streams keyed by SHA-256 of the seed and tensor name, twelve
32-bit uniforms per value summed into an approximately normal value
(Irwin-Hall), std 0.02 for every matrix and 1 + 0.02 noise for norm
weights, rounded to BF16 to nearest even. The model is not "peaked" (no
scaled heads or embeddings), so kernel bugs stay visible in its logits.

Defaults: 2 layers, hidden 64, 4 query / 2 KV heads, intermediate 128,
vocab 256, 2048 positions; with --moe, 4 experts and top-2 routing.
DIR must not exist or be an empty directory; it appears complete or not
at all. Seal it afterwards with "cacheon model provision DIR".`,
		Example: `  cacheon model make-test --seed 1 --out /tmp/llama-tiny
  cacheon model make-test --seed 1 --out /tmp/mixtral-tiny --moe --experts 8 --top-k 2
  cacheon model make-test --seed 7 --out /tmp/llama-small --layers 4 --hidden 256 \
      --heads 8 --kv-heads 2 --intermediate 688 --vocab 1024 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			sh := testmodel.DefaultShape(moe)
			flags := cmd.Flags()
			for _, o := range []struct {
				flag string
				dst  *int
				val  int
			}{
				{"layers", &sh.Layers, shape.Layers},
				{"hidden", &sh.Hidden, shape.Hidden},
				{"heads", &sh.Heads, shape.Heads},
				{"kv-heads", &sh.KVHeads, shape.KVHeads},
				{"intermediate", &sh.Intermediate, shape.Intermediate},
				{"vocab", &sh.Vocab, shape.Vocab},
				{"max-position-embeddings", &sh.MaxPositions, shape.MaxPositions},
				{"experts", &sh.Experts, shape.Experts},
				{"top-k", &sh.TopK, shape.TopK},
			} {
				if flags.Changed(o.flag) {
					*o.dst = o.val
				}
			}
			if !moe && (flags.Changed("experts") || flags.Changed("top-k")) {
				return errors.New("--experts and --top-k need --moe")
			}
			if err := sh.Validate(); err != nil {
				return err
			}
			res, err := testmodel.Write(out, sh, seed)
			if err != nil {
				return err
			}
			view := modelMakeTestView{
				FormatVersion: 1,
				Dir:           res.Dir,
				Seed:          seed,
				Generator:     testmodel.GeneratorName,
				ModelType:     "llama",
				Shape: modelShapeView{
					Layers: sh.Layers, Hidden: sh.Hidden, Heads: sh.Heads, KVHeads: sh.KVHeads,
					HeadDim: sh.HeadDim(), Intermediate: sh.Intermediate, Vocab: sh.Vocab,
					MaxPositions: sh.MaxPositions, Experts: sh.Experts, TopK: sh.TopK,
				},
				Tensors:    res.Tensors,
				Parameters: res.Parameters,
				Files:      res.Files,
			}
			if sh.MoE {
				view.ModelType = "mixtral"
			}
			if asJSON {
				return WriteJSON(s.Out, view)
			}
			desc := fmt.Sprintf("%s, %d layers, hidden %d, %d/%d heads, intermediate %d, vocab %d",
				view.ModelType, sh.Layers, sh.Hidden, sh.Heads, sh.KVHeads, sh.Intermediate, sh.Vocab)
			if sh.MoE {
				desc += fmt.Sprintf(", %d experts top-%d", sh.Experts, sh.TopK)
			}
			fmt.Fprintf(s.Out, "wrote %s\n  %s\n  %d tensors, %d parameters, seed %d\n", res.Dir, desc, res.Tensors, res.Parameters, seed)
			for _, f := range res.Files {
				fmt.Fprintf(s.Out, "  %-18s %10d bytes  sha256 %s\n", f.Path, f.Size, f.SHA256)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&seed, "seed", 0, "generator seed (required)")
	f.StringVar(&out, "out", "", "model directory to create (required)")
	f.BoolVar(&moe, "moe", false, "make a Mixtral-style mixture-of-experts model")
	d := testmodel.DefaultShape(true)
	f.IntVar(&shape.Layers, "layers", d.Layers, "num_hidden_layers")
	f.IntVar(&shape.Hidden, "hidden", d.Hidden, "hidden_size")
	f.IntVar(&shape.Heads, "heads", d.Heads, "num_attention_heads")
	f.IntVar(&shape.KVHeads, "kv-heads", d.KVHeads, "num_key_value_heads")
	f.IntVar(&shape.Intermediate, "intermediate", d.Intermediate, "intermediate_size (per expert with --moe)")
	f.IntVar(&shape.Vocab, "vocab", d.Vocab, "vocab_size")
	f.IntVar(&shape.MaxPositions, "max-position-embeddings", d.MaxPositions, "max_position_embeddings")
	f.IntVar(&shape.Experts, "experts", d.Experts, "num_local_experts (with --moe)")
	f.IntVar(&shape.TopK, "top-k", d.TopK, "num_experts_per_tok (with --moe)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.MarkFlagRequired("seed")
	cmd.MarkFlagRequired("out")
	return cmd
}
