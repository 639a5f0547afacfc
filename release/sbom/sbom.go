// Package sbom writes and checks the release's SPDX 2.3 software bill of
// materials (JSON).
//
// The document describes the release image and what it is made of: the
// pinned base image, the engine tree and substrate with every file
// (SHA-1 and SHA-256, as SPDX 2.3 requires SHA-1 for files), each
// integrated contribution with its review, the entrypoint binary, and the
// model the engine runs against (a runtime dependency, not shipped). The
// packages built from the repository's own source declare its license
// (ProjectLicense); the others say NOASSERTION rather than guess. It is
// generated from typed inputs only, dated at the source date epoch and
// encoded as canonical JSON, so the same release always gets the same
// bytes.
package sbom

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/release/descriptor"
)

// MediaType of the document.
const MediaType = "application/spdx+json"

// The repository's license and copyright (LICENSE at its root), declared
// for the packages built from the repository's own source: the substrate
// (declared and concluded, for the package and each of its files) and the
// entrypoint (declared; not concluded, as the binary also links Go
// modules under their own licenses). Every other package (the image as a
// whole, which holds the base image; the base image; the engine tree and
// the contributions it is materialized from, whose license files the
// materializer does not ship; the model) is NOASSERTION: their licenses
// are their authors', and nothing in the release states them.
const (
	ProjectLicense   = "Apache-2.0"
	ProjectCopyright = "Copyright 2026 The Cacheon Engine Authors"
)

// File is one file shipped in a package.
type File struct {
	Path   string // path inside the image, slash-separated, no leading slash
	SHA1   string
	SHA256 string
}

// Contribution is one integrated contribution.
type Contribution struct {
	TargetID                   string
	IntegratedSourceTreeDigest string
	IntegratedRefDigest        string
	IntegrationRecordDigest    string
	ReviewCommit               string
	Reviewer                   string
}

// Input is everything the SBOM states.
type Input struct {
	ImageName   string // e.g. "cacheon-engine"
	ImageDigest string // sha256:<hex> of the image manifest
	BaseName    string
	BaseDigest  string // sha256:<hex>
	// BaseDistro and BasePackages are the base's os-release and the OS
	// packages its package database lists: each is a package the base
	// CONTAINS, with its purl.
	BaseDistro     string
	BasePackages   []descriptor.BasePackage
	EngineTree     string // materialized engine tree digest
	EngineFiles    []File
	Substrate      string // substrate content hash
	SubstrateFiles []File
	Entrypoint     File
	// EntrypointGo is the Go build information embedded in the
	// entrypoint binary (nil when it has none): each module it links
	// becomes a package the entrypoint CONTAINS, with its purl.
	EntrypointGo *GoBuild
	// EntrypointSource, when the release records it, is where the
	// entrypoint is built from: repository, commit and Bazel target.
	EntrypointSource *descriptor.EntrypointSource
	Contributions    []Contribution
	ModelContent     string // model content digest
	ModelReceipt     string // model provision receipt digest
	ReleaseDigest    string // release descriptor digest
	Epoch            int64
	Creator          string // "Tool: cacheon-<version>"
}

// GoBuild is what a Go binary's build information says about its
// content.
type GoBuild struct {
	GoVersion  string // go1.26.8
	MainModule string // the main module's path
	Modules    []GoModule
}

// GoModule is one module a Go binary links.
type GoModule struct {
	Path    string
	Version string
	Sum     string // go.sum hash (h1:...), when recorded
}

// entrypointLicenseComment explains the entrypoint's license. The text
// without module information is the one every earlier release's SBOM
// carries, so they regenerate byte for byte.
func entrypointLicenseComment(g *GoBuild) string {
	if g == nil {
		return "built from the repository's own source (Apache-2.0); it links Go modules under their own licenses, not analysed here"
	}
	return "built from the repository's own source (Apache-2.0); it links the Go modules listed as packages it CONTAINS, under their own licenses, not analysed here"
}

// goPURL is the package URL of a Go module (purl-spec's golang type: the
// module path as namespace/name, the version percent-encoded).
// debPURL is the package URL of an OS package of a dpkg-based
// distribution ("pkg:deb/debian/libc6@2.36-9%2Bdeb12u14?arch=amd64&distro=debian-12").
func debPURL(distro string, p descriptor.BasePackage) string {
	ns, _, _ := strings.Cut(distro, "-")
	if ns == "" {
		ns = "debian"
	}
	esc := func(v string) string {
		return strings.NewReplacer("%", "%25", ":", "%3A", "+", "%2B", "?", "%3F", "#", "%23", "&", "%26", " ", "%20").Replace(v)
	}
	u := "pkg:deb/" + esc(ns) + "/" + esc(p.Name) + "@" + esc(p.Version) + "?arch=" + esc(p.Architecture)
	if distro != "" {
		u += "&distro=" + esc(distro)
	}
	return u
}

