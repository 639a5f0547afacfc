// Package rebuild rebuilds a published release from what was published
// and compares the result with it, digest for digest.
//
// The release is verified first (release/verify). Its inputs then come
// from the release itself: the release stack, review records, model
// receipt, substrate and entrypoint from the image's release layers (the
// files as the bytes verification read and checked, the two trees read
// into memory from their checked layers, never unpacked to disk), the
// pinned base image from the
// same layout or repository. With the reviewed
// source (a git repository holding the review commits) the engine tree is
// re-materialized from the release stack instead of taken from the image.
// The build then runs again with the recorded parameters, and every
// digest must come out equal; on a mismatch the first differing layer and
// file is reported. The layer bytes depend on the compressor, so the Go
// toolchain the release names is part of its identity: a rebuild with
// another toolchain is refused unless explicitly allowed.
package rebuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/layer"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/stack"
)

// Options configure a rebuild.
type Options struct {
	Policy *key.Policy
	Now    time.Time
	// Work is a scratch directory; empty means a temporary one removed
	// afterwards.
	Work string
	// SourceRepo is a git repository holding the review commits; when
	// set, the engine tree is re-materialized from the reviewed source.
	SourceRepo string
	// SourcePaths maps a target to its directory in SourceRepo; targets
	// not listed are searched for by their integrated source tree digest.
	SourcePaths map[string]string
	// Catalog is the catalog in force for re-materialization (default:
	// the built-in catalog); it must be the one the release stack embeds.
	Catalog *catalog.Catalog
	// AllowToolchainMismatch rebuilds with another Go toolchain than the
	// release's; layer digests will then usually differ.
	AllowToolchainMismatch bool
	// EntrypointFromImage takes the entrypoint binary from the image
	// instead of rebuilding it from source, even when the release records
	// its source and SourceRepo is given (a rebuild from source runs the
	// repository's bootstrap and Bazel).
	EntrypointFromImage bool
	// RunSourceBuild consents to running the source repository's own
	// build steps (its tools/bootstrap.sh, then bazel build) when the
	// release records its entrypoint's source and SourceRepo is given;
	// without it such a rebuild is refused once the release is verified,
	// before any of it is rebuilt (the command line's RunSourceBuildFlag).
	// The steps run with an allow-listed environment and SourceBuildEnv,
	// nothing else of the caller's (see sourceBuildEnv).
	RunSourceBuild bool
	// SourceBuildEnv are NAME=VALUE variables the caller hands to the
	// source's build steps on purpose, beside PATH, HOME, LANG and TZ
	// (which they may override).
	SourceBuildEnv []string
	// BuildUser runs the source's build steps as this user rather than
	// the caller, who must then be root: the clone, the steps' HOME and
	// their Bazel output base are handed to it, and every directory above
	// the work directory must let it search. nil runs them as the caller.
	BuildUser *BuildUser
	Progress  func(string)
}

// BuildUser is the numeric user and group the source's build steps run
// as (the command line's SourceBuildUserFlag, UID:GID).
type BuildUser struct{ UID, GID uint32 }

// SourceBuildUserFlag names the user the source's build steps run as.
const SourceBuildUserFlag = "--source-build-user"

// ParseBuildUser reads UID:GID, both numeric and neither root's: a build
// step run as root could undo every other bound.
func ParseBuildUser(s string) (*BuildUser, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, uerr := strconv.ParseUint(u, 10, 32)
	gid, gerr := strconv.ParseUint(g, 10, 32)
	switch {
	case !ok || uerr != nil || gerr != nil:
		return nil, reject.Errorf("%s %q: want UID:GID, both numbers", SourceBuildUserFlag, s)
	case uid == 0 || gid == 0:
		return nil, reject.Errorf("%s %q: the build steps must not run as root's user or group", SourceBuildUserFlag, s)
	}
	return &BuildUser{UID: uint32(uid), GID: uint32(gid)}, nil
}

