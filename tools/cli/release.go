package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cacheon/engine/tools/atomicwrite"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/entrypoint"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/intoto"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/layer"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/rebuild"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/tools/reject"
)

func newReleaseCommand(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Build, sign, verify, publish and rebuild engine releases",
		Long: `A release is an OCI image of a release stack's engine tree, on a base image
pinned by digest, with an SPDX 2.3 SBOM and an in-toto SLSA v1 provenance
statement attached to it, signed with an external key as a sigstore bundle.

The pipeline, in order:

  review    bind a crowned payload to reviewed source at a git commit
  build     build the image, SBOM and provenance into an OCI layout
  sign      sign the provenance with your key and attach the bundle
  verify    check everything offline against a trusted public key
  publish   push the release to any OCI registry (tag written last)
  rebuild   rebuild a published release and compare digests

Everything works offline and without a chain: a consumer needs the release
(an OCI layout directory or a registry reference) and the public key.
Exit codes: 0 success, 2 a check failed or the input was rejected, 1 a usage
or I/O error.`,
	}
	cmd.AddCommand(
		newReleaseReviewCommand(s),
		newReleaseBaseCommand(s),
		newReleaseKeygenCommand(s),
		newReleaseBuildCommand(s),
		newReleaseSignCommand(s),
		newReleaseVerifyCommand(s),
		newReleasePublishCommand(s),
		newReleaseRebuildCommand(s),
		newReleaseLayoutCommand(s),
		newReleaseLinkCommand(s),
		newReleaseServeCommand(s),
	)
	return cmd
}

// releaseProgress prints one line per stage to stderr.
func releaseProgress(s Streams, verb string) func(string) {
	return func(stage string) { fmt.Fprintf(s.Err, "cacheon release %s: %s\n", verb, stage) }
}

// buildError classifies an error of release build. release/build does not
// mark its refusals with the rejection root yet, so until it does a build
// error that is not about a missing or unreadable file is taken as a
// refusal of its inputs (exit 2), as it always was. Every other command
// returns its libraries' errors as they are.
func buildError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return reject.Wrap(err)
}

// openRelease opens LAYOUT|REF: a directory holding an OCI layout, or a
// registry reference whose requests stop when ctx is cancelled.
func openRelease(ctx context.Context, arg string, insecure bool) (store.Store, error) {
	if info, err := os.Stat(arg); err == nil && info.IsDir() {
		return store.OpenLayout(arg)
	}
	if strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "/") {
		return nil, fmt.Errorf("%s: no such OCI layout directory", arg)
	}
	return store.OpenRegistry(arg, insecure, store.WithContext(ctx))
}