func goPURL(path, version string) string {
	return "pkg:golang/" + path + "@" + strings.ReplaceAll(version, "+", "%2B")
}

// SPDX 2.3 JSON structures (the subset a release uses).
type checksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type externalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type verificationCode struct {
	Value string `json:"packageVerificationCodeValue"`
}

type pkg struct {
	SPDXID               string            `json:"SPDXID"`
	Name                 string            `json:"name"`
	VersionInfo          string            `json:"versionInfo,omitempty"`
	DownloadLocation     string            `json:"downloadLocation"`
	FilesAnalyzed        bool              `json:"filesAnalyzed"`
	VerificationCode     *verificationCode `json:"packageVerificationCode,omitempty"`
	Checksums            []checksum        `json:"checksums,omitempty"`
	PrimaryPurpose       string            `json:"primaryPackagePurpose,omitempty"`
	SourceInfo           string            `json:"sourceInfo,omitempty"`
	LicenseConcluded     string            `json:"licenseConcluded"`
	LicenseDeclared      string            `json:"licenseDeclared"`
	CopyrightText        string            `json:"copyrightText"`
	ExternalRefs         []externalRef     `json:"externalRefs,omitempty"`
	HasFiles             []string          `json:"hasFiles,omitempty"`
	Supplier             string            `json:"supplier,omitempty"`
	Comment              string            `json:"comment,omitempty"`
	LicenseInfoFromFiles []string          `json:"licenseInfoFromFiles,omitempty"`
	LicenseComments      string            `json:"licenseComments,omitempty"`
}

type file struct {
	SPDXID           string     `json:"SPDXID"`
	FileName         string     `json:"fileName"`
	Checksums        []checksum `json:"checksums"`
	LicenseConcluded string     `json:"licenseConcluded"`
	CopyrightText    string     `json:"copyrightText"`
}

type relationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

type creationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

// Document is an SPDX 2.3 document.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      creationInfo   `json:"creationInfo"`
	DocumentDescribes []string       `json:"documentDescribes"`
	Packages          []pkg          `json:"packages"`
	Files             []file         `json:"files"`
	Relationships     []relationship `json:"relationships"`
}

const (
	noAssertion = "NOASSERTION"
	idImage     = "SPDXRef-Image"
	idBase      = "SPDXRef-BaseImage"
	idTree      = "SPDXRef-EngineTree"
	idSubstrate = "SPDXRef-Substrate"
	idEntry     = "SPDXRef-Entrypoint"
	idModel     = "SPDXRef-Model"
)

// spdxID turns s into an SPDX identifier (letters, digits, "." and "-").
func spdxID(prefix, s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return prefix + b.String()
}

func cacheonRef(kind, value string) externalRef {
	return externalRef{Category: "OTHER", Type: "cacheon-" + kind, Locator: value}
}

// verificationCodeOf is SPDX's package verification code: the SHA-1 of
// the sorted, concatenated SHA-1s of the package's files.
func verificationCodeOf(files []File) string {
	sums := make([]string, len(files))
	for i, f := range files {
		sums[i] = f.SHA1
	}
	sort.Strings(sums)
	h := sha1.Sum([]byte(strings.Join(sums, "")))
	return hex.EncodeToString(h[:])
}

func hexOf(d string) string { return strings.TrimPrefix(d, "sha256:") }

