// Package verify checks a release offline, with nothing but the store
// that holds it (an OCI layout directory or a registry) and a trusted
// public key: no chain, wallet, miner URL, referee database, transparency
// log or timestamp authority.
//
// Every check has a stable name (the Check* constants) and a failure
// names it, says what was expected and what was found: the signature and
// the key policy, the statement's predicate type, builder and subjects,
// every blob of the image against its descriptor, the layers against the
// provenance, the engine tree, substrate, entrypoint and model receipt
// shipped in the image against the signed release descriptor, integrated
// -only coverage of the release stack by its review records, and the SBOM
// and provenance regenerated from what the image holds.
package verify

import (
	"bytes"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/layer"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/release/sbom"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/tools/atomicwrite"
)

// Names of the checks, in the order they run.
const (
	CheckImage        = "image-manifest"
	CheckAttestations = "attestations"
	CheckSignature    = "signature"
	CheckKeyPolicy    = "key-policy"
	CheckPredicate    = "predicate-type"
	CheckBuilder      = "builder"
	CheckSubjects     = "subjects"
	CheckLayers       = "layers"
	CheckBlobs        = "image-blobs"
	CheckDescriptor   = "release-descriptor"
	CheckEngineTree   = "engine-tree"
	CheckIntegrations = "integrations"
	CheckSubstrate    = "substrate"
	CheckEntrypoint   = "entrypoint"
	CheckModelReceipt = "model-receipt"
	CheckSBOM         = "sbom"
	CheckProvenance   = "provenance"
	CheckLayout       = "in-toto-layout"
)

// FormatVersion of the JSON report.
const FormatVersion = 1

// Failure is a failed check.
type Failure struct {
	Check string
	Err   error
}

func (f *Failure) Error() string { return fmt.Sprintf("%s check failed: %v", f.Check, f.Err) }
func (f *Failure) Unwrap() error { return f.Err }

func fail(check string, err error) error { return &Failure{Check: check, Err: err} }

func failf(check, format string, args ...any) error {
	return &Failure{Check: check, Err: fmt.Errorf(format, args...)}
}

// Options configure a verification.
type Options struct {
	Policy   *key.Policy
	Now      time.Time // when the key policy is evaluated; zero means now
	Progress func(string)
	// Layout, when set, also checks the release against a signed in-toto
	// supply-chain layout (see CheckLayout).
	Layout LayoutCheck
}

// LayoutCheck checks a verified release against a supply-chain layout.
type LayoutCheck func(r *Release) error

// CheckResult is one check in a report.
type CheckResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Report is the outcome of a verification.
type Report struct {
	FormatVersion         int           `json:"format_version"`
	Location              string        `json:"location"`
	Image                 string        `json:"image"`
	ImageDigest           string        `json:"image_digest"`
	EngineTreeDigest      string        `json:"engine_tree_digest"`
	DescriptorDigest      string        `json:"descriptor_digest"`
	ReleaseManifestDigest string        `json:"release_manifest_digest"`
	KeyID                 string        `json:"key_id"`
	GoVersion             string        `json:"go_version"`
	Contributions         []string      `json:"contributions"`
	BytesVerified         int64         `json:"bytes_verified"`
	Verified              bool          `json:"verified"`
	Checks                []CheckResult `json:"checks"`
}

func (r *Report) pass(name, format string, args ...any) {
	r.Checks = append(r.Checks, CheckResult{Name: name, OK: true, Detail: fmt.Sprintf(format, args...)})
}

// Release is what a successful verification established, for callers that
// go on (rebuild, the in-toto layout check).
type Release struct {
	Report      *Report
	Image       v1.Descriptor
	Manifest    *v1.Manifest
	Statement   []byte
	Provenance  *provenance.Provenance
	Descriptor  *descriptor.Descriptor
	Files       map[string][]byte // the release layer's files
	Records     []*review.Record
	ReleaseJSON []byte
	SBOM        []byte
	// Bundle is the signature bundle that verified, SignerPublic its key.
	Bundle       []byte
	SignerPublic crypto.PublicKey
	// Attachments are the verified artifacts the verification used: the
	// signature bundle, the provenance statement and the SBOM.
	Attachments []store.Referrer
}