func newReleaseBaseCommand(s Streams) *cobra.Command {
	var platform, out string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "base --out DIR [--platform os/arch]",
		Short: "Write the project's minimal (scratch) base image as an OCI layout",
		Long: `Write an empty base image (no layers, an OCI config naming only the
platform) as a new OCI image layout and print its manifest digest. Its
digest depends on the platform alone, so it can be pinned like any base.

Production releases pin a real base (a CUDA/PyTorch image) the same way:
save it as an OCI layout (for example "crane pull --format=oci IMAGE DIR"
on a machine that can reach the registry), and pass --base-layout DIR
--base-digest sha256:... to release build.`,
		Example: `  cacheon release base --out base-layout
  cacheon release base --platform linux/arm64 --out base-arm64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := image.ParsePlatform(platform)
			if err != nil {
				return reject.Wrap(err)
			}
			d, err := image.WriteScratchLayout(out, p)
			if err != nil {
				return err
			}
			if jsonOut {
				return writeJSON(s.Out, map[string]any{"format_version": 1, "layout": out, "digest": d.String(), "platform": p.String()})
			}
			fmt.Fprintln(s.Out, d)
			return nil
		},
	}
	cmd.Flags().StringVar(&platform, "platform", "linux/amd64", "platform os/arch[/variant]")
	cmd.Flags().StringVar(&out, "out", "", "new OCI layout directory (required)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("out")
	return cmd
}

func newReleaseKeygenCommand(s Streams) *cobra.Command {
	var alg, out string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "keygen --out PREFIX [--algorithm ed25519|ecdsa-p256]",
		Short: "Generate a release signing key pair (PEM files)",
		Long: `Generate a signing key and write PREFIX.key (PKCS#8 PEM, mode 0600) and
PREFIX.pub (PKIX PEM). Keep the private key offline or in an HSM; any
crypto.Signer works for signing, a file key is the simplest. Publish the
public key through a channel consumers trust: it is what verify checks
against, and no key inside a release is ever trusted.`,
		Example: `  cacheon release keygen --out release-2026
  cacheon release keygen --algorithm ecdsa-p256 --out release-ecdsa`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			signer, err := key.Generate(key.Algorithm(alg))
			if err != nil {
				return reject.Wrap(err)
			}
			priv, err := key.MarshalPrivate(signer)
			if err != nil {
				return err
			}
			pub, err := key.MarshalPublic(signer.Public())
			if err != nil {
				return err
			}
			for _, p := range []string{out + ".key", out + ".pub"} {
				if _, err := os.Lstat(p); err == nil {
					return fmt.Errorf("%s already exists", p)
				}
			}
			if err := os.WriteFile(out+".key", priv, 0o600); err != nil {
				return err
			}
			if err := os.WriteFile(out+".pub", pub, 0o644); err != nil {
				return err
			}
			id, _ := key.ID(signer.Public())
			if jsonOut {
				return writeJSON(s.Out, map[string]any{"format_version": 1, "private_key": out + ".key", "public_key": out + ".pub", "key_id": id, "algorithm": alg})
			}
			fmt.Fprintf(s.Out, "private key %s.key\npublic key  %s.pub\nkey id      %s\n", out, out, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&alg, "algorithm", string(key.Ed25519), "ed25519 or ecdsa-p256")
	cmd.Flags().StringVar(&out, "out", "", "path prefix of the key files (required)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("out")
	return cmd
}

func newReleaseBuildCommand(s Streams) *cobra.Command {
	var in build.Inputs
	var compression string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "build --engine-tree DIR --release-manifest FILE --review FILE... --substrate DIR --model-receipt FILE --entrypoint FILE --name NAME --out DIR",
		Short: "Build a release image, SBOM and provenance into an OCI layout",
		Long: `Build the release of a release stack: an OCI image holding the
materialized engine tree, the substrate, the release descriptor with the
review records and model receipt, and the static cacheon binary as its
fail-closed entrypoint, on a base image pinned by digest. The SBOM (SPDX
2.3) and the provenance (in-toto Statement v1, SLSA provenance v1) are
attached to the image as OCI artifacts. The output is a new OCI image
layout at --out; sign it next.

Checks before anything is written: the release stack holds integrated
contributions only, each covered by exactly one approved review record;
the engine tree has the materializer's published shape and was
materialized from this release stack; the model receipt is valid.

Every input is a flag; nothing depends on the working directory, umask,
timezone, locale or clock, so a build action gets byte-identical output
wherever it runs. Dates are --source-date-epoch. The Go toolchain of this
binary is part of the release identity (it decides the gzip bytes), and is
recorded in the descriptor and provenance.`,
		Example: `  cacheon release build \
    --engine-tree bazel-bin/stacks/release_tree \
    --release-manifest bazel-bin/stacks/release_manifest.json \
    --review reviews/silu.json \
    --substrate kernels/substrate \
    --model-receipt models/model-provision-sha256-<digest>.json \
    --entrypoint bazel-bin/tools/cmd/cacheon/cacheon_/cacheon \
    --base-layout base-layout --base-digest sha256:<digest> --base-name scratch \
    --name cacheon-engine:1.0 --source-date-epoch 1767225600 \
    --out release-1.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in.Compression = layer.Compression(compression)
			var progress build.Progress
			if !jsonOut {
				progress = releaseProgress(s, "build")
			}
			res, err := build.Build(in, progress)
			if err != nil {
				return buildError(err)
			}
			if jsonOut {
				return writeJSON(s.Out, struct {
					FormatVersion int `json:"format_version"`
					*build.Result
				}{1, res})
			}
			fmt.Fprintf(s.Out, "layout       %s\nimage        %s@%s\nengine tree  %s\ndescriptor   %s\nintegrations %d\ngo           %s\n",
				res.Layout, res.Image, res.ImageDigest, res.EngineTreeDigest, res.DescriptorDigest, res.Contributions, res.GoVersion)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.EngineTree, "engine-tree", "", "materialized engine tree of the release stack (required)")
	f.StringVar(&in.ReleaseManifest, "release-manifest", "", "release stack manifest, canonical JSON (required)")
	f.StringArrayVar(&in.Reviews, "review", nil, "integration review record; one per integrated contribution")
	f.StringVar(&in.Substrate, "substrate", "", "substrate directory (required)")
	f.StringVar(&in.ModelReceipt, "model-receipt", "", "provision receipt of the sealed model (required)")
	f.StringVar(&in.Entrypoint, "entrypoint", "", "static cacheon binary to ship as the entrypoint (required)")
	f.StringVar(&in.BaseLayout, "base-layout", "", "OCI layout holding the base image (default: the scratch base)")
	f.StringVar(&in.BaseDigest, "base-digest", "", "manifest digest pinning the base image, sha256:<hex>")
	f.StringVar(&in.BaseName, "base-name", "", "name of the base image, recorded in the SBOM and provenance")
	f.StringVar(&in.Platform, "platform", "linux/amd64", "image platform os/arch[/variant]")
	f.StringVar(&in.Name, "name", "", "image name, e.g. cacheon-engine:1.0 (required)")
	f.StringArrayVar(&in.ServeCommand, "serve-arg", nil, "argument of the command the entrypoint runs after verifying (repeat; placeholders {engine_tree} {substrate} {model}; default: python3 -m cacheon_substrate.serve --engine-tree {engine_tree} --model {model})")
	f.StringArrayVar(&in.ServeEnv, "serve-env", nil, "KEY=VALUE for the served process (repeat; default PYTHONDONTWRITEBYTECODE=1 and PYTHONPATH={substrate}:{engine_tree})")
	f.StringVar(&in.ModelMount, "model-mount", "/cacheon/model", "where the model is mounted at run time")
	f.Int64Var(&in.Epoch, "source-date-epoch", 0, "seconds since the Unix epoch used for every date")
	f.StringVar(&compression, "compression", string(layer.Gzip), "layer compression: gzip or zstd")
	f.IntVar(&in.Level, "compression-level", 0, "compression level (0: the compressor's default)")
	f.StringVar(&in.Out, "out", "", "new OCI layout directory (required; must not exist or be empty)")
	f.BoolVar(&jsonOut, "json", false, "print one JSON document")
	for _, r := range []string{"engine-tree", "release-manifest", "substrate", "model-receipt", "entrypoint", "name", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func newReleaseSignCommand(s Streams) *cobra.Command {
	var keyPath string
	var insecure, jsonOut bool
	cmd := &cobra.Command{
		Use:   "sign --key KEY LAYOUT|REF",
		Short: "Sign a release's provenance and attach the sigstore bundle",
		Long: `Sign the provenance statement attached to a release with KEY (PKCS#8 PEM,
Ed25519 or ECDSA P-256) as a sigstore bundle (v0.3, DSSE), and attach the
bundle to the image: in an OCI layout as an artifact whose subject is the
image, in a registry through the referrers API or its tag fallback.

No certificate authority, transparency log or timestamp service is used,
and nothing goes over the network except to the registry you name. The
statement must name the image it is attached to.`,
		Example: `  cacheon release sign --key release.key release-1.0
  cacheon release sign --key release.key registry.example.com/cacheon/engine:1.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			signer, err := key.LoadSigner(keyPath)
			if err != nil {
				return err
			}
			st, err := openRelease(cmd.Context(), args[0], insecure)
			if err != nil {
				return err
			}
			res, err := sign.Release(st, signer)
			if err != nil {
				return err
			}
			if jsonOut {
				return writeJSON(s.Out, struct {
					FormatVersion int `json:"format_version"`
					*sign.Signed
				}{1, res})
			}
			fmt.Fprintf(s.Out, "signed %s with key %s\nbundle %s\n", res.ImageDigest, res.KeyID, res.BundleDigest)
			return nil
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "private key, PKCS#8 PEM (required)")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP for the registry")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("key")
	return cmd
}

func newReleaseVerifyCommand(s Streams) *cobra.Command {
	var keyPath, now, layoutPath, linkDir, bundleOut string
	var layoutKeys []string
	var insecure, jsonOut bool
	cmd := &cobra.Command{
		Use:   "verify --key PUB [--layout FILE --layout-key PUB --links DIR] LAYOUT|REF",
		Short: "Verify a release offline against a trusted public key",
		Long: `Verify a release with nothing but the release itself (an OCI layout
directory or a registry reference) and the public key you trust. No chain,
wallet, miner URL, referee database, transparency log or timestamp service
is consulted.

--key is a PEM public key, or a key policy file listing trusted keys with
validity windows:
  {"type":"cacheon.release-keys.v1","keys":[{"public_key":"-----BEGIN ...",
   "not_before":"2026-01-01T00:00:00Z","not_after":"2027-01-01T00:00:00Z"}]}
Key validity is checked at verification time (--now to check another time):
signatures carry no trusted time without a timestamp service.

Checks, each named in its failure: image-manifest, attestations, key-policy,
signature, predicate-type, builder, subjects, layers, image-blobs,
release-descriptor, engine-tree, integrations, substrate, entrypoint,
model-receipt, sbom, provenance.

With --layout the release is also checked against the project's signed
in-toto supply-chain layout (see "cacheon release layout"): the layout's
signature by a --layout-key and its expiry, the functionaries' links in
--links (two qualifications by distinct validator keys, the review, the
materialization, the build and the signature), the artifact rules between
the steps, and that the links describe this very release (check
in-toto-layout).`,
		Example: `  cacheon release verify --key release.pub release-1.0
  cacheon release verify --key release.pub --layout root.layout --layout-key owner.pub --links links release-1.0
  cacheon release verify --key release.pub --json registry.example.com/cacheon/engine:1.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			policy, err := key.LoadPolicy(keyPath)
			if err != nil {
				return err
			}
			opts := verify.Options{Policy: policy}
			if now != "" {
				if opts.Now, err = time.Parse(time.RFC3339, now); err != nil {
					return reject.Errorf("--now: %w", err)
				}
			}
			if !jsonOut {
				opts.Progress = releaseProgress(s, "verify")
			}
			if layoutPath != "" {
				if len(layoutKeys) == 0 || linkDir == "" {
					return errors.New("--layout needs --layout-key and --links")
				}
				check, err := intoto.LoadCheck(layoutPath, layoutKeys, linkDir)
				if err != nil {
					return err
				}
				opts.Layout = check
			}
			st, err := openRelease(cmd.Context(), args[0], insecure)
			if err != nil {
				return err
			}
			rel, err := verify.Run(st, opts)
			if err == nil && bundleOut != "" {
				// Only a bundle that verified is handed out, for the
				// entrypoint's trust mount.
				if werr := atomicwrite.WriteFile(bundleOut, rel.Bundle, 0o644); werr != nil {
					return werr
				}
			}
			return reportVerification(s, rel.Report, err, jsonOut)
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "trusted public key (PEM) or key policy file (required)")
	cmd.Flags().StringVar(&now, "now", "", "evaluate key validity at this RFC 3339 time instead of now")
	cmd.Flags().StringVar(&layoutPath, "layout", "", "signed in-toto supply-chain layout to check the release against")
	cmd.Flags().StringArrayVar(&layoutKeys, "layout-key", nil, "public key of the layout's owner (repeat)")
	cmd.Flags().StringVar(&linkDir, "links", "", "directory of the functionaries' in-toto links")
	cmd.Flags().StringVar(&bundleOut, "bundle-out", "", "write the signature bundle that verified to FILE (for the entrypoint's trust mount)")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP for the registry")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the verification report as JSON")
	cmd.MarkFlagRequired("key")
	return cmd
}

// reportVerification prints a verification report and maps its outcome
// to an exit code: a failed check is 2, an I/O error 1.
func reportVerification(s Streams, rep *verify.Report, err error, jsonOut bool) error {
	var failed *verify.Failure
	isCheck := errors.As(err, &failed)
	if err != nil && !isCheck {
		return err
	}
	if jsonOut {
		if werr := writeJSON(s.Out, rep); werr != nil {
			return werr
		}
		if isCheck {
			return alreadyReported(reject.ErrRejected)
		}
		return nil
	}
	for _, c := range rep.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(s.Out, "%s %-19s %s\n", mark, c.Name, c.Detail)
	}
	if isCheck {
		return reject.Wrap(err)
	}
	fmt.Fprintf(s.Out, "verified %s@%s\n  engine tree %s\n  descriptor  %s\n  signed by   %s\n", rep.Image, rep.ImageDigest, rep.EngineTreeDigest, rep.DescriptorDigest, rep.KeyID)
	return nil
}

