// Package build turns a release stack's materialized engine tree into a
// release: an OCI image (written as an OCI image layout), its SPDX 2.3
// SBOM and its in-toto provenance statement, both attached to the image
// as OCI 1.1 artifacts.
//
// Every input is named explicitly (no default paths, no environment, no
// clock), and nothing about the host reaches the output: building the same
// inputs in another directory, under another umask, timezone or locale,
// gives byte-identical layouts. That is what lets a Bazel action run it
// and a consumer rebuild it. The Go toolchain that built the tool is part
// of the release identity: it decides the gzip bytes of the layers.
package build

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/release/base"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/layer"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/stacks/stack"
)

// ScratchBase names the project's own empty base image, used when no base
// layout is given.
const ScratchBase = "scratch"

// DefaultServeCommand runs the project's substrate on the engine tree.
var DefaultServeCommand = []string{"python3", "-m", "cacheon_substrate.serve", "--engine-tree", "{engine_tree}", "--model", "{model}"}

// DefaultServeEnvironment makes the substrate and the tree importable and
// keeps Python from writing into the read-only image.
var DefaultServeEnvironment = []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH={substrate}:{engine_tree}"}

// Inputs name everything a release is built from.
type Inputs struct {
	EngineTree      string   // materialized engine tree directory
	ReleaseManifest string   // release stack manifest (canonical JSON)
	Reviews         []string // integration review record files
	Substrate       string   // substrate directory (Python runtime)
	ModelReceipt    string   // sealed model's provision receipt
	BaseLayout      string   // OCI layout of the base image; "" for the scratch base
	BaseDigest      string   // sha256:<hex> pin of the base manifest
	BaseName        string   // human name of the base, e.g. nvcr.io/nvidia/pytorch:25.01-py3
	// Base, when set, is the base image itself (a rebuild reads it from
	// the published release); BaseDigest must then be its digest.
	Base       v1.Image `json:"-"`
	Entrypoint string   // static cacheon binary
	// EntrypointSource, when set, records what the entrypoint is built
	// from (repository, commit, Bazel target) so consumers rebuild it.
	EntrypointSource *descriptor.EntrypointSource `json:"-"`
	Platform         string                       // os/arch
	Name             string                       // image name, e.g. cacheon-engine:1.0
	ServeCommand     []string
	ServeEnv         []string
	ModelMount       string
	Epoch            int64
	Compression      layer.Compression
	Level            int
	Out              string // new OCI layout directory
	// Files, when set, holds the release stack, the review records, the
	// model receipt and the entrypoint binary as bytes, and the four
	// paths above are not read: a rebuild hands over what it already
	// holds from the verified release instead of writing it to disk to be
	// read back.
	Files *Files `json:"-"`
}

// Files are the inputs of a release given as their bytes.
type Files struct {
	ReleaseManifest []byte
	Reviews         [][]byte
	ModelReceipt    []byte
	Entrypoint      []byte
	// Substrate and EngineTree, when not nil, are those trees held in
	// memory (a rebuild reads them from the verified release's layers);
	// Inputs.Substrate and Inputs.EngineTree are then not read.
	Substrate  []HeldFile
	EngineTree []HeldFile
}

// HeldFile is one file of a tree held in memory.
type HeldFile struct {
	Path       string // slash-separated, relative to the tree's root
	Data       []byte
	Executable bool
}

// memFiles is files as the bundle and materialize packages take them.
func memFiles(files []HeldFile) []bundle.MemFile {
	out := make([]bundle.MemFile, len(files))
	for i, f := range files {
		out[i] = bundle.MemFile{Path: f.Path, Data: f.Data}
	}
	return out
}

// heldEntries lists files as layer entries below prefix, leaving out
// those skip accepts (as layer.FromDir does for a directory).
func heldEntries(files []HeldFile, prefix string, skip layer.Skip) []layer.Entry {
	var out []layer.Entry
	for _, f := range files {
		if skip == nil || !skip(f.Path) {
			out = append(out, layer.Entry{Path: path.Join(prefix, f.Path), Data: f.Data, Executable: f.Executable})
		}
	}
	return out
}

