// Package descriptor defines the release descriptor: the JSON document
// shipped inside a release image (at /cacheon/release/release.json) that
// binds everything the image serves to its identities: the release stack,
// the engine tree, the integration records, the substrate, the model the
// engine must be given, the base image, the entrypoint binary, the serve
// command and the toolchain that built it.
//
// The signed provenance records the descriptor's SHA-256, so whoever holds
// a verified signature can trust every digest in it, and the fail-closed
// entrypoint checks the files it is about to run against them.
package descriptor

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// Wire identifiers.
const (
	Type          = "engine_release_image"
	SchemaVersion = 1
	Domain        = string(identity.DomainEngineReleaseDescriptor)
)

// Paths inside a release image. They are fixed so that a verifier and the
// entrypoint find everything without trusting a path from the image.
const (
	Root            = "cacheon"
	EngineTreeDir   = "cacheon/engine-tree"
	SubstrateDir    = "cacheon/substrate"
	ReleaseDir      = "cacheon/release"
	DescriptorPath  = "cacheon/release/release.json"
	ManifestPath    = "cacheon/release/release-manifest.json"
	ReviewDir       = "cacheon/release/reviews"
	ModelReceipt    = "cacheon/release/model-provision.json"
	EntrypointPath  = "cacheon/bin/cacheon"
	DefaultModel    = "/cacheon/model"
	DefaultTrustDir = "/cacheon/trust"
)

// ReviewPath is where the record with digest d lives in the image.
func ReviewPath(recordDigest string) string { return ReviewDir + "/" + recordDigest + ".json" }

// Integration is one integrated contribution of the release, with the
// review that admitted it.
type Integration struct {
	TargetID                   string `json:"target_id"`
	IntegratedRefDigest        string `json:"integrated_ref_digest"`
	IntegrationRecordDigest    string `json:"integration_record_digest"`
	IntegratedSourceTreeDigest string `json:"integrated_source_tree_digest"`
	SelectedPayloadDigest      string `json:"selected_payload_digest"`
	ReviewCommit               string `json:"review_commit"`
	Reviewer                   string `json:"reviewer"`
	RecordSHA256               string `json:"record_sha256"` // of the record file shipped in the image
}

// Model is the sealed model the engine must be started with; it is
// mounted at run time, never shipped in the image.
type Model struct {
	ContentDigest string `json:"content_digest"`
	ReceiptDigest string `json:"receipt_digest"`
	ReceiptSHA256 string `json:"receipt_sha256"`
}

// BaseImage is the pinned base the release layers sit on.
type BaseImage struct {
	Name     string   `json:"name"`
	Digest   string   `json:"digest"` // sha256:<hex> of its manifest
	Platform string   `json:"platform"`
	Layers   []string `json:"layers"` // its layer digests, in order
	// Distro is the base's os-release ID and VERSION_ID ("debian-12"),
	// when it has one.
	Distro string `json:"distro,omitempty"`
	// Packages are the OS packages the base's package database lists
	// (dpkg's status file and status.d records), as the build read them
	// from the base's layers; a rebuild reads them again. Empty for a
	// base without one, such as the project's empty base.
	Packages []BasePackage `json:"packages,omitempty"`
}

// BasePackage is one OS package of the base image.
type BasePackage struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	Architecture string `json:"architecture"`
	// Source is the source package when it differs from Name
	// ("glibc", or "glibc (2.36-9)" when its version differs too).
	Source string `json:"source,omitempty"`
}

// Entrypoint is the static cacheon binary that verifies and then serves.
type Entrypoint struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Source, when recorded, says what the binary is built from, so a
	// consumer can rebuild it (release rebuild --source-repo).
	Source *EntrypointSource `json:"source,omitempty"`
}

// EntrypointSource is the entrypoint's build recipe: the repository's
// tools/bootstrap.sh build, then `bazel build <BazelTarget>` (with the
// repository's own .bazelrc), in a clone of Repository at Commit.
type EntrypointSource struct {
	Repository  string `json:"repository"`   // where to clone it from: a URL (ClassifyRepository), or UnpublishedRepository
	Commit      string `json:"commit"`       // full git commit id
	BazelTarget string `json:"bazel_target"` // e.g. //tools/cmd/cacheon-engine
}

