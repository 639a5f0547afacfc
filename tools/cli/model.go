package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/tools/identity"
	"github.com/cacheon/engine/tools/model"
	"github.com/cacheon/engine/tools/model/testmodel"
	"github.com/cacheon/engine/tools/reject"
)

func newModelCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Seal model directories and make deterministic test models",
		Long: `A model is a sealed tree: a directory of regular files (config.json,
safetensors shards, tokenizer files) named by a provision receipt that lists
every file's path, size and SHA-256, and by its content digest
H("cacheon.model-content", {"files": ...}). Releases bind the receipt; a
runtime refuses model bytes that differ from it.

provision seals a directory, check re-verifies one against its receipt, and
make-test writes a small deterministic Llama-style model for tests and CPU
lanes. Models are never downloaded by these commands.`,
	}
	cmd.AddCommand(
		newModelProvisionCommand(s),
		newModelCheckCommand(s),
		newModelMakeTestCommand(s),
	)
	return cmd
}

// modelProgress returns a progress printer for a terminal on w, or nil:
// piped output stays free of progress lines.
func modelProgress(w io.Writer) func(done, total int, f model.File) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(done, total int, file model.File) {
		fmt.Fprintf(w, "hashed %d/%d %s (%d bytes)\n", done, total, file.Path, file.Size)
	}
}

// modelReceiptView is the --json document of provision and check.
type modelReceiptView struct {
	FormatVersion int                `json:"format_version"`
	Root          string             `json:"root"`
	Receipt       string             `json:"receipt"`
	Match         *bool              `json:"match,omitempty"`
	ContentDigest string             `json:"content_digest"`
	ReceiptDigest string             `json:"receipt_digest"`
	FileCount     int                `json:"file_count"`
	TotalBytes    int64              `json:"total_bytes"`
	Files         []model.File       `json:"files"`
	Differences   []model.Difference `json:"differences,omitempty"`
}

func newModelReceiptView(root, receiptPath string, r *model.Receipt) (*modelReceiptView, error) {
	rd, err := r.Digest()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	return &modelReceiptView{
		FormatVersion: 1,
		Root:          abs,
		Receipt:       receiptPath,
		ContentDigest: r.ContentDigest,
		ReceiptDigest: rd,
		FileCount:     len(r.Files),
		TotalBytes:    r.TotalSize(),
		Files:         r.Files,
	}, nil
}