// readFiles reads the file inputs in names, or takes them from in.Files.
func readFiles(in Inputs) (*Files, error) {
	if in.Files != nil {
		return in.Files, nil
	}
	f := &Files{}
	var err error
	if f.ReleaseManifest, err = os.ReadFile(in.ReleaseManifest); err != nil {
		return nil, fmt.Errorf("read release manifest: %w", err)
	}
	for _, p := range in.Reviews {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read review record: %w", err)
		}
		f.Reviews = append(f.Reviews, b)
	}
	if f.ModelReceipt, err = os.ReadFile(in.ModelReceipt); err != nil {
		return nil, fmt.Errorf("read model receipt: %w", err)
	}
	if f.Entrypoint, err = os.ReadFile(in.Entrypoint); err != nil {
		return nil, fmt.Errorf("read entrypoint binary: %w", err)
	}
	return f, nil
}

// Result is what a build produced.
type Result struct {
	Layout             string `json:"layout"`
	Image              string `json:"image"`
	ImageDigest        string `json:"image_digest"`
	EngineTreeDigest   string `json:"engine_tree_digest"`
	DescriptorDigest   string `json:"descriptor_digest"`
	ReleaseManifest    string `json:"release_manifest_digest"`
	SBOMDigest         string `json:"sbom_digest"`
	ProvenanceDigest   string `json:"provenance_digest"`
	GoVersion          string `json:"go_version"`
	Contributions      int    `json:"contributions"`
	BaseImageDigest    string `json:"base_image_digest"`
	SourceDateEpoch    int64  `json:"source_date_epoch"`
	ImageLayers        int    `json:"image_layers"`
	StatementSHA256    string `json:"statement_sha256"`
	StatementPredicate string `json:"statement_predicate_type"`
}

// Progress receives one line per stage; nil discards.
type Progress func(stage string)

// sbomFiles are the SBOM rows of a written layer's files, from the
// digests its one pass computed over the bytes it wrote, sorted by path.
func sbomFiles(w *layer.Written) []sbom.File {
	out := make([]sbom.File, 0, len(w.Files))
	for _, f := range w.Files {
		out = append(out, sbom.File{Path: f.Path, SHA1: f.SHA1, SHA256: f.SHA256})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ToolVersions are the builder's versions recorded in the provenance.
func ToolVersions() map[string]string {
	v := map[string]string{"go": runtime.Version(), "cacheon-release": "1"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/google/go-containerregistry", "github.com/klauspost/compress", "github.com/sigstore/sigstore-go", "github.com/in-toto/attestation":
				v[d.Path] = d.Version
			}
		}
	}
	return v
}

// Plan is a checked release, ready to be written: the descriptor and the
// files of each layer. Prepare makes it from inputs; Write turns it into a
// layout. Between the two nothing is read from the inputs but the files
// the layers list.
type Plan struct {
	Name     string
	Platform image.Platform
	Base     v1.Image
	BaseName string
	// BaseDiffIDs are the base layers' uncompressed digests, measured
	// while reading its package database and checked against its config.
	BaseDiffIDs []v1.Hash
	Descriptor  *descriptor.Descriptor
	// Layers are the four release layers in image order: substrate,
	// entrypoint, engine-tree, release (release.json is added by Write).
	Layers []PlanLayer
	Epoch  int64
	Opts   layer.Options
	// Contributions is the number of integrated contributions.
	Contributions int
}

// PlanLayer is one layer of a plan.
type PlanLayer struct {
	Role    string
	Entries []layer.Entry
}

// Layer roles, in image order.
const (
	RoleSubstrate  = "substrate"
	RoleEntrypoint = "entrypoint"
	RoleEngineTree = "engine-tree"
	RoleRelease    = "release"
)

// Build checks the inputs and writes the release to in.Out. On any error
// nothing is left at in.Out.
func Build(in Inputs, progress Progress) (*Result, error) {
	if progress == nil {
		progress = func(string) {}
	}
	plan, err := Prepare(in, progress)
	if err != nil {
		return nil, err
	}
	return plan.Write(in.Out, progress)
}