func newReleasePublishCommand(s Streams) *cobra.Command {
	var keyPath string
	var insecure, jsonOut bool
	cmd := &cobra.Command{
		Use:   "publish [--key PUB] LAYOUT REF",
		Short: "Push a signed release from an OCI layout to a registry",
		Long: `Push the release in LAYOUT to the registry reference REF: the image by
digest, then the SBOM, the provenance and the signature bundles as OCI 1.1
referrers (registries without the referrers API get the sha256-<hex> tag
fallback), and the tag in REF last. Every blob of the layout is checked
before the first request, and an unsigned layout is refused, so nothing is
ever published half-way. With --key the release is fully verified first.`,
		Example: `  cacheon release publish --key release.pub release-1.0 registry.example.com/cacheon/engine:1.0
  cacheon release publish release-1.0 127.0.0.1:5000/engine:1.0`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := store.OpenLayout(args[0])
			if err != nil {
				return err
			}
			if keyPath != "" {
				policy, err := key.LoadPolicy(keyPath)
				if err != nil {
					return err
				}
				if _, err := verify.Run(l, verify.Options{Policy: policy}); err != nil {
					var failed *verify.Failure
					if errors.As(err, &failed) {
						return reject.Errorf("refusing to publish %s: %w", args[0], err)
					}
					return err
				}
			}
			target, err := store.OpenRegistry(args[1], insecure, store.WithContext(cmd.Context()))
			if err != nil {
				return reject.Wrap(err)
			}
			var progress func(string)
			if !jsonOut {
				progress = releaseProgress(s, "publish")
			}
			res, err := publish.Layout(l, target, progress)
			if err != nil {
				var mm *store.DigestMismatchError
				if errors.Is(err, publish.ErrIncomplete) || errors.As(err, &mm) || store.IsRejection(err) {
					return reject.Wrap(err)
				}
				return err
			}
			if jsonOut {
				return writeJSON(s.Out, struct {
					FormatVersion int `json:"format_version"`
					*publish.Result
				}{1, res})
			}
			fmt.Fprintf(s.Out, "published %s (%s)\n", res.Reference, res.ImageDigest)
			for _, a := range res.Artifacts {
				fmt.Fprintf(s.Out, "  %s\n", a)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&keyPath, "key", "", "verify the release against this public key before publishing")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP for the registry")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON document")
	return cmd
}