// Result is the outcome of a rebuild.
type Result struct {
	FormatVersion            int    `json:"format_version"`
	Location                 string `json:"location"`
	ImageDigest              string `json:"image_digest"`
	RebuiltDigest            string `json:"rebuilt_digest"`
	Match                    bool   `json:"match"`
	EngineTreeDigest         string `json:"engine_tree_digest"`
	Rematerialized           bool   `json:"rematerialized"`
	RematerializedTreeDigest string `json:"rematerialized_tree_digest"`
	// EntrypointRebuilt says the entrypoint was rebuilt from source and
	// matched; EntrypointSource why it was taken from the image otherwise.
	EntrypointRebuilt bool   `json:"entrypoint_rebuilt"`
	EntrypointSource  string `json:"entrypoint_source"`
	SBOMMatch         bool   `json:"sbom_match"`
	ProvenanceMatch   bool   `json:"provenance_match"`
	ReleaseGoVersion  string `json:"release_go_version"`
	RebuildGoVersion  string `json:"rebuild_go_version"`
	FirstDifference   string `json:"first_difference"`
}

// Mismatch is a rebuild whose output differs from the release.
type Mismatch struct{ What string }

func (m *Mismatch) Error() string { return "rebuild does not reproduce the release: " + m.What }

// ErrToolchain is returned when the toolchain differs and that is not
// allowed.
var ErrToolchain = errors.New("toolchain differs from the release's")