var (
	gitCommitRE   = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	bazelTargetRE = regexp.MustCompile(`^//[A-Za-z0-9_/.-]*:?[A-Za-z0-9_.-]+$`)
)

// Validate checks the recipe's fields.
func (s *EntrypointSource) Validate() error {
	if s.Repository == "" || strings.ContainsAny(s.Repository, "\x00\n") {
		return fmt.Errorf("entrypoint.source.repository %q: want a repository URL or path", s.Repository)
	}
	if !gitCommitRE.MatchString(s.Commit) {
		return fmt.Errorf("entrypoint.source.commit %q: want a full git commit id (40 or 64 hex)", s.Commit)
	}
	if !bazelTargetRE.MatchString(s.BazelTarget) {
		return fmt.Errorf("entrypoint.source.bazel_target %q: want a label of this repository, e.g. //tools/cmd/cacheon-engine", s.BazelTarget)
	}
	return nil
}

// Serve is what the entrypoint runs once the release verified. The
// command may use the placeholders {engine_tree}, {substrate} and {model},
// replaced by absolute paths.
type Serve struct {
	Command     []string `json:"command"`
	Environment []string `json:"environment"` // sorted KEY=VALUE
	ModelMount  string   `json:"model_mount"`
}

// Toolchain is what makes the layer bytes reproducible: the same inputs
// give the same digests only with the same compressor implementation.
type Toolchain struct {
	GoVersion        string `json:"go_version"`
	Compression      string `json:"compression"`
	CompressionLevel int    `json:"compression_level"`
	SourceDateEpoch  int64  `json:"source_date_epoch"`
}

// Descriptor is release.json.
type Descriptor struct {
	Type                  string        `json:"type"`
	SchemaVersion         int           `json:"schema_version"`
	ReleaseManifestDigest string        `json:"release_manifest_digest"`
	EngineTreeDigest      string        `json:"engine_tree_digest"`
	CatalogDigest         string        `json:"catalog_digest"`
	RuntimeDigest         string        `json:"runtime_digest"`
	BaseEngineDigest      string        `json:"base_engine_digest"`
	Integrations          []Integration `json:"integrations"`
	SubstrateDigest       string        `json:"substrate_digest"` // bundle content hash of the substrate tree
	Model                 Model         `json:"model"`
	BaseImage             BaseImage     `json:"base_image"`
	Entrypoint            Entrypoint    `json:"entrypoint"`
	Serve                 Serve         `json:"serve"`
	Toolchain             Toolchain     `json:"toolchain"`
}

var (
	envKey     = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	sha256Pref = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// Variables the entrypoint sets itself or that would let the
	// environment redirect what code runs.
	reservedEnv       = []string{"PATH", "HOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT"}
	reservedEnvPrefix = []string{"CACHEON_RELEASE_"}
	// A release serves without any chain: no variable configures a
	// wallet, a miner or a chain client.
	chainEnvPrefix = []string{"BT_", "BITTENSOR", "WALLET", "MINER", "SUBTENSOR", "HOTKEY", "COLDKEY"}
)