func newReleaseServeCommand(s Streams) *cobra.Command {
	var root, keyPath, bundlePath, modelDir string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "serve [--key PUB] [--bundle FILE] [--model DIR]",
		Short: "Verify the installed release, then exec its serve command (image entrypoint)",
		Long: `The entrypoint of a release image. Before any contribution is loaded it
verifies the signed release against the public key given with --key (mounted
from outside the image: a key inside the image is never trusted) and the
signature bundle given with --bundle, checks the engine tree, substrate,
release records and this binary on disk against the signed digests and the
mounted model against the signed receipt, and only then replaces itself with
the signed serve command. Any mismatch refuses to start (exit 2), naming what
differed.

The served process gets a fresh environment: the signed serve environment,
PATH, and CACHEON_RELEASE_VERIFIED (the descriptor digest),
CACHEON_RELEASE_REQUIRED=1, CACHEON_RELEASE_ENGINE_TREE_DIGEST and
CACHEON_RELEASE_KEY_ID. Nothing else from the container's environment
reaches it.`,
		Example: `  docker run --gpus all \
    -v $PWD/trust:/cacheon/trust:ro -v /models/llama:/cacheon/model:ro \
    registry.example.com/cacheon/engine@sha256:<digest>

  # the same checks without starting anything
  cacheon release serve --dry-run --root rootfs --key release.pub \
    --bundle release.sigstore.json --model /models/llama`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			policy, err := key.LoadPolicy(keyPath)
			if err != nil {
				return reject.Errorf("%w: expected key: %v", entrypoint.ErrRefused, err)
			}
			bundle, err := os.ReadFile(bundlePath)
			if err != nil {
				return reject.Errorf("%w: signature bundle: %v", entrypoint.ErrRefused, err)
			}
			v, err := entrypoint.Verify(entrypoint.Options{Root: root, Policy: policy, Bundle: bundle, Model: modelDir})
			if err != nil {
				return reject.Wrap(err)
			}
			if dryRun {
				return writeJSON(s.Out, map[string]any{
					"format_version": 1, "verified": true, "descriptor_digest": v.DescriptorDigest,
					"engine_tree_digest": v.Descriptor.EngineTreeDigest, "key_id": v.KeyID, "argv": v.Argv, "env": v.Env,
				})
			}
			fmt.Fprintf(s.Err, "cacheon release serve: release %s verified (key %s); starting %s\n", v.DescriptorDigest, v.KeyID, v.Argv[0])
			return reject.Wrap(entrypoint.Exec(v))
		},
	}
	f := cmd.Flags()
	f.StringVar(&root, "root", "/", "root filesystem of the installed release")
	f.StringVar(&keyPath, "key", entrypoint.DefaultKey, "expected public key or key policy (from outside the image)")
	f.StringVar(&bundlePath, "bundle", entrypoint.DefaultBundle, "signature bundle of the release (from outside the image)")
	f.StringVar(&modelDir, "model", "", "mounted model directory (default: the signed model mount)")
	f.BoolVar(&dryRun, "dry-run", false, "verify and print what would run, as JSON, without starting it")
	return cmd
}