// Run verifies the release in s, rebuilds it and compares.
func Run(s store.Store, opts Options) (*Result, error) {
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}
	progress("verifying the published release")
	rel, err := verify.Run(s, verify.Options{Policy: opts.Policy, Now: opts.Now})
	if err != nil {
		return nil, err
	}
	d := rel.Descriptor
	res := &Result{
		FormatVersion: 1, Location: s.Location(), ImageDigest: rel.Image.Digest.String(),
		EngineTreeDigest: d.EngineTreeDigest, ReleaseGoVersion: d.Toolchain.GoVersion, RebuildGoVersion: runtime.Version(),
	}
	if d.Toolchain.GoVersion != runtime.Version() && !opts.AllowToolchainMismatch {
		return res, fmt.Errorf("%w: the release was built with %s, this binary with %s; the gzip bytes of its layers depend on the toolchain, so rebuild with a cacheon built by %s (GOTOOLCHAIN=%s), or allow the mismatch to compare layer contents only",
			ErrToolchain, d.Toolchain.GoVersion, runtime.Version(), d.Toolchain.GoVersion, d.Toolchain.GoVersion)
	}
	// Whether the source's own build steps would run is known from the
	// descriptor: without consent, refuse before any work.
	buildsSource := d.Entrypoint.Source != nil && opts.SourceRepo != "" && !opts.EntrypointFromImage
	if buildsSource && !opts.RunSourceBuild {
		return res, sourceBuildRefusal(d.Entrypoint.Source)
	}
	for _, kv := range opts.SourceBuildEnv {
		if _, _, err := parseEnvPair(kv); err != nil {
			return res, err
		}
	}
	user := opts.BuildUser
	if !buildsSource {
		user = nil
	}
	if user != nil {
		if err := switchable(); err != nil {
			return res, reject.Errorf("%s %d:%d: %v", SourceBuildUserFlag, user.UID, user.GID, err)
		}
	}
	var made []string // the directories this run creates around the work
	work := opts.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "cacheon-rebuild-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
		made = append(made, work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	work, err = os.MkdirTemp(work, "rebuild-")
	if err != nil {
		return nil, err
	}
	made = append(made, work)
	if user != nil {
		// Searchable, not listable, by the build user: it needs to reach
		// its own directories inside, nothing more.
		for _, d := range made {
			if err := os.Chmod(d, 0o711); err != nil {
				return nil, err
			}
		}
		blocked, err := searchable(user, work)
		if err != nil {
			return nil, err
		}
		if blocked != "" {
			return res, reject.Errorf("%s %d:%d: uid %d cannot search %s, above the work directory %s; choose a --work it can reach",
				SourceBuildUserFlag, user.UID, user.GID, user.UID, blocked, work)
		}
	}

	progress("reading the published inputs")
	img, err := remote.Image(s, rel.Image.Digest)
	if err != nil {
		return nil, err
	}
	nbase := len(d.BaseImage.Layers)
	// The release layers are, in image order, the substrate, entrypoint,
	// engine-tree and release layers (verification checked there are
	// exactly these four). The two trees are read into memory from copies
	// checked against their descriptors; the release stack, the review
	// records, the model receipt and the entrypoint are the bytes the
	// verification read and checked. Nothing is unpacked to disk to be
	// read back.
	ours := rel.Manifest.Layers[nbase:]
	substrate, err := readChecked(s, ours[0], descriptor.SubstrateDir, work)
	if err != nil {
		return nil, fmt.Errorf("read the substrate layer: %w", err)
	}
	publishedTree, err := readChecked(s, ours[2], descriptor.EngineTreeDir, work)
	if err != nil {
		return nil, fmt.Errorf("read the engine-tree layer: %w", err)
	}
	in := build.Inputs{
		BaseDigest:   d.BaseImage.Digest,
		BaseName:     d.BaseImage.Name,
		Platform:     d.BaseImage.Platform,
		Name:         rel.Report.Image,
		ServeCommand: d.Serve.Command,
		ServeEnv:     d.Serve.Environment,
		ModelMount:   d.Serve.ModelMount,
		// Recorded as the release recorded it, whether or not the
		// binary is rebuilt below.
		EntrypointSource: d.Entrypoint.Source,
		Epoch:            d.Toolchain.SourceDateEpoch,
		Compression:      layer.Compression(d.Toolchain.Compression),
		Level:            d.Toolchain.CompressionLevel,
		Out:              filepath.Join(work, "rebuilt"),
		Files: &build.Files{
			ReleaseManifest: rel.Files[descriptor.ManifestPath],
			ModelReceipt:    rel.Files[descriptor.ModelReceipt],
			Entrypoint:      rel.Entrypoint,
			Substrate:       substrate,
			EngineTree:      publishedTree,
		},
	}
	// In the order of their paths in the image, as the files were read
	// before.
	var reviewPaths []string
	for _, r := range rel.Records {
		dg, _ := r.Digest()
		reviewPaths = append(reviewPaths, descriptor.ReviewPath(dg))
	}
	sort.Strings(reviewPaths)
	for _, p := range reviewPaths {
		in.Files.Reviews = append(in.Files.Reviews, rel.Files[p])
	}
	if in.Base, err = openBase(s, d); err != nil {
		return nil, err
	}

	if opts.SourceRepo != "" {
		progress("re-materializing the engine tree from the reviewed source")
		m, err := stack.ParseManifest(rel.Files[descriptor.ManifestPath])
		if err != nil {
			return nil, err
		}
		tree := filepath.Join(work, "engine-tree")
		digest, err := rematerialize(m, rel.Records, opts, work, tree)
		if err != nil {
			return nil, err
		}
		res.Rematerialized, res.RematerializedTreeDigest = true, digest
		if digest != d.EngineTreeDigest {
			res.FirstDifference = firstTreeDifference(publishedTree, tree)
			return res, &Mismatch{What: fmt.Sprintf("the re-materialized engine tree is %s, the release's is %s; first differing file: %s", digest, d.EngineTreeDigest, res.FirstDifference)}
		}
		// The build takes the re-materialized tree, from disk.
		in.EngineTree, in.Files.EngineTree = tree, nil
	}

	res.EntrypointSource = "taken from the image (the release records no source)"
	switch src := d.Entrypoint.Source; {
	case src == nil:
	case opts.SourceRepo == "":
		res.EntrypointSource = "taken from the image (no --source-repo to rebuild " + src.Commit + " from; " + fetchHint(src) + ")"
	case opts.EntrypointFromImage:
		res.EntrypointSource = "taken from the image (--entrypoint-from-image)"
	default:
		env, err := sourceBuildEnv(work, opts.SourceBuildEnv)
		if err != nil {
			return res, err
		}
		bin, err := buildEntrypoint(src, opts.SourceRepo, work, env, user, progress)
		if err != nil {
			return res, fmt.Errorf("rebuild the entrypoint from source: %w", err)
		}
		if got := descriptor.SHA256(bin); got != d.Entrypoint.SHA256 {
			res.FirstDifference = descriptor.EntrypointPath
			return res, entrypointMismatch(src, d.Entrypoint.SHA256, got)
		}
		in.Files.Entrypoint = bin
		res.EntrypointRebuilt = true
		res.EntrypointSource = "rebuilt from source at " + src.Commit + " (bazel build " + src.BazelTarget + ")"
	}

	progress("rebuilding the image")
	built, err := build.Build(in, nil)
	if err != nil {
		return nil, fmt.Errorf("rebuild: %w", err)
	}
	res.RebuiltDigest = built.ImageDigest
	res.SBOMMatch = built.SBOMDigest == "sha256:"+descriptor.SHA256(rel.SBOM)
	res.ProvenanceMatch = built.StatementSHA256 == descriptor.SHA256(rel.Statement)
	if built.ImageDigest != res.ImageDigest {
		res.FirstDifference = firstImageDifference(img, in.Out, built.ImageDigest, d)
		return res, &Mismatch{What: fmt.Sprintf("rebuilt image %s, published %s; %s", built.ImageDigest, res.ImageDigest, res.FirstDifference)}
	}
	if !res.SBOMMatch {
		return res, &Mismatch{What: "the rebuilt SBOM differs from the published one"}
	}
	if !res.ProvenanceMatch {
		// The image and SBOM reproduce, but the signed statement about
		// them does not: its parameters or builder record differ.
		return res, &Mismatch{What: "the rebuilt provenance statement differs from the signed one"}
	}
	res.Match = true
	return res, nil
}

