package enginecli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/models"
)

// NewModelCommand is the model group with provision and make-test, which
// cacheon_test_model runs; the full command line adds check.
func NewModelCommand(s Streams) *cobra.Command {
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
		newModelMakeTestCommand(s),
	)
	return cmd
}

// ModelProgress returns a progress printer for a terminal on w, or nil:
// piped output stays free of progress lines.
func ModelProgress(w io.Writer) func(done, total int, f models.File) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(done, total int, file models.File) {
		fmt.Fprintf(w, "hashed %d/%d %s (%d bytes)\n", done, total, file.Path, file.Size)
	}
}

// ModelReceiptView is the --json document of provision and check.
type ModelReceiptView struct {
	FormatVersion int                 `json:"format_version"`
	Root          string              `json:"root"`
	Receipt       string              `json:"receipt"`
	Match         *bool               `json:"match,omitempty"`
	ContentDigest string              `json:"content_digest"`
	ReceiptDigest string              `json:"receipt_digest"`
	FileCount     int                 `json:"file_count"`
	TotalBytes    int64               `json:"total_bytes"`
	Files         []models.File       `json:"files"`
	Differences   []models.Difference `json:"differences,omitempty"`
}

func NewModelReceiptView(root, receiptPath string, r *models.Receipt) (*ModelReceiptView, error) {
	rd, err := r.Digest()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	return &ModelReceiptView{
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