// Validate checks the descriptor's shape: every digest, the sorting of
// lists, the serve command and environment.
func (d *Descriptor) Validate() error {
	if d.Type != Type {
		return fmt.Errorf("type %q: want %q", d.Type, Type)
	}
	if d.SchemaVersion != SchemaVersion {
		return fmt.Errorf("schema_version %d: want %d", d.SchemaVersion, SchemaVersion)
	}
	for _, f := range []struct{ name, v string }{
		{"release_manifest_digest", d.ReleaseManifestDigest},
		{"engine_tree_digest", d.EngineTreeDigest},
		{"catalog_digest", d.CatalogDigest},
		{"runtime_digest", d.RuntimeDigest},
		{"base_engine_digest", d.BaseEngineDigest},
		{"substrate_digest", d.SubstrateDigest},
		{"model.content_digest", d.Model.ContentDigest},
		{"model.receipt_digest", d.Model.ReceiptDigest},
		{"model.receipt_sha256", d.Model.ReceiptSHA256},
		{"entrypoint.sha256", d.Entrypoint.SHA256},
	} {
		if err := identity.CheckDigest(f.name, f.v, true); err != nil {
			return err
		}
	}
	for i, in := range d.Integrations {
		for _, f := range []struct{ name, v string }{
			{"integrated_ref_digest", in.IntegratedRefDigest},
			{"integration_record_digest", in.IntegrationRecordDigest},
			{"integrated_source_tree_digest", in.IntegratedSourceTreeDigest},
			{"selected_payload_digest", in.SelectedPayloadDigest},
			{"record_sha256", in.RecordSHA256},
		} {
			if err := identity.CheckDigest(fmt.Sprintf("integrations[%d].%s", i, f.name), f.v, false); err != nil {
				return err
			}
		}
		if i > 0 && d.Integrations[i-1].TargetID >= in.TargetID {
			return fmt.Errorf("integrations[%d]: target %q is not after %q (want sorted, unique)", i, in.TargetID, d.Integrations[i-1].TargetID)
		}
	}
	if !sha256Pref.MatchString(d.BaseImage.Digest) {
		return fmt.Errorf("base_image.digest %q: want sha256:<64 hex>", d.BaseImage.Digest)
	}
	for i, l := range d.BaseImage.Layers {
		if !sha256Pref.MatchString(l) {
			return fmt.Errorf("base_image.layers[%d] %q: want sha256:<64 hex>", i, l)
		}
	}
	if d.Entrypoint.Source != nil {
		if err := d.Entrypoint.Source.Validate(); err != nil {
			return err
		}
	}
	if len(d.Serve.Command) == 0 || d.Serve.Command[0] == "" {
		return fmt.Errorf("serve.command: empty")
	}
	if !strings.HasPrefix(d.Serve.ModelMount, "/") {
		return fmt.Errorf("serve.model_mount %q: want an absolute path", d.Serve.ModelMount)
	}
	if err := CheckEnvironment(d.Serve.Environment); err != nil {
		return fmt.Errorf("serve.environment: %w", err)
	}
	return nil
}

// CheckEnvironment checks a KEY=VALUE list: sorted, unique keys, no
// variable the entrypoint reserves.
func CheckEnvironment(env []string) error {
	prev := ""
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !envKey.MatchString(k) {
			return fmt.Errorf("%q: want KEY=VALUE with KEY matching [A-Z][A-Z0-9_]*", kv)
		}
		for _, r := range reservedEnv {
			if k == r {
				return fmt.Errorf("%s is set by the entrypoint and may not be part of a release", k)
			}
		}
		for _, p := range reservedEnvPrefix {
			if strings.HasPrefix(k, p) {
				return fmt.Errorf("%s: the %s prefix is reserved for the entrypoint", k, p)
			}
		}
		for _, p := range chainEnvPrefix {
			if strings.HasPrefix(k, p) {
				return fmt.Errorf("%s: a release is chain-independent; no %s* variable configures a chain, wallet or miner", k, p)
			}
		}
		if k <= prev {
			return fmt.Errorf("%s: keys must be sorted and unique", k)
		}
		prev = k
	}
	return nil
}

// SortIntegrations orders integrations by target.
func (d *Descriptor) SortIntegrations() {
	sort.Slice(d.Integrations, func(i, j int) bool { return d.Integrations[i].TargetID < d.Integrations[j].TargetID })
}

// Digest is H(cacheon.engine-release.descriptor, d).
func (d *Descriptor) Digest() (string, error) {
	id, err := identity.H(identity.DomainEngineReleaseDescriptor, d)
	return id.String(), err
}

// Marshal returns the file bytes: canonical JSON and a newline.
func (d *Descriptor) Marshal() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("release descriptor: %w", err)
	}
	b, err := canonjson.Marshal(d)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Parse reads release.json: strict (unknown fields rejected), validated
// and in canonical form, so a file that differs in any byte from what the
// builder wrote is refused.
func Parse(b []byte) (*Descriptor, error) {
	var d Descriptor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("parse release descriptor: %w", err)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("release descriptor: %w", err)
	}
	again, err := d.Marshal()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, b) {
		return nil, fmt.Errorf("release descriptor is not in canonical form")
	}
	return &d, nil
}

// SHA256 returns the lowercase hex SHA-256 of b.
func SHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