// Our layers, in image order, after the base image's.
var ourLayers = []string{"substrate", "entrypoint", "engine-tree", "release"}

const maxReleaseFile = 16 << 20

// Run verifies the release in s.
func Run(s store.Store, opts Options) (*Release, error) {
	rep := &Report{FormatVersion: FormatVersion, Location: s.Location(), Contributions: []string{}, Checks: []CheckResult{}}
	rel, err := run(s, opts, rep)
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			rep.Checks = append(rep.Checks, CheckResult{Name: f.Check, OK: false, Detail: f.Err.Error()})
		}
		return &Release{Report: rep}, err
	}
	rep.Verified = true
	return rel, nil
}

func run(s store.Store, opts Options, rep *Report) (*Release, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	if opts.Policy == nil {
		return nil, errors.New("verify: no trusted key")
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	rel := &Release{Report: rep}

	progress("reading the image manifest")
	desc, err := s.Resolve()
	if err != nil {
		if store.IsRejection(err) {
			return nil, fail(CheckImage, err)
		}
		return nil, err
	}
	raw, err := store.ReadManifest(s, desc)
	if err != nil {
		return nil, fail(CheckImage, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, failf(CheckImage, "parse manifest %s: %v", desc.Digest, err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		return nil, failf(CheckImage, "manifest %s has media types %s / %s, want OCI", desc.Digest, m.MediaType, m.Config.MediaType)
	}
	rel.Image, rel.Manifest = desc, m
	rep.ImageDigest = desc.Digest.String()
	rep.pass(CheckImage, "%s (%d layers)", desc.Digest, len(m.Layers))

	// The attachments are read lazily, signature first: a bundle's
	// manifest and blob are read only until one verifies, and only the
	// provenance and SBOM the signed statement names are read after it.
	// A layout or registry listing thousands of referrers costs their
	// descriptors, not their bytes.
	progress("reading attestations")
	att, err := listAttachments(s, desc.Digest)
	if err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for _, typ := range []string{store.ArtifactBundle, store.ArtifactProvenance, store.ArtifactSBOM} {
		if found[typ], err = att.exists(typ); err != nil {
			return nil, err
		}
	}
	if !found[store.ArtifactBundle] {
		return nil, failf(CheckAttestations, "missing attestation: no signature bundle (%s) is attached to image %s: the release is unsigned", store.ArtifactBundle, desc.Digest)
	}
	if !found[store.ArtifactProvenance] {
		return nil, failf(CheckAttestations, "missing attestation: no provenance statement (%s) is attached to image %s", store.ArtifactProvenance, desc.Digest)
	}
	if !found[store.ArtifactSBOM] {
		return nil, failf(CheckAttestations, "missing attestation: no SBOM (%s) is attached to image %s", store.ArtifactSBOM, desc.Digest)
	}
	rep.pass(CheckAttestations, "%d signature bundle(s), %d provenance statement(s), %d SBOM(s) listed", att.listed(store.ArtifactBundle), att.listed(store.ArtifactProvenance), att.listed(store.ArtifactSBOM))

	progress("checking the signature")
	var signed *SignedStatement
	var firstErr error
	err = att.each(store.ArtifactBundle, func(b *store.Referrer) (bool, error) {
		if err := att.load(b); err != nil {
			return false, err
		}
		st, err := Bundle(b.Data, opts.Policy, now)
		if err == nil {
			signed, rel.Bundle = st, b.Data
			rel.Attachments = append(rel.Attachments, *b)
			return true, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if signed == nil {
		return nil, firstErr
	}
	rep.KeyID = signed.KeyID
	rel.SignerPublic = signed.Public
	rep.pass(CheckKeyPolicy, "key %s is trusted and valid at %s", signed.KeyID, now.UTC().Format(time.RFC3339))
	rep.pass(CheckSignature, "DSSE signature by key %s verifies", signed.KeyID)
	rel.Statement = signed.Statement

	prov, err := provenance.Parse(signed.Statement)
	if err != nil {
		return nil, fail(CheckPredicate, err)
	}
	rel.Provenance = prov
	rep.pass(CheckPredicate, "%s", provenance.PredicateType)
	if prov.BuilderID != provenance.BuilderID {
		return nil, failf(CheckBuilder, "builder.id %q, want %q", prov.BuilderID, provenance.BuilderID)
	}
	if prov.BuildType != provenance.BuildType {
		return nil, failf(CheckBuilder, "buildType %q, want %q", prov.BuildType, provenance.BuildType)
	}
	rep.pass(CheckBuilder, "builder %s, build type %s, go %s", prov.BuilderID, prov.BuildType, prov.BuilderVersion["go"])
	rep.GoVersion = prov.BuilderVersion["go"]

	if len(prov.Subjects) != 2 {
		return nil, failf(CheckSubjects, "statement has %d subjects, want 2 (the image and the engine tree)", len(prov.Subjects))
	}
	imgSubject := prov.Subjects[0]
	if imgSubject.Digest["sha256"] != desc.Digest.Hex {
		return nil, failf(CheckSubjects, "signed image subject %q is sha256:%s, but the image in %s is %s", imgSubject.Name, imgSubject.Digest["sha256"], s.Location(), desc.Digest)
	}
	treeSubject, ok := provenance.Find(prov.Subjects, provenance.SubjectEngineTree)
	if !ok || treeSubject.Digest["cacheon.materialized-engine-tree"] == "" {
		return nil, failf(CheckSubjects, "statement has no engine-tree subject")
	}
	rep.Image = imgSubject.Name

	// The provenance attached is the statement signed: only a candidate
	// whose blob descriptor names the signed bytes is read.
	stmtSum := descriptor.SHA256(signed.Statement)
	var attached []byte
	var firstProv string
	err = att.each(store.ArtifactProvenance, func(p *store.Referrer) (bool, error) {
		if firstProv == "" {
			firstProv = p.Blob.Digest.String()
		}
		if p.Blob.Digest.Hex != stmtSum || p.Blob.Size != int64(len(signed.Statement)) {
			return false, nil
		}
		if err := att.load(p); err != nil {
			return false, err
		}
		if bytes.Equal(p.Data, signed.Statement) {
			attached = p.Data
			rel.Attachments = append(rel.Attachments, *p)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if attached == nil {
		return nil, failf(CheckProvenance, "the attached provenance statement (%s) is not the statement the bundle signs", firstProv)
	}

	progress("checking the layers against the provenance")
	n := len(m.Layers)
	if n < len(ourLayers) {
		return nil, failf(CheckLayers, "image has %d layers, a release has at least %d", n, len(ourLayers))
	}
	for i, role := range ourLayers {
		l := m.Layers[n-len(ourLayers)+i]
		bp, ok := provenance.Find(prov.Byproducts, provenance.LayerByproduct(role))
		if !ok {
			return nil, failf(CheckLayers, "provenance lists no %s layer", role)
		}
		if bp.Digest["sha256"] != l.Digest.Hex {
			return nil, failf(CheckLayers, "%s layer: the image has %s, the signed provenance says sha256:%s", role, l.Digest, bp.Digest["sha256"])
		}
	}

	progress("hashing the image blobs")
	contents, verifiedBytes, err := readBlobs(s, m, n-len(ourLayers))
	if err != nil {
		return nil, err
	}
	rep.BytesVerified = verifiedBytes + int64(len(raw))
	rep.pass(CheckBlobs, "config and %d layers (%d bytes) match their descriptors", n, verifiedBytes)

	// The release descriptor.
	rel.Files = contents["release"].files
	descBytes := rel.Files[descriptor.DescriptorPath]
	bp, ok := provenance.Find(prov.Byproducts, provenance.ByproductRelease)
	if !ok {
		return nil, failf(CheckDescriptor, "provenance lists no %s byproduct", provenance.ByproductRelease)
	}
	if descBytes == nil {
		return nil, failf(CheckDescriptor, "/%s is missing from the release layer", descriptor.DescriptorPath)
	}
	if got := descriptor.SHA256(descBytes); got != bp.Digest["sha256"] {
		return nil, failf(CheckDescriptor, "/%s hashes to sha256:%s, the signed provenance says sha256:%s", descriptor.DescriptorPath, got, bp.Digest["sha256"])
	}
	d, err := descriptor.Parse(descBytes)
	if err != nil {
		return nil, fail(CheckDescriptor, err)
	}
	descDigest, _ := d.Digest()
	if descDigest != bp.Digest[descriptor.Domain] {
		return nil, failf(CheckDescriptor, "descriptor digest %s, the signed provenance says %s", descDigest, bp.Digest[descriptor.Domain])
	}
	rel.Descriptor, rel.ReleaseJSON = d, descBytes
	rep.DescriptorDigest, rep.ReleaseManifestDigest = descDigest, d.ReleaseManifestDigest
	rep.pass(CheckDescriptor, "%s", descDigest)

	// Base layers are the pinned base's.
	if got := n - len(ourLayers); got != len(d.BaseImage.Layers) {
		return nil, failf(CheckLayers, "image has %d base layers, the descriptor's base %s has %d", got, d.BaseImage.Digest, len(d.BaseImage.Layers))
	}
	for i, want := range d.BaseImage.Layers {
		if m.Layers[i].Digest.String() != want {
			return nil, failf(CheckLayers, "base layer %d is %s, the pinned base %s has %s", i, m.Layers[i].Digest, d.BaseImage.Digest, want)
		}
	}
	if m.Annotations["org.opencontainers.image.base.digest"] != d.BaseImage.Digest {
		return nil, failf(CheckLayers, "manifest base annotation %q, the descriptor's base is %s", m.Annotations["org.opencontainers.image.base.digest"], d.BaseImage.Digest)
	}
	rep.pass(CheckLayers, "%d base layers of %s, then substrate, entrypoint, engine tree and release layers", len(d.BaseImage.Layers), d.BaseImage.Digest)

	// The engine tree.
	tree := contents["engine-tree"]
	if tree.treeErr != nil {
		return nil, failf(CheckEngineTree, "the engine tree in the image does not pass the materializer's check: %v", tree.treeErr)
	}
	treeDigest, err := materialize.TreeDigest(tree.rows)
	if err != nil {
		return nil, fail(CheckEngineTree, err)
	}
	if treeDigest != tree.treeDigest {
		return nil, failf(CheckEngineTree, "engine tree digest %s, the materializer's check gives %s", treeDigest, tree.treeDigest)
	}
	if treeDigest != d.EngineTreeDigest || treeDigest != treeSubject.Digest["cacheon.materialized-engine-tree"] {
		return nil, failf(CheckEngineTree, "the engine tree in the image has digest %s; the descriptor says %s and the signed subject %s", treeDigest, d.EngineTreeDigest, treeSubject.Digest["cacheon.materialized-engine-tree"])
	}
	rep.EngineTreeDigest = treeDigest

	records, targets, err := CheckReleaseFiles(d, rel.Files, tree.metadata)
	if err != nil {
		return nil, err
	}
	rep.pass(CheckEngineTree, "%s (%d files), materialized from release stack %s", treeDigest, len(tree.rows), d.ReleaseManifestDigest)
	rep.Contributions = targets
	rel.Records = records
	rep.pass(CheckIntegrations, "%d integrated contribution(s), each covered by exactly one approved review record", len(targets))

	// Substrate, entrypoint, model receipt.
	sub := contents["substrate"]
	if sub.contentHash != d.SubstrateDigest {
		return nil, failf(CheckSubstrate, "the substrate in the image has content hash %s, the descriptor says %s", sub.contentHash, d.SubstrateDigest)
	}
	rep.pass(CheckSubstrate, "%s (%d files)", sub.contentHash, len(sub.sbomFiles))
	entry := contents["entrypoint"]
	if entry.entrySHA256 != d.Entrypoint.SHA256 || entry.entrySize != d.Entrypoint.Size {
		return nil, failf(CheckEntrypoint, "/%s is sha256:%s (%d bytes), the descriptor says sha256:%s (%d bytes)", descriptor.EntrypointPath, entry.entrySHA256, entry.entrySize, d.Entrypoint.SHA256, d.Entrypoint.Size)
	}
	rep.pass(CheckEntrypoint, "/%s sha256:%s", descriptor.EntrypointPath, entry.entrySHA256)
	receipt, err := ModelReceipt(d, rel.Files)
	if err != nil {
		return nil, err
	}
	rep.pass(CheckModelReceipt, "model content %s", receipt.ContentDigest)

	// SBOM: attached, recorded in the provenance, and regenerated equal.
	sb, ok := provenance.Find(prov.Byproducts, provenance.ByproductSBOM)
	if !ok {
		return nil, failf(CheckSBOM, "provenance lists no %s byproduct", provenance.ByproductSBOM)
	}
	var sbomBytes []byte
	var firstSBOM string
	err = att.each(store.ArtifactSBOM, func(r *store.Referrer) (bool, error) {
		if firstSBOM == "" {
			firstSBOM = r.Blob.Digest.Hex
		}
		if r.Blob.Digest.Hex != sb.Digest["sha256"] {
			return false, nil
		}
		if err := att.load(r); err != nil {
			return false, err
		}
		sbomBytes = r.Data
		rel.Attachments = append(rel.Attachments, *r)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if sbomBytes == nil {
		return nil, failf(CheckSBOM, "no attached SBOM hashes to sha256:%s, the SBOM the signed provenance names (attached: sha256:%s)", sb.Digest["sha256"], firstSBOM)
	}
	if _, err := sbom.Parse(sbomBytes); err != nil {
		return nil, fail(CheckSBOM, err)
	}
	want, err := sbom.Generate(sbom.ForRelease(d, descDigest, imgSubject.Name, desc.Digest.String(), tree.sbomFiles, sub.sbomFiles, entry.entryBytes))
	if err != nil {
		return nil, fail(CheckSBOM, err)
	}
	if same, field := sbom.Equal(want, sbomBytes); !same {
		return nil, failf(CheckSBOM, "the SBOM does not describe this image: field %q differs from the SBOM regenerated from the image's contents", field)
	}
	rel.SBOM = sbomBytes
	rep.pass(CheckSBOM, "SPDX 2.3, sha256:%s, consistent with the image", sb.Digest["sha256"])

	// Provenance: regenerated from the image, it must be the signed bytes.
	var layers []provenance.Layer
	for i, role := range ourLayers {
		l := m.Layers[n-len(ourLayers)+i]
		layers = append(layers, provenance.Layer{Role: role, Digest: l.Digest.String(), DiffID: contents[role].diffID, MediaType: string(l.MediaType)})
	}
	regen, err := provenance.ForRelease(provenance.ReleaseInput{
		Descriptor: d, DescriptorDigest: descDigest, DescriptorSHA256: descriptor.SHA256(descBytes),
		ImageName: imgSubject.Name, ImageDigest: desc.Digest.String(), SBOMSHA256: descriptor.SHA256(sbomBytes),
		Layers: layers, Builder: prov.BuilderVersion,
	}).Statement()
	if err != nil {
		return nil, fail(CheckProvenance, err)
	}
	if !bytes.Equal(regen, signed.Statement) {
		return nil, failf(CheckProvenance, "the signed provenance is not the one this image's contents give: %s", firstDifference(regen, signed.Statement))
	}
	rep.pass(CheckProvenance, "resolved dependencies, byproducts and parameters match the image")

	if opts.Layout != nil {
		if err := opts.Layout(rel); err != nil {
			var f *Failure
			if errors.As(err, &f) {
				return nil, err
			}
			return nil, fail(CheckLayout, err)
		}
	}
	return rel, nil
}

// firstDifference describes where two JSON documents first differ.
func firstDifference(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	lo := max(0, i-40)
	clip := func(b []byte) string { return string(b[lo:min(len(b), i+40)]) }
	return fmt.Sprintf("at byte %d: expected …%s… found …%s…", i, clip(want), clip(got))
}

// layerContents is what verification reads out of one of our layers.
type layerContents struct {
	diffID      string
	files       map[string][]byte // release layer
	rows        []atomicwrite.Written
	sbomFiles   []sbom.File
	metadata    []byte
	contentHash string
	entryBytes  []byte
	entrySHA256 string
	entrySize   int64
	treeDigest  string // the materializer's check of the engine tree
	treeErr     error
}

// readBlobs checks the config and every layer against its descriptor,
// in parallel; the layers from index ours on are also read for their
// contents. It returns the contents by role and the bytes hashed.
func readBlobs(s store.Store, m *v1.Manifest, ours int) (map[string]*layerContents, int64, error) {
	type job struct {
		desc v1.Descriptor
		role string // "" for blobs only hashed
	}
	jobs := []job{{desc: m.Config}}
	for i, l := range m.Layers {
		j := job{desc: l}
		if i >= ours {
			j.role = ourLayers[i-ours]
		}
		jobs = append(jobs, j)
	}
	out := map[string]*layerContents{}
	var mu sync.Mutex
	var total int64
	var firstErr error
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func(j job) {
			defer wg.Done()
			defer func() { <-sem }()
			var c *layerContents
			var err error
			if j.role == "" {
				err = store.CheckBlob(s, j.desc, io.Discard)
			} else {
				c, err = readLayer(s, j.desc, j.role)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					if errors.Is(err, errLayerContent) || layer.IsRejection(err) {
						firstErr = fail(CheckBlobs, err)
					} else {
						firstErr = classify(CheckBlobs, err)
					}
				}
				return
			}
			total += j.desc.Size
			if c != nil {
				out[j.role] = c
			}
		}(j)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, 0, firstErr
	}
	return out, total, nil
}

var errLayerContent = errors.New("unexpected layer content")

// readLayer reads one of our layers: its compressed bytes are copied to
// a temporary file and checked against the descriptor first, and only the
// checked bytes are decompressed (within layer.DecompressLimited's
// limits) and read; a layer that does not match its digest is never
// unpacked.
func readLayer(s store.Store, d v1.Descriptor, role string) (*layerContents, error) {
	f, err := store.Fetch(s, d, "")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &layerContents{files: map[string][]byte{}}
	if err := readLayerContents(f, d, role, c); err != nil {
		return nil, fmt.Errorf("%s layer %s: %w", role, d.Digest, err)
	}
	return c, nil
}

// maxEntrypointSize bounds the entrypoint binary, which is held in memory
// for the SBOM (a static Go binary is tens of MiB).
const maxEntrypointSize = 512 << 20

func readLayerContents(r io.Reader, d v1.Descriptor, role string, c *layerContents) error {
	tarStream, err := layer.DecompressLimited(io.NopCloser(r), string(d.MediaType), d.Size)
	if err != nil {
		return err
	}
	defer tarStream.Close()
	diff := newHasher()
	tee := io.TeeReader(tarStream, diff)
	prefix := map[string]string{"substrate": descriptor.SubstrateDir, "entrypoint": "cacheon/bin", "engine-tree": descriptor.EngineTreeDir, "release": descriptor.ReleaseDir}[role] + "/"
	// The substrate and the engine tree are also written out, so that the
	// content hash and the materializer's own tree check run on them.
	var substrateDir, scratch string
	if role == "substrate" || role == "engine-tree" {
		if scratch, err = os.MkdirTemp("", "cacheon-verify-"+role+"-"); err != nil {
			return err
		}
		defer os.RemoveAll(scratch)
	}
	var treeFiles []atomicwrite.File
	visit := func(name string, exec bool, contents io.Reader) error {
		if !strings.HasPrefix(name, prefix) {
			return fmt.Errorf("%w: %s is outside %s", errLayerContent, name, prefix)
		}
		rel := strings.TrimPrefix(name, prefix)
		switch role {
		case "release":
			b, err := io.ReadAll(io.LimitReader(contents, maxReleaseFile+1))
			if err != nil {
				return err
			}
			if len(b) > maxReleaseFile {
				return fmt.Errorf("%w: %s is larger than %d bytes", errLayerContent, name, maxReleaseFile)
			}
			c.files[name] = b
		case "entrypoint":
			if name != descriptor.EntrypointPath {
				return fmt.Errorf("%w: %s in the entrypoint layer", errLayerContent, name)
			}
			b, err := io.ReadAll(io.LimitReader(contents, maxEntrypointSize+1))
			if err != nil {
				return err
			}
			if len(b) > maxEntrypointSize {
				return fmt.Errorf("%w: %s is larger than %d bytes", errLayerContent, name, maxEntrypointSize)
			}
			c.entryBytes, c.entrySHA256, c.entrySize = b, descriptor.SHA256(b), int64(len(b))
		case "engine-tree", "substrate":
			h := newHasher()
			var w io.Writer = h
			var meta bytes.Buffer
			if role == "engine-tree" && rel == materialize.TreeMetadataName {
				w = io.MultiWriter(h, &limitedBuffer{b: &meta, limit: maxReleaseFile})
			}
			treeFiles = append(treeFiles, atomicwrite.File{Path: rel, From: filepath.Join(substrateDir, filepath.FromSlash(rel))})
			n, err := io.Copy(w, contents)
			if err != nil {
				return err
			}
			if meta.Len() > 0 {
				c.metadata = meta.Bytes()
			}
			c.rows = append(c.rows, atomicwrite.Written{Path: rel, SHA256: h.sha256(), Size: n})
			c.sbomFiles = append(c.sbomFiles, sbom.File{Path: name, SHA1: h.sha1(), SHA256: h.sha256()})
		}
		return nil
	}
	if scratch != "" {
		// The one safe unpacker writes the files under the scratch
		// directory and nowhere else.
		files := filepath.Join(scratch, "files")
		if err := os.Mkdir(files, 0o700); err != nil {
			return err
		}
		substrateDir = filepath.Join(files, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
		err = layer.Unpack(tee, files, visit)
	} else {
		err = layer.Walk(tee, visit)
	}
	if err != nil {
		return err
	}
	// Drain what follows the tar's end marker so the diff ID covers the
	// whole stream.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return err
	}
	c.diffID = "sha256:" + diff.sha256()
	switch role {
	case "substrate":
		if c.contentHash, err = bundle.ContentHash(substrateDir); err != nil {
			return err
		}
	case "engine-tree":
		// A tree in the materializer's published shape, reopened by the
		// materializer: canonical metadata whose inventory is the tree.
		dest := filepath.Join(scratch, "tree")
		if _, err := atomicwrite.WriteTree(dest, treeFiles); err != nil {
			c.treeErr = err
		} else if res, err := materialize.Verify(dest); err != nil {
			c.treeErr = err
		} else {
			c.treeDigest = res.TreeDigest
		}
	}
	sortFiles(c.sbomFiles)
	return nil
}

// limitedBuffer keeps at most limit bytes and then refuses more.
type limitedBuffer struct {
	b     *bytes.Buffer
	limit int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) > l.limit {
		return 0, fmt.Errorf("%w: the engine tree metadata is larger than %d bytes", errLayerContent, l.limit)
	}
	return l.b.Write(p)
}

// ReportJSON renders a report as indented JSON.
func ReportJSON(r *Report) ([]byte, error) { return json.MarshalIndent(r, "", "  ") }