// Generate returns the SBOM of in as canonical JSON.
func Generate(in Input) ([]byte, error) {
	if !strings.HasPrefix(in.ImageDigest, "sha256:") || !strings.HasPrefix(in.BaseDigest, "sha256:") {
		return nil, fmt.Errorf("sbom: image and base digests must be sha256:<hex>")
	}
	doc := Document{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              "cacheon-engine-release-" + in.ImageName,
		DocumentNamespace: "https://cacheon.dev/spdx/engine-release/" + hexOf(in.ImageDigest),
		CreationInfo: creationInfo{
			Created:  time.Unix(in.Epoch, 0).UTC().Format(time.RFC3339),
			Creators: []string{in.Creator},
		},
		DocumentDescribes: []string{idImage},
	}
	add := func(p pkg) {
		if p.DownloadLocation == "" {
			p.DownloadLocation = noAssertion
		}
		for _, f := range []*string{&p.LicenseConcluded, &p.LicenseDeclared, &p.CopyrightText} {
			if *f == "" {
				*f = noAssertion
			}
		}
		doc.Packages = append(doc.Packages, p)
	}
	rel := func(a, typ, b string) {
		doc.Relationships = append(doc.Relationships, relationship{Element: a, Type: typ, Related: b})
	}
	add(pkg{
		SPDXID: idImage, Name: in.ImageName, VersionInfo: in.ImageDigest, PrimaryPurpose: "CONTAINER",
		Checksums:    []checksum{{Algorithm: "SHA256", Value: hexOf(in.ImageDigest)}},
		ExternalRefs: []externalRef{cacheonRef("release-descriptor", in.ReleaseDigest)},
	})
	add(pkg{
		SPDXID: idBase, Name: in.BaseName, VersionInfo: in.BaseDigest, PrimaryPurpose: "CONTAINER",
		Checksums: []checksum{{Algorithm: "SHA256", Value: hexOf(in.BaseDigest)}},
	})
	for _, bp := range in.BasePackages {
		// "+" is the one character of a Debian package name an SPDX id
		// cannot hold; spelled out, "libstdc++6" stays apart from a
		// "libstdc--6".
		id := spdxID("SPDXRef-OSPackage-", strings.ReplaceAll(bp.Name, "+", "plus")+"-"+bp.Architecture)
		p := pkg{
			SPDXID: id, Name: bp.Name, VersionInfo: bp.Version, PrimaryPurpose: "LIBRARY",
			ExternalRefs: []externalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: debPURL(in.BaseDistro, bp)}},
			Comment:      "listed by the base image's package database",
		}
		if bp.Source != "" {
			p.SourceInfo = "built from source package " + bp.Source
		}
		add(p)
		rel(idBase, "CONTAINS", id)
	}
	addTree := func(id, name, digestKind, digest string, files []File, own bool) {
		p := pkg{
			SPDXID: id, Name: name, VersionInfo: digest, FilesAnalyzed: true, PrimaryPurpose: "SOURCE",
			VerificationCode: &verificationCode{Value: verificationCodeOf(files)},
			ExternalRefs:     []externalRef{cacheonRef(digestKind, digest)},
			// SPDX 2.3 requires licenseInfoFromFiles when files are analyzed.
			LicenseInfoFromFiles: []string{noAssertion},
		}
		if own {
			p.LicenseDeclared, p.LicenseConcluded, p.CopyrightText = ProjectLicense, ProjectLicense, ProjectCopyright
			p.LicenseComments = "the repository's own source, under its LICENSE"
		}
		// A file of the repository's own source is under its license like
		// the package; any other file's license is its author's.
		fileLicense, fileCopyright := noAssertion, noAssertion
		if own {
			fileLicense, fileCopyright = ProjectLicense, ProjectCopyright
		}
		for _, f := range files {
			fid := spdxID("SPDXRef-File-", f.Path)
			p.HasFiles = append(p.HasFiles, fid)
			doc.Files = append(doc.Files, file{
				SPDXID: fid, FileName: "./" + f.Path,
				Checksums:        []checksum{{Algorithm: "SHA1", Value: f.SHA1}, {Algorithm: "SHA256", Value: f.SHA256}},
				LicenseConcluded: fileLicense, CopyrightText: fileCopyright,
			})
		}
		add(p)
		rel(idImage, "CONTAINS", id)
	}
	// The engine tree is the contributions' source, materialized: their
	// licenses are their authors' (recorded with each review), not the
	// repository's.
	addTree(idTree, "engine-tree", "materialized-engine-tree", in.EngineTree, in.EngineFiles, false)
	addTree(idSubstrate, "substrate", "bundle-content-hash", in.Substrate, in.SubstrateFiles, true)
	add(pkg{
		SPDXID: idEntry, Name: "cacheon", PrimaryPurpose: "APPLICATION",
		Checksums: []checksum{{Algorithm: "SHA1", Value: in.Entrypoint.SHA1}, {Algorithm: "SHA256", Value: in.Entrypoint.SHA256}},
		Comment:   "static entrypoint at /" + in.Entrypoint.Path + ": verifies the signed release, then serves",
		// Declared: the repository's source is Apache-2.0. Not concluded:
		// the binary links Go modules under their own licenses (listed
		// below when its build information names them).
		LicenseDeclared: ProjectLicense, CopyrightText: ProjectCopyright,
		LicenseComments: entrypointLicenseComment(in.EntrypointGo),
	})
	rel(idImage, "CONTAINS", idEntry)
	if src := in.EntrypointSource; src != nil {
		entry := &doc.Packages[len(doc.Packages)-1]
		entry.SourceInfo = fmt.Sprintf("built from %s at git commit %s by bazel build %s", src.Repository, src.Commit, src.BazelTarget)
		entry.ExternalRefs = append(entry.ExternalRefs, cacheonRef("git-commit", src.Commit))
	}
	if g := in.EntrypointGo; g != nil {
		// What `go version -m` reads from the binary: the standard
		// library of the toolchain that linked it, and every module.
		if g.GoVersion != "" {
			add(pkg{
				SPDXID: "SPDXRef-GoStdlib", Name: "stdlib", VersionInfo: g.GoVersion, PrimaryPurpose: "LIBRARY",
				ExternalRefs:    []externalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: goPURL("stdlib", strings.TrimPrefix(g.GoVersion, "go"))}},
				Comment:         "the Go standard library linked into the entrypoint",
				LicenseDeclared: "BSD-3-Clause",
			})
			rel(idEntry, "CONTAINS", "SPDXRef-GoStdlib")
		}
		for _, m := range g.Modules {
			id := spdxID("SPDXRef-GoModule-", m.Path+"-"+m.Version)
			p := pkg{
				SPDXID: id, Name: m.Path, VersionInfo: m.Version, PrimaryPurpose: "LIBRARY",
				ExternalRefs: []externalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: goPURL(m.Path, m.Version)}},
				Comment:      "Go module linked into the entrypoint",
			}
			if m.Sum != "" {
				p.Comment += "; go.sum " + m.Sum
			}
			add(p)
			rel(idEntry, "CONTAINS", id)
		}
	}
	rel(idImage, "DESCENDANT_OF", idBase)
	for _, c := range in.Contributions {
		id := spdxID("SPDXRef-Contribution-", c.TargetID)
		add(pkg{
			SPDXID: id, Name: c.TargetID, VersionInfo: c.IntegratedSourceTreeDigest, PrimaryPurpose: "SOURCE",
			SourceInfo: fmt.Sprintf("integrated source reviewed by %s at git commit %s", c.Reviewer, c.ReviewCommit),
			ExternalRefs: []externalRef{
				cacheonRef("integrated-source-tree", c.IntegratedSourceTreeDigest),
				cacheonRef("integrated-contribution", c.IntegratedRefDigest),
				cacheonRef("integration-review", c.IntegrationRecordDigest),
				cacheonRef("git-commit", c.ReviewCommit),
			},
		})
		rel(idTree, "GENERATED_FROM", id)
	}
	add(pkg{
		SPDXID: idModel, Name: "model", VersionInfo: in.ModelContent, PrimaryPurpose: "OTHER",
		Comment:      "sealed model tree mounted at run time; not shipped in the image",
		ExternalRefs: []externalRef{cacheonRef("model-content", in.ModelContent), cacheonRef("model-provision-receipt", in.ModelReceipt)},
	})
	rel(idModel, "RUNTIME_DEPENDENCY_OF", idImage)
	rel("SPDXRef-DOCUMENT", "DESCRIBES", idImage)
	sort.SliceStable(doc.Files, func(i, j int) bool { return doc.Files[i].FileName < doc.Files[j].FileName })
	return canonjson.Marshal(doc)
}