// Prepare checks every input and returns the plan of the release.
func Prepare(in Inputs, progress Progress) (*Plan, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if in.Compression == "" {
		in.Compression = layer.Gzip
	}
	if _, err := in.Compression.MediaType(); err != nil {
		return nil, err
	}
	if in.ModelMount == "" {
		in.ModelMount = descriptor.DefaultModel
	}
	if len(in.ServeCommand) == 0 {
		in.ServeCommand = DefaultServeCommand
	}
	if in.ServeEnv == nil {
		in.ServeEnv = DefaultServeEnvironment
	}
	env := append([]string(nil), in.ServeEnv...)
	sort.Strings(env)
	if err := descriptor.CheckEnvironment(env); err != nil {
		return nil, fmt.Errorf("serve environment: %w", err)
	}
	if in.Name == "" {
		return nil, fmt.Errorf("no image name")
	}
	platform, err := image.ParsePlatform(in.Platform)
	if err != nil {
		return nil, err
	}

	progress("checking the release stack and its integration records")
	files, err := readFiles(in)
	if err != nil {
		return nil, err
	}
	m, err := stack.ParseManifest(files.ReleaseManifest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.ReleaseManifest, err)
	}
	manifestDigest, err := m.Digest()
	if err != nil {
		return nil, err
	}
	canonManifest, _ := m.CanonicalJSON()
	canonManifest = append(canonManifest, '\n')
	records, recordBytes, err := parseReviews(in.Reviews, files.Reviews)
	if err != nil {
		return nil, err
	}
	covered, err := review.CheckCoverage(m, records)
	if err != nil {
		return nil, err
	}

	progress("checking the engine tree")
	var tree *EngineTree
	if files.EngineTree != nil {
		tree, err = CheckHeldEngineTree(files.EngineTree, m)
	} else {
		tree, err = CheckEngineTree(in.EngineTree, m)
	}
	if err != nil {
		return nil, err
	}

	progress("checking the substrate, model receipt, entrypoint and base image")
	var substrateDigest identity.Digest
	if files.Substrate != nil {
		substrateDigest, err = bundle.ContentHashOf(memFiles(files.Substrate))
	} else {
		substrateDigest, err = bundle.ContentHash(in.Substrate)
	}
	if err != nil {
		return nil, fmt.Errorf("substrate %s: %w", in.Substrate, err)
	}
	receiptBytes := files.ModelReceipt
	receipt, err := models.ParseReceipt(receiptBytes)
	if err != nil {
		return nil, fmt.Errorf("model receipt %s: %w", in.ModelReceipt, err)
	}
	if err := models.CheckReceiptName(in.ModelReceipt, receipt); err != nil {
		return nil, fmt.Errorf("model receipt: %w", err)
	}
	receiptDigest, err := receipt.Digest()
	if err != nil {
		return nil, err
	}
	entryBytes := files.Entrypoint
	var baseImg v1.Image
	baseName := in.BaseName
	switch {
	case in.Base != nil:
		baseImg = in.Base
		got, err := baseImg.Digest()
		if err != nil {
			return nil, err
		}
		if got.String() != in.BaseDigest {
			return nil, fmt.Errorf("base image is %s, pinned %s", got, in.BaseDigest)
		}
		if cfg, err := baseImg.ConfigFile(); err != nil || cfg.OS != platform.OS || cfg.Architecture != platform.Architecture || cfg.Variant != platform.Variant {
			return nil, fmt.Errorf("base image %s is not for %s", got, platform)
		}
	case in.BaseLayout == "":
		if in.BaseDigest != "" {
			return nil, fmt.Errorf("--base-digest given without --base-layout")
		}
		if baseImg, err = image.Scratch(platform); err != nil {
			return nil, err
		}
		if baseName == "" {
			baseName = ScratchBase
		}
	default:
		pin, err := v1.NewHash(in.BaseDigest)
		if err != nil {
			return nil, fmt.Errorf("base digest %q: %w (pin the base by its manifest digest, sha256:<hex>)", in.BaseDigest, err)
		}
		if baseImg, err = image.LoadBase(in.BaseLayout, pin, platform); err != nil {
			return nil, err
		}
		if baseName == "" {
			return nil, fmt.Errorf("--base-name is required with --base-layout (it is recorded in the SBOM and provenance)")
		}
	}
	baseDigest, err := baseImg.Digest()
	if err != nil {
		return nil, err
	}
	baseManifest, err := baseImg.Manifest()
	if err != nil {
		return nil, err
	}
	var baseLayers []string
	for _, l := range baseManifest.Layers {
		baseLayers = append(baseLayers, l.Digest.String())
	}
	// The base's OS packages, for the descriptor and so the SBOM: read
	// from its layers, never from what a base claims about itself.
	installed, err := base.ReadInstalled(baseImg)
	if err != nil {
		return nil, fmt.Errorf("base image %s: %w", baseDigest, err)
	}
	// The layers as read must be the layers the base's config lists: an
	// image whose config names other diff IDs would not load in a runtime.
	baseCfg, err := baseImg.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("base image %s: config: %w", baseDigest, err)
	}
	if got, want := len(installed.DiffIDs), len(baseCfg.RootFS.DiffIDs); got != want {
		return nil, fmt.Errorf("base image %s: %d layers, but its config lists %d diff IDs (rootfs.diff_ids)", baseDigest, got, want)
	}
	for i, d := range installed.DiffIDs {
		if d != baseCfg.RootFS.DiffIDs[i] {
			return nil, fmt.Errorf("base image %s: layer %d (%s) decompresses to %s, but its config lists diff ID %s (rootfs.diff_ids)", baseDigest, i, baseLayers[i], d, baseCfg.RootFS.DiffIDs[i])
		}
	}

	d := &descriptor.Descriptor{
		Type:                  descriptor.Type,
		SchemaVersion:         descriptor.SchemaVersion,
		ReleaseManifestDigest: manifestDigest.String(),
		EngineTreeDigest:      tree.Digest,
		CatalogDigest:         m.CatalogDigest.String(),
		RuntimeDigest:         m.RuntimeDigest.String(),
		BaseEngineDigest:      m.BaseEngineDigest.String(),
		SubstrateDigest:       substrateDigest.String(),
		Model: descriptor.Model{
			ContentDigest: receipt.ContentDigest,
			ReceiptDigest: receiptDigest,
			ReceiptSHA256: descriptor.SHA256(receiptBytes),
		},
		BaseImage: descriptor.BaseImage{Name: baseName, Digest: baseDigest.String(), Platform: platform.String(), Layers: nonNil(baseLayers),
			Distro: installed.Distro, Packages: installed.Packages},
		Entrypoint: descriptor.Entrypoint{
			SHA256: descriptor.SHA256(entryBytes),
			Size:   int64(len(entryBytes)),
			Source: in.EntrypointSource,
		},
		Serve:     descriptor.Serve{Command: in.ServeCommand, Environment: env, ModelMount: in.ModelMount},
		Toolchain: descriptor.Toolchain{GoVersion: runtime.Version(), Compression: string(in.Compression), CompressionLevel: in.Level, SourceDateEpoch: in.Epoch},
	}
	recordByDigest := map[string][]byte{}
	for i, r := range records {
		dg, _ := r.Digest()
		recordByDigest[dg] = recordBytes[i]
	}
	d.Integrations = []descriptor.Integration{}
	for _, c := range covered {
		d.Integrations = append(d.Integrations, descriptor.Integration{
			TargetID:                   c.TargetID,
			IntegratedRefDigest:        c.IntegratedRefDigest.String(),
			IntegrationRecordDigest:    c.RecordDigest,
			IntegratedSourceTreeDigest: c.Record.IntegratedSourceTreeDigest,
			SelectedPayloadDigest:      c.Record.SelectedPayloadDigest,
			ReviewCommit:               c.Record.ReviewCommit,
			Reviewer:                   c.Record.Reviewer,
			RecordSHA256:               descriptor.SHA256(recordByDigest[c.RecordDigest]),
		})
	}
	d.SortIntegrations()
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("release descriptor: %w", err)
	}

	var substrateEntries, treeEntries []layer.Entry
	if files.Substrate != nil {
		substrateEntries = heldEntries(files.Substrate, descriptor.SubstrateDir, bundle.Skipped)
	} else if substrateEntries, err = layer.FromDir(in.Substrate, descriptor.SubstrateDir, bundle.Skipped); err != nil {
		return nil, err
	}
	if files.EngineTree != nil {
		treeEntries = heldEntries(files.EngineTree, descriptor.EngineTreeDir, nil)
	} else if treeEntries, err = layer.FromDir(in.EngineTree, descriptor.EngineTreeDir, nil); err != nil {
		return nil, err
	}
	releaseEntries := []layer.Entry{
		{Path: descriptor.ManifestPath, Data: canonManifest},
		{Path: descriptor.ModelReceipt, Data: receiptBytes},
	}
	for _, c := range covered {
		releaseEntries = append(releaseEntries, layer.Entry{Path: descriptor.ReviewPath(c.RecordDigest), Data: recordByDigest[c.RecordDigest]})
	}
	entryEntries := []layer.Entry{{Path: descriptor.EntrypointPath, Data: entryBytes, Executable: true}}
	return &Plan{
		Name: in.Name, Platform: platform, Base: baseImg, BaseName: baseName, BaseDiffIDs: installed.DiffIDs, Descriptor: d,
		// What changes least comes first, so releases share layers.
		Layers: []PlanLayer{
			{RoleSubstrate, substrateEntries}, {RoleEntrypoint, entryEntries},
			{RoleEngineTree, treeEntries}, {RoleRelease, releaseEntries},
		},
		Epoch: in.Epoch, Opts: layer.Options{Epoch: in.Epoch, Compression: in.Compression, Level: in.Level},
		Contributions: len(covered),
	}, nil
}