// readChecked reads the files of one release layer below prefix into
// memory, from a copy checked against its descriptor (store.Fetch) and
// through the one layer reader that refuses links, special files, unsafe
// and duplicate names: the layers were verified moments ago, but what is
// read is what was hashed, not what the store serves the second time. A
// file outside prefix is refused.
func readChecked(s store.Store, d v1.Descriptor, prefix, tmp string) ([]build.HeldFile, error) {
	f, err := store.Fetch(s, d, tmp)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rc, err := layer.DecompressLimited(f, string(d.MediaType), d.Size)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var files []build.HeldFile
	err = layer.Walk(rc, func(name string, executable bool, contents io.Reader) error {
		rel, ok := strings.CutPrefix(name, prefix+"/")
		if !ok {
			return fmt.Errorf("%s: outside %s/", name, prefix)
		}
		data, err := io.ReadAll(contents)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		files = append(files, build.HeldFile{Path: rel, Data: data, Executable: executable})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", d.Digest, err)
	}
	return files, nil
}

// openBase finds the pinned base: in the release's layout or repository,
// or, for the project's scratch base, regenerated.
func openBase(s store.Store, d *descriptor.Descriptor) (v1.Image, error) {
	pin, err := v1.NewHash(d.BaseImage.Digest)
	if err != nil {
		return nil, err
	}
	if base, err := remote.Image(s, pin); err == nil {
		if got, err := base.Digest(); err == nil && got == pin {
			return base, nil
		}
	}
	p, err := image.ParsePlatform(d.BaseImage.Platform)
	if err != nil {
		return nil, err
	}
	scratch, err := image.Scratch(p)
	if err != nil {
		return nil, err
	}
	if got, _ := scratch.Digest(); got == pin {
		return scratch, nil
	}
	return nil, fmt.Errorf("the base image %s (%s) is not in %s; pull it by digest into the release's repository or layout", d.BaseImage.Digest, d.BaseImage.Name, s.Location())
}

func rematerialize(m *stack.EngineReleaseManifest, records []*review.Record, opts Options, work, dest string) (string, error) {
	cat := opts.Catalog
	if cat == nil {
		var err error
		if cat, err = catalog.Default(); err != nil {
			return "", err
		}
	}
	byTarget := map[string]*review.Record{}
	var recs []contribution.IntegrationRecord
	for _, r := range records {
		byTarget[r.TargetID] = r
		recs = append(recs, r.IntegrationRecord())
	}
	resolve := func(target string, _ stack.Ref) (string, error) {
		r := byTarget[target]
		if r == nil {
			return "", fmt.Errorf("no review record for %s", target)
		}
		path, ok := opts.SourcePaths[target]
		if !ok {
			var err error
			if path, err = review.FindSource(opts.SourceRepo, r.ReviewCommit, r.IntegratedSourceTreeDigest); err != nil {
				return "", err
			}
		}
		dir := filepath.Join(work, "sources", strings.ReplaceAll(target, "/", "_"))
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return "", err
		}
		if err := review.Checkout(opts.SourceRepo, r.ReviewCommit, path, dir); err != nil {
			return "", err
		}
		return dir, nil
	}
	res, err := materialize.Materialize(m, resolve, dest, materialize.Options{
		Catalog: cat, Records: recs, Payload: contribution.PayloadOptions{Closure: contribution.PythonClosure},
	})
	if err != nil {
		return "", err
	}
	return res.TreeDigest.String(), nil
}