// Parse reads an SBOM and checks it is an SPDX 2.3 JSON document with the
// fields a release SBOM always has.
func Parse(b []byte) (*Document, error) {
	var d Document
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("parse SPDX document: %w", err)
	}
	if d.SPDXVersion != "SPDX-2.3" || d.SPDXID != "SPDXRef-DOCUMENT" || d.DataLicense != "CC0-1.0" {
		return nil, fmt.Errorf("not an SPDX 2.3 document (spdxVersion %q, SPDXID %q, dataLicense %q)", d.SPDXVersion, d.SPDXID, d.DataLicense)
	}
	if d.DocumentNamespace == "" || d.Name == "" || len(d.CreationInfo.Creators) == 0 || d.CreationInfo.Created == "" {
		return nil, fmt.Errorf("SPDX document lacks name, documentNamespace or creationInfo")
	}
	ids := map[string]bool{"SPDXRef-DOCUMENT": true}
	for _, p := range d.Packages {
		if p.SPDXID == "" || p.Name == "" || p.DownloadLocation == "" {
			return nil, fmt.Errorf("SPDX package %q lacks SPDXID, name or downloadLocation", p.SPDXID)
		}
		ids[p.SPDXID] = true
	}
	for _, f := range d.Files {
		ids[f.SPDXID] = true
	}
	for _, r := range d.Relationships {
		if !ids[r.Element] || !ids[r.Related] {
			return nil, fmt.Errorf("SPDX relationship %s %s %s names an element the document does not define", r.Element, r.Type, r.Related)
		}
	}
	return &d, nil
}

// Equal reports whether two SBOM documents are the same bytes once both
// are canonical, and if not, the first differing top-level field.
func Equal(want, got []byte) (bool, string) {
	if string(want) == string(got) {
		return true, ""
	}
	var a, b map[string]json.RawMessage
	if json.Unmarshal(want, &a) != nil || json.Unmarshal(got, &b) != nil {
		return false, "document"
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if string(a[k]) != string(b[k]) {
			return false, k
		}
	}
	return false, "encoding"
}