func newReleaseReviewCommand(s Streams) *cobra.Command {
	var crownPath, repo, commit, path, reviewer, out, catalogPath string
	var evidence []string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "review --crown FILE --repo DIR --commit SHA --path DIR --evidence ROLE=FILE... --reviewer NAME --out FILE",
		Short: "Record an integration review binding a crowned payload to reviewed source",
		Long: `Write an integration review record: the approval that a crowned
contribution's selected payload is exactly what the reviewed source at a
full git commit selects. The record derives the one integrated
contribution a release stack may hold for the target.

The source is read from the git object store at --commit (never from the
working tree): only regular files (modes 100644 and 100755) are allowed,
the integrated source tree digest is computed from those blobs, and the
source is inspected as intake inspects a bundle (never imported or run).
The review is refused unless it resolves to the crowned target and
target-spec digest and selects exactly the crowned payload.

--crown is the crown binding settlement wrote: target_id,
target_spec_digest, proposal_contribution_digest,
settlement_candidate_digest, settlement_evidence_digest,
crown_event_digest, primary_attempt_digest, reproduction_attempt_digest,
selected_payload_digest and attribution_digest.

--evidence names the seven evidence documents, one per role:
primary_attempt and reproduction_attempt (the two qualification attempts
the crown names; their SHA-256 must match), license_evidence,
provenance_evidence, security_review, compatibility_evidence and
test_evidence. All seven must be distinct.`,
		Example: `  cacheon release review --crown crowns/silu.json \
    --repo . --commit 3f6c1e0d9b2a4c5d6e7f8091a2b3c4d5e6f70819 --path kernels/contributions/silu_and_mul_triton \
    --evidence primary_attempt=evidence/primary.json \
    --evidence reproduction_attempt=evidence/reproduction.json \
    --evidence license_evidence=evidence/license.json \
    --evidence provenance_evidence=evidence/provenance.json \
    --evidence security_review=evidence/security.json \
    --evidence compatibility_evidence=evidence/compat.json \
    --evidence test_evidence=evidence/tests.json \
    --reviewer "Ada Reviewer <ada@example.com>" --out reviews/silu.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			crown, err := review.LoadCrown(crownPath)
			if err != nil {
				return err
			}
			ev, err := review.LoadEvidence(evidence)
			if err != nil {
				return fmt.Errorf("--%w", err) // the messages start with "evidence"
			}
			cat, err := bundleCatalog(catalogPath)
			if err != nil {
				return err
			}
			rec, err := review.New(review.Request{
				Crown: crown, Evidence: ev, Reviewer: reviewer, Repo: repo, Commit: commit, Path: path,
				Inspect: review.Inspector(cat, nil),
			})
			if err != nil {
				return reject.Wrap(err)
			}
			b, err := rec.Marshal()
			if err != nil {
				return err
			}
			if err := atomicwrite.WriteFile(out, b, 0o644); err != nil {
				return err
			}
			digest, _ := rec.Digest()
			ref, err := rec.IntegratedRef()
			if err != nil {
				return err
			}
			refDigest, _ := ref.RefDigest()
			if jsonOut {
				return writeJSON(s.Out, map[string]any{
					"format_version": 1, "record": out, "record_digest": digest, "integrated_ref": ref,
					"integrated_ref_digest": refDigest, "integrated_source_tree_digest": rec.IntegratedSourceTreeDigest,
				})
			}
			fmt.Fprintf(s.Out, "record          %s (%s)\nintegrated ref  %s\nsource tree     %s at %s\n", out, digest, refDigest, rec.IntegratedSourceTreeDigest, rec.ReviewCommit)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&crownPath, "crown", "", "crown binding JSON written by settlement (required)")
	f.StringVar(&repo, "repo", ".", "git repository holding the reviewed source")
	f.StringVar(&commit, "commit", "", "full 40-hex commit id of the reviewed source (required)")
	f.StringVar(&path, "path", "", "the contribution's directory inside the repository (required)")
	f.StringArrayVar(&evidence, "evidence", nil, "ROLE=FILE evidence document (repeat for all seven roles)")
	f.StringVar(&reviewer, "reviewer", "", "who approved the integration (required)")
	f.StringVar(&catalogPath, "catalog", "", "target catalog HCL file (default: the built-in catalog)")
	f.StringVar(&out, "out", "", "record file to write (required)")
	f.BoolVar(&jsonOut, "json", false, "print one JSON document")
	for _, r := range []string{"crown", "commit", "path", "reviewer", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func newReleaseRebuildCommand(s Streams) *cobra.Command {
	var keyPath, sourceRepo, work, catalogPath string
	var sources []string
	var insecure, jsonOut, allowToolchain bool
	cmd := &cobra.Command{
		Use:   "rebuild --key PUB [--source-repo DIR] LAYOUT|REF",
		Short: "Rebuild a published release from its published inputs and compare digests",
		Long: `Verify a release, rebuild it from what was published and compare every
digest. The inputs come from the release itself: the release stack, review
records, model receipt, substrate and entrypoint from its layers, the pinned
base image from the same layout or repository. With --source-repo (a git
repository holding the review commits) the engine tree is re-materialized
from the reviewed source instead of taken from the image, which also proves
that the shipped tree is what the reviewed source gives. On a mismatch the
first differing layer and file is printed and the exit code is 2.

The layer bytes depend on the compressor, so the Go toolchain the release
records is part of its identity: rebuild with a cacheon built by that
toolchain (GOTOOLCHAIN=<version>). --allow-toolchain-mismatch compares
anyway and reports layers whose files are equal but whose bytes are not.`,
		Example: `  cacheon release rebuild --key release.pub release-1.0
  cacheon release rebuild --key release.pub --source-repo . registry.example.com/cacheon/engine:1.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			policy, err := key.LoadPolicy(keyPath)
			if err != nil {
				return err
			}
			opts := rebuild.Options{Policy: policy, Work: work, SourceRepo: sourceRepo, AllowToolchainMismatch: allowToolchain, SourcePaths: map[string]string{}}
			for _, src := range sources {
				target, p, ok := strings.Cut(src, "=")
				if !ok {
					return reject.Errorf("--source %q: want TARGET=PATH", src)
				}
				opts.SourcePaths[target] = p
			}
			if sourceRepo != "" {
				if opts.Catalog, err = bundleCatalog(catalogPath); err != nil {
					return reject.Wrap(err)
				}
			}
			if !jsonOut {
				opts.Progress = releaseProgress(s, "rebuild")
			}
			st, err := openRelease(cmd.Context(), args[0], insecure)
			if err != nil {
				return err
			}
			res, err := rebuild.Run(st, opts)
			var failed *verify.Failure
			var mismatch *rebuild.Mismatch
			switch {
			case errors.As(err, &failed):
				return reject.Wrap(err)
			case err != nil && !errors.As(err, &mismatch):
				return err
			}
			if jsonOut {
				if werr := writeJSON(s.Out, res); werr != nil {
					return werr
				}
				if mismatch != nil {
					return alreadyReported(reject.ErrRejected)
				}
				return nil
			}
			if mismatch != nil {
				return reject.Wrap(err)
			}
			fmt.Fprintf(s.Out, "reproduced %s\n  rebuilt digest %s\n  engine tree    %s", res.ImageDigest, res.RebuiltDigest, res.EngineTreeDigest)
			if res.Rematerialized {
				fmt.Fprint(s.Out, " (re-materialized from the reviewed source)")
			}
			fmt.Fprintf(s.Out, "\n  toolchain      %s\n", res.RebuildGoVersion)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keyPath, "key", "", "trusted public key (PEM) or key policy file (required)")
	f.StringVar(&sourceRepo, "source-repo", "", "git repository holding the review commits: re-materialize the engine tree")
	f.StringArrayVar(&sources, "source", nil, "TARGET=PATH: the contribution's directory in --source-repo (default: searched by digest)")
	f.StringVar(&catalogPath, "catalog", "", "target catalog HCL file for re-materializing (default: the built-in catalog)")
	f.StringVar(&work, "work", "", "scratch directory to keep (default: a temporary one, removed)")
	f.BoolVar(&allowToolchain, "allow-toolchain-mismatch", false, "rebuild even if this binary's Go toolchain is not the release's")
	f.BoolVar(&insecure, "insecure", false, "use plain HTTP for the registry")
	f.BoolVar(&jsonOut, "json", false, "print one JSON document")
	cmd.MarkFlagRequired("key")
	return cmd
}