// Write writes the plan as a new OCI layout at out.
func (p *Plan) Write(out string, progress Progress) (*Result, error) {
	if progress == nil {
		progress = func(string) {}
	}
	d := p.Descriptor
	descBytes, err := d.Marshal()
	if err != nil {
		return nil, err
	}
	descDigest, err := d.Digest()
	if err != nil {
		return nil, err
	}
	w, err := store.NewLayoutWriter(out)
	if err != nil {
		return nil, err
	}
	defer w.Abort()
	scratch, err := w.ScratchDir()
	if err != nil {
		return nil, err
	}
	progress("writing layers")
	specs := append([]PlanLayer(nil), p.Layers...)
	for i := range specs {
		if specs[i].Role == RoleRelease {
			specs[i].Entries = append([]layer.Entry{{Path: descriptor.DescriptorPath, Data: descBytes}}, specs[i].Entries...)
		}
	}
	var entryBytes []byte
	for _, s := range specs {
		switch s.Role {
		case RoleEntrypoint:
			if len(s.Entries) == 1 {
				if entryBytes = s.Entries[0].Data; entryBytes == nil && s.Entries[0].Source != "" {
					if entryBytes, err = os.ReadFile(s.Entries[0].Source); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	written := make([]*layer.Written, len(specs))
	errs := make([]error, len(specs))
	done := make(chan int, len(specs))
	for i, s := range specs {
		go func(i int, s PlanLayer) {
			written[i], errs[i] = layer.Write(filepath.Join(scratch, "layer-"+s.Role), s.Entries, p.Opts)
			done <- i
		}(i, s)
	}
	for range specs {
		<-done
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s layer: %w", specs[i].Role, err)
		}
	}
	var added []image.Added
	for i, s := range specs {
		added = append(added, image.Added{Layer: image.FileLayer{W: written[i]}, CreatedBy: "cacheon release build: " + s.Role})
	}

	progress("assembling the image")
	img, err := image.Assemble(image.Spec{
		Base: p.Base, BaseName: p.BaseName, BaseDiffIDs: p.BaseDiffIDs, Platform: p.Platform, Layers: added, Epoch: p.Epoch,
		Config: image.Config{
			Entrypoint: []string{"/" + descriptor.EntrypointPath, "release", "serve"},
			WorkingDir: "/",
			Labels: map[string]string{
				"org.opencontainers.image.title":  p.Name,
				"dev.cacheon.release.descriptor":  descDigest,
				"dev.cacheon.release.stack":       d.ReleaseManifestDigest,
				"dev.cacheon.release.engine-tree": d.EngineTreeDigest,
			},
		},
	})
	if err != nil {
		return nil, err
	}
	imgDigest, err := img.Digest()
	if err != nil {
		return nil, err
	}

	progress("writing the SBOM and provenance")
	// The SBOM lists the bytes the layers hold, hashed by the pass that
	// wrote them: no file is read again.
	var engineFiles, substrateFiles []sbom.File
	for i, s := range specs {
		switch s.Role {
		case RoleEngineTree:
			engineFiles = sbomFiles(written[i])
		case RoleSubstrate:
			substrateFiles = sbomFiles(written[i])
		}
	}
	sbomIn := sbom.ForRelease(d, descDigest, p.Name, imgDigest.String(), engineFiles, substrateFiles, entryBytes)
	sbomBytes, err := sbom.Generate(sbomIn)
	if err != nil {
		return nil, err
	}
	var layerInfo []provenance.Layer
	for i, s := range specs {
		layerInfo = append(layerInfo, provenance.Layer{Role: s.Role, Digest: written[i].Digest, DiffID: written[i].DiffID, MediaType: written[i].MediaType})
	}
	prov := provenance.ForRelease(provenance.ReleaseInput{
		Descriptor: d, DescriptorDigest: descDigest, DescriptorSHA256: descriptor.SHA256(descBytes),
		ImageName: p.Name, ImageDigest: imgDigest.String(), SBOMSHA256: descriptor.SHA256(sbomBytes),
		Layers: layerInfo, Builder: ToolVersions(),
	})
	statement, err := prov.Statement()
	if err != nil {
		return nil, err
	}

	progress("writing the OCI layout")
	if _, err := w.AddImage(img, LayoutRefName(p.Name)); err != nil {
		return nil, err
	}
	if _, err := w.AddBase(p.Base); err != nil {
		return nil, fmt.Errorf("write the base image into the layout: %w", err)
	}
	if _, err := w.Attach(store.Artifact{ArtifactType: store.ArtifactSBOM, Data: sbomBytes, Title: store.TitleSBOM}); err != nil {
		return nil, err
	}
	if _, err := w.Attach(store.Artifact{ArtifactType: store.ArtifactProvenance, Data: statement, Title: store.TitleProvenance,
		Annotations: map[string]string{store.AnnotationPredicateType: provenance.PredicateType}}); err != nil {
		return nil, err
	}
	if _, err := w.Commit(); err != nil {
		return nil, err
	}
	return &Result{
		Layout: out, Image: p.Name, ImageDigest: imgDigest.String(), EngineTreeDigest: d.EngineTreeDigest,
		DescriptorDigest: descDigest, ReleaseManifest: d.ReleaseManifestDigest,
		SBOMDigest: "sha256:" + descriptor.SHA256(sbomBytes), ProvenanceDigest: "sha256:" + descriptor.SHA256(statement),
		GoVersion: runtime.Version(), Contributions: p.Contributions, BaseImageDigest: d.BaseImage.Digest,
		SourceDateEpoch: p.Epoch, ImageLayers: len(d.BaseImage.Layers) + len(specs),
		StatementSHA256: descriptor.SHA256(statement), StatementPredicate: provenance.PredicateType,
	}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// LayoutRefName is the name index.json lists the release image under
// (org.opencontainers.image.ref.name): the tag of the image name
// ("0.1.0" for cacheon-engine:0.1.0), as the OCI layout's stock clients
// address it (oras --oci-layout DIR:0.1.0, skopeo oci:DIR:0.1.0). A name
// without a tag is listed whole.
func LayoutRefName(imageName string) string {
	repo := imageName
	if i := strings.LastIndex(repo, "/"); i >= 0 {
		repo = repo[i+1:]
	}
	if i := strings.LastIndex(repo, ":"); i >= 0 && i+1 < len(repo) {
		return repo[i+1:]
	}
	return imageName
}
