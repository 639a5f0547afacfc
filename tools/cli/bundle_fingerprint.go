package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/kernels/fingerprint"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// bundleFingerprintOptions are the flags and argument of bundle fingerprint.
type bundleFingerprintOptions struct {
	dir      string
	deps     enginecli.BundleDeps
	jsonOut  bool
	catalog  string
	patchers string
}

func newBundleFingerprintCommand(s Streams, deps enginecli.BundleDeps) *cobra.Command {
	var o bundleFingerprintOptions
	cmd := &cobra.Command{
		Use:   "fingerprint BUNDLE [--json]",
		Short: "Print a bundle's three anti-copy identities",
		Long: `Fingerprint inspects BUNDLE as bundle inspect does and prints the three
identities anti-copy compares, all over the selected delta only (the
Python import closure of the op sources, the declared CUDA sources and
dependency patches, and the op rows; README files, unused files,
incumbent and validator bytes never count):

  - the selected payload digest (exact bytes);
  - the normalized delta digest: Python re-emitted from its syntax tree
    without comments, docstrings and formatting (bundle-local imports
    named by the content they import), CUDA/C++ without comments and
    whitespace, dependency patches reduced to their added and removed
    lines, the op rows without paths or variant labels;
  - per selected file: the digest of its normalized text, its number of
    normalized tokens and of winnowed k-gram fingerprints, and whether
    it is substantial (takes part in containment).

docs/reference/anti-copy.md gives the rules and the parameters.
--catalog and --patchers are as for bundle inspect.

Exit codes: 0 fingerprinted; 2 the bundle was rejected; 1 a usage or I/O
error.`,
		Example: `  cacheon bundle fingerprint kernels/contributions/rmsnorm_triton
  cacheon bundle fingerprint --json ./my-bundle`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir, o.deps = args[0], deps
			return runBundleFingerprint(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	f.StringVar(&o.catalog, "catalog", "", "target catalog HCL file (default: the built-in catalog)")
	f.StringVar(&o.patchers, "patchers", "", "directory of reviewed rebuild patcher files, over the built-in build_cuda_ext.py")
	return cmd
}

// fingerprintJSON is the --json document of bundle fingerprint, and each
// side of bundle compare's.
type fingerprintJSON struct {
	Bundle                string            `json:"bundle"`
	ContentHash           string            `json:"content_hash"`
	SelectedPayloadDigest string            `json:"selected_payload_digest"`
	NormalizedDeltaDigest string            `json:"normalized_delta_digest"`
	Files                 []fingerprintFile `json:"files"`
}

type fingerprintFile struct {
	Path             string `json:"path"`
	Role             string `json:"role"`
	NormalizedSHA256 string `json:"normalized_sha256"`
	Tokens           int    `json:"tokens"`
	Fingerprints     int    `json:"fingerprints"`
	Substantial      bool   `json:"substantial"`
}

func runBundleFingerprint(_ context.Context, s Streams, o bundleFingerprintOptions) error {
	fp, err := fingerprintBundle(o.dir, o.deps, o.catalog, o.patchers)
	if err != nil {
		return err
	}
	doc := fingerprintDoc(o.dir, fp)
	if o.jsonOut {
		return enginecli.WriteJSON(s.Out, struct {
			FormatVersion int `json:"format_version"`
			fingerprintJSON
		}{1, doc})
	}
	writeFingerprintText(s.Out, doc)
	return nil
}

// fingerprintBundle inspects dir as a validator does and fingerprints
// it. A bundle the inspection refuses is a rejection naming the stage.
func fingerprintBundle(dir string, deps enginecli.BundleDeps, catalogPath, patchers string) (*fingerprint.Fingerprint, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	cat, err := enginecli.BundleCatalog(catalogPath)
	if err != nil {
		return nil, err
	}
	digests, err := enginecli.PatcherDigests(patchers)
	if err != nil {
		return nil, err
	}
	in, err := contribution.Inspect(dir, contribution.Options{
		Catalog: cat,
		Payload: contribution.PayloadOptions{Closure: deps.Closure, CUDACheck: deps.CUDACheck, PatcherDigests: digests},
	})
	var rejected *contribution.RejectedError
	switch {
	case errors.As(err, &rejected):
		return nil, reject.Errorf("%s rejected at %s:\n  %s", dir, rejected.Stage, strings.ReplaceAll(rejected.Err.Error(), "\n", "\n  "))
	case err != nil:
		return nil, fmt.Errorf("inspect %s: %w", dir, err)
	}
	fp, err := fingerprint.Of(in)
	if err != nil {
		return nil, fmt.Errorf("fingerprint %s: %w", dir, err)
	}
	return fp, nil
}

func fingerprintDoc(dir string, fp *fingerprint.Fingerprint) fingerprintJSON {
	doc := fingerprintJSON{Bundle: dir, ContentHash: fp.ContentHash.String(), SelectedPayloadDigest: fp.SelectedPayloadDigest.String(),
		NormalizedDeltaDigest: fp.NormalizedDeltaDigest.String(), Files: []fingerprintFile{}}
	for i := range fp.Files {
		f := &fp.Files[i]
		doc.Files = append(doc.Files, fingerprintFile{Path: f.Path, Role: f.Role, NormalizedSHA256: f.NormalizedSHA256,
			Tokens: f.Tokens, Fingerprints: len(f.Hashes), Substantial: f.Substantial()})
	}
	return doc
}

func writeFingerprintText(w io.Writer, doc fingerprintJSON) {
	fmt.Fprintf(w, "bundle:            %s\n", doc.Bundle)
	fmt.Fprintf(w, "content hash:      %s\n", doc.ContentHash)
	fmt.Fprintf(w, "selected payload:  %s\n", doc.SelectedPayloadDigest)
	fmt.Fprintf(w, "normalized delta:  %s\n", doc.NormalizedDeltaDigest)
	for _, f := range doc.Files {
		size := "small"
		if f.Substantial {
			size = "substantial"
		}
		fmt.Fprintf(w, "  %-9s %s  normalized %s  %d tokens  %d fingerprints  %s\n",
			f.Role, f.Path, f.NormalizedSHA256[:12], f.Tokens, f.Fingerprints, size)
	}
}