func newReleaseLayoutCommand(s Streams) *cobra.Command {
	var ownerKey, out, expires string
	var qualify, reviewKeys, materializeKeys, buildKeys, signKeys []string
	cmd := &cobra.Command{
		Use:   "layout --owner-key KEY --qualify PUB --qualify PUB --review PUB --materialize PUB --build PUB --sign PUB --expires TIME --out FILE",
		Short: "Write the project's signed in-toto supply-chain layout",
		Long: `Write the in-toto layout that states how a release is made, signed by the
project owner's key: two qualifications by distinct validator keys
(threshold 2), the integration review, the materialization of the release
stack, the build and the signature, each by the functionaries whose public
keys are given, with artifact rules chaining each step's materials to the
previous step's products. Consumers check releases against it with
"cacheon release verify --layout".`,
		Example: `  cacheon release layout --owner-key owner.key \
    --qualify validator-a.pub --qualify validator-b.pub --review reviewer.pub \
    --materialize builder.pub --build builder.pub --sign release.pub \
    --expires 2027-01-01T00:00:00Z --out root.layout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			owner, err := os.ReadFile(ownerKey)
			if err != nil {
				return err
			}
			exp, err := time.Parse(time.RFC3339, expires)
			if err != nil {
				return reject.Errorf("--expires: %w", err)
			}
			f := intoto.Functionaries{}
			for step, paths := range map[string][]string{
				intoto.StepQualify: qualify, intoto.StepReview: reviewKeys, intoto.StepMaterialize: materializeKeys,
				intoto.StepBuild: buildKeys, intoto.StepSign: signKeys,
			} {
				for _, p := range paths {
					b, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					f[step] = append(f[step], b)
				}
			}
			mb, err := intoto.New(owner, f, exp)
			if err != nil {
				return reject.Wrap(err)
			}
			if _, err := os.Lstat(out); err == nil {
				return fmt.Errorf("%s already exists", out)
			}
			if err := mb.Dump(out); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "layout %s (expires %s)\n", out, exp.UTC().Format(time.RFC3339))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&ownerKey, "owner-key", "", "project owner's private key that signs the layout (required)")
	f.StringArrayVar(&qualify, "qualify", nil, "validator public key (at least two)")
	f.StringArrayVar(&reviewKeys, "review", nil, "integration reviewer public key")
	f.StringArrayVar(&materializeKeys, "materialize", nil, "builder public key for materialization")
	f.StringArrayVar(&buildKeys, "build", nil, "builder public key")
	f.StringArrayVar(&signKeys, "sign", nil, "release signing public key")
	f.StringVar(&expires, "expires", "", "RFC 3339 expiry of the layout (required)")
	f.StringVar(&out, "out", "", "layout file to write (required)")
	for _, r := range []string{"owner-key", "expires", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}

func newReleaseLinkCommand(s Streams) *cobra.Command {
	var step, keyPath, trust, out string
	var insecure bool
	cmd := &cobra.Command{
		Use:   "link --step STEP --key KEY --trust PUB --out DIR LAYOUT|REF",
		Short: "Sign your in-toto link for one step of a release's supply chain",
		Long: `Verify a release against the release key (--trust), derive what STEP
consumed and produced for it, and write the in-toto link signed with your
functionary key into DIR as <step>.<keyid>.link. Steps: qualify (each
validator signs the crowned payloads it qualified), review (the
integration reviewer: payloads in, reviewed source and records out),
materialize and build (the builder), sign (the release key).`,
		Example: `  cacheon release link --step qualify --key validator-a.key --trust release.pub --out links release-1.0`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			policy, err := key.LoadPolicy(trust)
			if err != nil {
				return err
			}
			st, err := openRelease(cmd.Context(), args[0], insecure)
			if err != nil {
				return err
			}
			rel, err := verify.Run(st, verify.Options{Policy: policy})
			if err != nil {
				return reportVerification(s, rel.Report, err, false)
			}
			priv, err := os.ReadFile(keyPath)
			if err != nil {
				return err
			}
			mb, name, err := intoto.Link(step, rel, priv)
			if err != nil {
				return reject.Wrap(err)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			p := filepath.Join(out, name)
			if err := mb.Dump(p); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "%s\n", p)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&step, "step", "", "supply-chain step: qualify, review, materialize, build or sign (required)")
	f.StringVar(&keyPath, "key", "", "your functionary private key, PKCS#8 PEM (required)")
	f.StringVar(&trust, "trust", "", "release public key to verify the release with first (required)")
	f.StringVar(&out, "out", "", "directory for the link (required)")
	f.BoolVar(&insecure, "insecure", false, "use plain HTTP for the registry")
	for _, r := range []string{"step", "key", "trust", "out"} {
		cmd.MarkFlagRequired(r)
	}
	return cmd
}