// firstTreeDifference names the first path (in path order) whose bytes
// differ between two trees, or that only one has.
func firstTreeDifference(published []build.HeldFile, rebuilt string) string {
	ha, hb := map[string]string{}, hashTree(rebuilt)
	for _, f := range published {
		ha[f.Path] = descriptor.SHA256(f.Data)
	}
	var paths []string
	for p := range ha {
		paths = append(paths, p)
	}
	for p := range hb {
		if _, ok := ha[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		switch {
		case ha[p] == "":
			return p + " (only in the rebuild)"
		case hb[p] == "":
			return p + " (only in the release)"
		case ha[p] != hb[p]:
			return fmt.Sprintf("%s (release sha256:%s, rebuild sha256:%s)", p, ha[p], hb[p])
		}
	}
	return "none"
}

func hashTree(root string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = descriptor.SHA256(b)
		return nil
	})
	return out
}

// firstImageDifference compares the published image with the rebuilt
// one layer by layer and names the first differing file.
func firstImageDifference(published v1.Image, rebuiltLayout, rebuiltDigest string, d *descriptor.Descriptor) string {
	lp, err := layout.FromPath(rebuiltLayout)
	if err != nil {
		return err.Error()
	}
	h, _ := v1.NewHash(rebuiltDigest)
	rebuilt, err := lp.Image(h)
	if err != nil {
		return err.Error()
	}
	pl, err1 := published.Layers()
	rl, err2 := rebuilt.Layers()
	if err1 != nil || err2 != nil {
		return "cannot list layers"
	}
	if len(pl) != len(rl) {
		return fmt.Sprintf("the release has %d layers, the rebuild %d", len(pl), len(rl))
	}
	for i := range pl {
		pd, _ := pl[i].Digest()
		rd, _ := rl[i].Digest()
		if pd == rd {
			continue
		}
		pdiff, _ := pl[i].DiffID()
		rdiff, _ := rl[i].DiffID()
		if pdiff == rdiff {
			return fmt.Sprintf("layer %d has the same files but other compressed bytes (%s vs %s): the compressor differs (release built with %s, rebuilt with %s)", i, pd, rd, d.Toolchain.GoVersion, runtime.Version())
		}
		pf, rf := layerFiles(pl[i]), layerFiles(rl[i])
		var paths []string
		for p := range pf {
			paths = append(paths, p)
		}
		for p := range rf {
			if _, ok := pf[p]; !ok {
				paths = append(paths, p)
			}
		}
		sort.Strings(paths)
		for _, p := range paths {
			if pf[p] != rf[p] {
				return fmt.Sprintf("layer %d, first differing file /%s (release %q, rebuild %q)", i, p, short(pf[p]), short(rf[p]))
			}
		}
		return fmt.Sprintf("layer %d differs in its tar headers (%s vs %s)", i, pdiff, rdiff)
	}
	pc, _ := published.RawConfigFile()
	rc, _ := rebuilt.RawConfigFile()
	if !bytes.Equal(pc, rc) {
		return "the image config differs"
	}
	return "the manifest differs"
}

func short(s string) string {
	if s == "" {
		return "absent"
	}
	return "sha256:" + s[:12]
}

func layerFiles(l v1.Layer) map[string]string {
	out := map[string]string{}
	rc, err := l.Uncompressed()
	if err != nil {
		return out
	}
	defer rc.Close()
	layer.Walk(rc, func(name string, exec bool, r io.Reader) error {
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			return err
		}
		mode := ""
		if exec {
			mode = " exec"
		}
		out[name] = hex.EncodeToString(h.Sum(nil)) + mode
		return nil
	})
	return out
}