func newModelProvisionCommand(s Streams) *cobra.Command {
	var out, expected string
	var workers int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "provision DIR [--out RECEIPT] [--expected-content-digest D] [--workers N] [--json]",
		Short: "Seal a model directory into a provision receipt",
		Long: `Walk the model directory DIR, hash every file and publish its provision
receipt: {"type": "cacheon.model-provision", "schema_version": 1,
"content_digest": ..., "files": [{"path", "size", "sha256"}]} with files
sorted by path. Prints the content digest H("cacheon.model-content",
{"files": ...}) and the receipt digest
H("cacheon.model-provision-receipt", receipt).

The tree must be concrete. Rejected (exit 2), naming the path: symbolic
links (never followed), hard links (a file with more than one link),
FIFOs, sockets and devices, any ".cache" path component, two paths that
differ only by case, an empty tree, and a file or tree that changes while
it is hashed (each file's status is compared before and after reading,
through its path and its open descriptor, and the tree is walked twice).

The receipt is written outside the model, by default beside DIR as
model-provision-sha256-<content digest>.json; a destination inside DIR is
refused. It is written atomically and read-only (0444). An identical
receipt already there is accepted; a different file is never replaced.

--expected-content-digest is a hard precondition: a tree with another
content digest is rejected and no receipt is written. --workers files are
hashed at once (default 4); the receipt does not depend on it.`,
		Example: `  cacheon model provision /models/llama-tiny
  cacheon model provision /models/llama-tiny --out /receipts/llama-tiny.json
  cacheon model provision /models/llama-tiny --workers 16 \
      --expected-content-digest 3f2a…(64 hex) --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := args[0]
			if expected != "" {
				if err := identity.CheckDigest("--expected-content-digest", expected, false); err != nil {
					return err
				}
			}
			// A refused destination is cheap to find out before hashing
			// a large model.
			if out != "" {
				if err := model.CheckReceiptDestination(out, root); err != nil {
					return err
				}
			}
			r, err := model.Provision(root, model.Options{
				Workers:               workers,
				ExpectedContentDigest: expected,
				Progress:              modelProgress(s.Err),
			})
			if err != nil {
				return err
			}
			dest := out
			if dest == "" {
				if dest, err = model.DefaultReceiptPath(root, r.ContentDigest); err != nil {
					return err
				}
			}
			if err := model.WriteReceipt(dest, root, r); err != nil {
				return err
			}
			view, err := newModelReceiptView(root, dest, r)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(s.Out, view)
			}
			fmt.Fprintf(s.Out, "content digest  %s\n", view.ContentDigest)
			fmt.Fprintf(s.Out, "receipt digest  %s\n", view.ReceiptDigest)
			fmt.Fprintf(s.Out, "receipt         %s\n", dest)
			fmt.Fprintf(s.Out, "files           %d (%d bytes)\n", view.FileCount, view.TotalBytes)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "receipt path (default: beside DIR, named by the content digest)")
	cmd.Flags().StringVar(&expected, "expected-content-digest", "", "reject the tree unless its content digest is this (64 hex)")
	cmd.Flags().IntVar(&workers, "workers", model.DefaultWorkers, "files hashed concurrently")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newModelCheckCommand(s Streams) *cobra.Command {
	var receiptPath string
	var workers int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check DIR --receipt RECEIPT [--workers N] [--json]",
		Short: "Verify a model directory against its provision receipt",
		Long: `Re-provision the model directory DIR under the same rules as "model
provision" and compare it with RECEIPT, file by file. The receipt itself is
validated first: closed schema, sorted unique paths, well-formed hashes and
a content digest that matches its files.

Exit 0 when every file matches; exit 2 when a file was added, removed or
changed (each one is listed), when the tree breaks a sealing rule (a
symbolic link, hard link, special file or .cache path, named in the error)
or when the receipt is invalid.`,
		Example: `  cacheon model check /models/llama-tiny \
      --receipt /models/model-provision-sha256-3f2a…json
  cacheon model check /models/llama-tiny --receipt receipt.json --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := args[0]
			want, err := model.ReadReceipt(receiptPath)
			if err != nil {
				return err
			}
			got, err := model.Check(root, want, model.Options{Workers: workers, Progress: modelProgress(s.Err)})
			var mismatch *model.MismatchError
			if err != nil && !errors.As(err, &mismatch) {
				return err
			}
			view, verr := newModelReceiptView(root, receiptPath, got)
			if verr != nil {
				return verr
			}
			match := mismatch == nil
			view.Match = &match
			if mismatch != nil {
				view.Differences = mismatch.Differences
			}
			if asJSON {
				if err := writeJSON(s.Out, view); err != nil {
					return err
				}
				if !match {
					return alreadyReported(reject.ErrRejected)
				}
				return nil
			}
			if !match {
				for _, d := range mismatch.Differences {
					fmt.Fprintln(s.Out, d)
				}
				return reject.Errorf("%s does not match receipt %s: %d file(s) differ", root, receiptPath, len(mismatch.Differences))
			}
			fmt.Fprintf(s.Out, "ok: %s matches %s\n", root, receiptPath)
			fmt.Fprintf(s.Out, "content digest  %s\n", view.ContentDigest)
			fmt.Fprintf(s.Out, "receipt digest  %s\n", view.ReceiptDigest)
			fmt.Fprintf(s.Out, "files           %d (%d bytes)\n", view.FileCount, view.TotalBytes)
			return nil
		},
	}
	cmd.Flags().StringVar(&receiptPath, "receipt", "", "provision receipt to verify against (required)")
	cmd.Flags().IntVar(&workers, "workers", model.DefaultWorkers, "files hashed concurrently")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.MarkFlagRequired("receipt")
	return cmd
}

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
				return writeJSON(s.Out, view)
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
