package enginecli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
)

// BundleDeps are the validator components bundle inspection runs with.
type BundleDeps struct {
	Closure   contribution.ClosureFunc
	CUDACheck contribution.CUDACheckFunc
}

// NewBundleCommand is the bundle group with inspect, which cacheon_contribution
// runs; the full command line adds fingerprint and compare.
func NewBundleCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Inspect contribution bundles",
		Long: `A contribution bundle is a directory with a manifest.toml, kernel sources
and optional metadata, CUDA sources, dependency patches and rebuild plan.
The bundle commands read a bundle the way a validator does, without ever
importing or running its code. docs/miner-guide/bundle-format.md describes
the format.`,
	}
	cmd.AddCommand(newBundleInspectCommand(s, DefaultBundleDeps()))
	return cmd
}

type bundleInspectOptions struct {
	dir      string // the bundle directory
	deps     BundleDeps
	jsonOut  bool
	intake   bool
	catalog  string
	patchers string
}

func newBundleInspectCommand(s Streams, deps BundleDeps) *cobra.Command {
	var o bundleInspectOptions
	cmd := &cobra.Command{
		Use:   "inspect BUNDLE",
		Short: "Show a bundle's target, features and identities",
		Long: `Inspect loads BUNDLE as a validator's intake does and prints what the
validator derives from it without running it:

  - bundle id, ABI version and op rows;
  - the target it resolves to in the catalog (or why it is unregistered:
    legacy "system" mode, or a member set no target has, both classified
    for the discovery lane and never crowned);
  - its features: declared by the manifest (entry, variants, prepare,
    setup, override, cuda_sources, aot:<provider>, op_extra:<key>,
    dep_patch:<dependency>) and observed from rebuild.json (rebuild:*);
  - the content hash (the proposal's identity) and the committed content
    hash (without the top-level carrier receipt);
  - the selected payload digest: what the target actually executes (the
    Python import closure of the op sources, declared CUDA sources and
    patches, the canonical metadata projection, the op rows, the rebuild
    plan). README files and unused files change the content hash but not
    the selected payload;
  - the selected delta digest: the payload bound to its target and
    target-spec digest, which a crown is attributed to;
  - whether it can be hot-swapped into a running engine (no AOT exports,
    dependency patches, CUDA sources or setup hooks).

Loading enforces the intake limits (at most 4,096 files, 1,024
directories, 16 MiB per file, 8 MiB per .py/.cu/.cuh/.patch/.diff/.toml/.json
file and 32 MiB of them in all, 256 MiB in total; 1 MiB for manifest.toml
and each metadata file) and refuses symbolic links, special files,
non-UTF-8 names and paths that collide after Unicode NFC normalization or
case folding.

--intake applies the validator's intake rule: an unregistered bundle is
rejected. --catalog reads a catalog HCL file instead of the default
catalog. A rebuild plan's identity binds the bytes of the patchers it
names: build_cuda_ext.py is the validator's own prebuild patcher, built
in; --patchers names a directory of other reviewed patcher files, which
take precedence (needed only for bundles with a rebuild.json).

Exit codes: 0 the bundle was inspected; 2 the bundle was rejected (with
the stage and reason); 1 a usage or I/O error.`,
		Example: `  cacheon bundle inspect kernels/contributions/silu_and_mul_torch
  cacheon bundle inspect --json ./my-bundle
  cacheon bundle inspect --intake --patchers ./patchers ./my-cuda-bundle`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir, o.deps = args[0], deps
			return runBundleInspect(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.jsonOut, "json", false, "print one JSON document")
	f.BoolVar(&o.intake, "intake", false, "reject a bundle that resolves to no registered target")
	f.StringVar(&o.catalog, "catalog", "", "target catalog HCL file (default: the built-in catalog)")
	f.StringVar(&o.patchers, "patchers", "", "directory of reviewed rebuild patcher files, over the built-in build_cuda_ext.py")
	return cmd
}

func runBundleInspect(_ context.Context, s Streams, o bundleInspectOptions) error {
	dir, deps := o.dir, o.deps
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	cat, err := BundleCatalog(o.catalog)
	if err != nil {
		return err
	}
	digests, err := PatcherDigests(o.patchers)
	if err != nil {
		return err
	}
	in, err := contribution.Inspect(dir, contribution.Options{
		Catalog: cat,
		Payload: contribution.PayloadOptions{Closure: deps.Closure, CUDACheck: deps.CUDACheck, PatcherDigests: digests},
	})
	var rejected *contribution.RejectedError
	switch {
	case errors.As(err, &rejected):
		if o.jsonOut {
			if werr := WriteJSON(s.Out, inspectJSON(dir, in, rejected)); werr != nil {
				return werr
			}
			return AlreadyReported(reject.ErrRejected)
		}
		return reject.Errorf("%s rejected at %s:\n  %s", dir, rejected.Stage, strings.ReplaceAll(rejected.Err.Error(), "\n", "\n  "))
	case err != nil:
		return fmt.Errorf("inspect %s: %w", dir, err)
	}
	if o.intake && !in.Registered() {
		rejected = &contribution.RejectedError{Stage: contribution.StageResolve,
			Err: fmt.Errorf("intake accepts registered targets only: %s", in.Target.Unregistered)}
		if o.jsonOut {
			if werr := WriteJSON(s.Out, inspectJSON(dir, in, rejected)); werr != nil {
				return werr
			}
			return AlreadyReported(reject.ErrRejected)
		}
		writeInspectText(s.Out, in)
		return reject.Errorf("%s rejected at %s: %v", dir, rejected.Stage, rejected.Err)
	}
	if o.jsonOut {
		return WriteJSON(s.Out, inspectJSON(dir, in, nil))
	}
	writeInspectText(s.Out, in)
	return nil
}

// BundleCatalog loads the catalog a --catalog flag names through the one
// catalog loader (size and nesting limits included), or the embedded
// default when path is empty. A file that cannot be read is an I/O error
// (exit 1); one that does not validate rejects the input (exit 2).
func BundleCatalog(path string) (*catalog.Catalog, error) {
	if path == "" {
		return catalog.Default()
	}
	l, err := LoadCatalogArg([]string{path})
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if l.Diags.HasErrors() {
		return nil, reject.Errorf("catalog %s: %w", path, l.Diags)
	}
	return l.Catalog, nil
}

// PatcherDigests hashes the registered patchers found in dir. The
// payload binds a patcher it does not name to the validator's own
// (kernels/patchers), so an operator names only the patcher files they
// reviewed instead.
func PatcherDigests(dir string) (map[string]string, error) {
	out := map[string]string{}
	if dir == "" {
		return out, nil
	}
	for _, p := range bundle.Patchers {
		full := filepath.Join(dir, p.Name)
		if _, err := os.Lstat(full); os.IsNotExist(err) {
			continue
		}
		sum, err := fileSHA256(full)
		if err != nil {
			return nil, fmt.Errorf("patcher %s: %w", p.Name, err)
		}
		out[p.Name] = sum
	}
	return out, nil
}

// inspectDoc is the --json document (format_version 1).
type inspectDoc struct {
	FormatVersion         int            `json:"format_version"`
	Bundle                string         `json:"bundle"`
	BundleID              string         `json:"bundle_id"`
	ABIVersion            string         `json:"abi_version"`
	Ops                   []inspectOp    `json:"ops"`
	Target                *inspectTarget `json:"target"`
	Features              []string       `json:"features"`
	DeclaredFeatures      []string       `json:"declared_features"`
	ObservedFeatures      []string       `json:"observed_features"`
	ContentHash           string         `json:"content_hash"`
	CommittedContentHash  string         `json:"committed_content_hash"`
	SelectedPayloadDigest string         `json:"selected_payload_digest"`
	SelectedDeltaDigest   *string        `json:"selected_delta_digest"`
	SelectedFiles         []inspectFile  `json:"selected_files"`
	Swappable             bool           `json:"swappable"`
	SwapReason            string         `json:"swap_reason"`
	Rejected              *inspectReject `json:"rejected"`
}

type inspectOp struct {
	Slot          string   `json:"slot"`
	Variant       string   `json:"variant"`
	Source        string   `json:"source"`
	Entry         string   `json:"entry"`
	Prepare       string   `json:"prepare"`
	Setup         string   `json:"setup"`
	Dtypes        []string `json:"dtypes"`
	Architectures []string `json:"architectures"`
	Metadata      string   `json:"metadata"`
	CUDASources   []string `json:"cuda_sources"`
}

type inspectTarget struct {
	Registered       bool   `json:"registered"`
	TargetID         string `json:"target_id"`
	Kind             string `json:"kind"`
	TargetSpecDigest string `json:"target_spec_digest"`
	Unregistered     string `json:"unregistered"`
}

type inspectFile struct {
	Path   string `json:"path"`
	Role   string `json:"role"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

type inspectReject struct {
	Stage  string   `json:"stage"`
	Errors []string `json:"errors"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func inspectJSON(dir string, in *contribution.Inspection, rej *contribution.RejectedError) inspectDoc {
	doc := inspectDoc{FormatVersion: 1, Bundle: dir, Ops: []inspectOp{}, Features: []string{},
		DeclaredFeatures: []string{}, ObservedFeatures: []string{}, SelectedFiles: []inspectFile{}}
	if rej != nil {
		doc.Rejected = &inspectReject{Stage: rej.Stage, Errors: strings.Split(rej.Err.Error(), "\n")}
	}
	if in == nil {
		return doc
	}
	m := in.Bundle.Manifest
	doc.BundleID, doc.ABIVersion = m.BundleID, m.ABIVersion
	for _, op := range m.Ops {
		doc.Ops = append(doc.Ops, inspectOp{Slot: op.Slot, Variant: op.Variant, Source: op.Source, Entry: op.Entry,
			Prepare: op.Prepare, Setup: op.Setup, Dtypes: nonNil(op.Dtypes), Architectures: nonNil(op.Architectures),
			Metadata: op.Metadata, CUDASources: nonNil(op.CUDASources)})
	}
	doc.Target = &inspectTarget{Registered: in.Target.Registered, TargetID: in.Target.TargetID, Kind: in.Target.Kind,
		TargetSpecDigest: in.Target.TargetSpecDigest.String(), Unregistered: in.Target.Unregistered}
	doc.Features, doc.DeclaredFeatures, doc.ObservedFeatures = nonNil(in.Features), nonNil(in.DeclaredFeatures), nonNil(in.ObservedFeatures)
	doc.ContentHash, doc.CommittedContentHash = in.ContentHash.String(), in.CommittedContentHash.String()
	doc.SelectedPayloadDigest = in.SelectedPayloadDigest.String()
	if !in.SelectedDeltaDigest.IsZero() {
		d := in.SelectedDeltaDigest.String()
		doc.SelectedDeltaDigest = &d
	}
	if in.SelectedPayload != nil {
		for _, f := range in.SelectedPayload.Files {
			doc.SelectedFiles = append(doc.SelectedFiles, inspectFile{Path: f.Path, Role: f.Role, SHA256: f.SHA256, Size: f.Size})
		}
	}
	doc.Swappable, doc.SwapReason = in.Swappable, in.SwapReason
	if doc.Target.TargetID == "" && doc.Target.Unregistered == "" {
		doc.Target = nil // rejected before resolution
	}
	return doc
}

func writeInspectText(w io.Writer, in *contribution.Inspection) {
	m := in.Bundle.Manifest
	fmt.Fprintf(w, "bundle: %s  abi: %s  ops: %d\n", m.BundleID, m.ABIVersion, len(m.Ops))
	for _, op := range m.Ops {
		fmt.Fprintf(w, "  op %s [variant '%s']  %s:%s", op.Slot, op.Variant, op.Source, op.Entry)
		if len(op.Dtypes) > 0 {
			fmt.Fprintf(w, "  dtypes %s", strings.Join(op.Dtypes, ","))
		}
		if len(op.Architectures) > 0 {
			fmt.Fprintf(w, "  architectures %s", strings.Join(op.Architectures, ","))
		}
		fmt.Fprintln(w)
	}
	if in.Target.Registered {
		fmt.Fprintf(w, "target:                  %s (%s)\n", in.Target.TargetID, in.Target.Kind)
		fmt.Fprintf(w, "target spec digest:      %s\n", in.Target.TargetSpecDigest)
	} else {
		fmt.Fprintf(w, "target:                  unregistered: %s\n", in.Target.Unregistered)
	}
	fmt.Fprintf(w, "features:                %s\n", strings.Join(in.Features, ", "))
	fmt.Fprintf(w, "content hash:            %s\n", in.ContentHash)
	fmt.Fprintf(w, "committed content hash:  %s\n", in.CommittedContentHash)
	fmt.Fprintf(w, "selected payload:        %s\n", in.SelectedPayloadDigest)
	if !in.SelectedDeltaDigest.IsZero() {
		fmt.Fprintf(w, "selected delta:          %s\n", in.SelectedDeltaDigest)
	} else {
		fmt.Fprintf(w, "selected delta:          none (unregistered)\n")
	}
	for _, f := range in.SelectedPayload.Files {
		fmt.Fprintf(w, "  selects %-9s %s  %s  %d bytes\n", f.Role, f.Path, f.SHA256[:12], f.Size)
	}
	if in.Swappable {
		fmt.Fprintf(w, "swappable:               yes (hot-swaps into a resident engine)\n")
	} else {
		fmt.Fprintf(w, "swappable:               no (%s: qualified in fresh engine processes)\n", in.SwapReason)
	}
}

func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// DefaultBundleDeps are the validator's own closure and include checks.
func DefaultBundleDeps() BundleDeps {
	return BundleDeps{Closure: contribution.CachedPythonClosure(pythonFactsCache()), CUDACheck: contribution.CUDAIncludeCheck}
}
