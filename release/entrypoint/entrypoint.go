// Package entrypoint is the fail-closed start of a release image: before
// any contribution is loaded it verifies the signed release against a
// public key supplied from outside the image, checks every file it is
// about to run (engine tree, substrate, release records, its own binary)
// and the mounted model against the signed digests, and only then
// replaces itself with the signed serve command. Any mismatch refuses to
// start, naming what differed.
//
// The environment of the served process is built from scratch: the
// signed serve environment, PATH, and the CACHEON_RELEASE_* variables
// naming what was verified. Nothing else from the container's environment
// (LD_PRELOAD, PYTHON*, ...) reaches it.
package entrypoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cacheon/engine/internal/atomicwrite"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/provenance"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/stacks/materialize"

	"github.com/cacheon/engine/internal/identity"
)

// Defaults for a container: the trust material and the model are mounted
// from outside the image.
const (
	DefaultKey    = descriptor.DefaultTrustDir + "/release.pub"
	DefaultBundle = descriptor.DefaultTrustDir + "/release.sigstore.json"
)

// Options say where everything is.
type Options struct {
	Root   string      // the image's root filesystem ("/" in the container)
	Policy *key.Policy // the expected key, from outside the image
	Bundle []byte      // the release's signature bundle, from outside the image
	Model  string      // the mounted model directory; "" means the signed mount under Root
	Now    time.Time
}

// Verified is a release that passed every check, ready to exec.
type Verified struct {
	Descriptor       *descriptor.Descriptor
	DescriptorDigest string
	KeyID            string
	Argv             []string
	Env              []string
}

// ErrRefused is wrapped by every refusal to start.
var ErrRefused = errors.New("refusing to start")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

func under(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// Verify checks the installed release at opts.Root.
func Verify(opts Options) (*Verified, error) {
	if opts.Policy == nil {
		return nil, refuse("no expected public key was supplied (mount it and pass --key)")
	}
	if len(opts.Bundle) == 0 {
		return nil, refuse("no signature bundle was supplied (mount it and pass --bundle)")
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	signed, err := verify.Bundle(opts.Bundle, opts.Policy, now)
	if err != nil {
		return nil, refuse("%v", err)
	}
	prov, err := provenance.Parse(signed.Statement)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if prov.BuilderID != provenance.BuilderID || prov.BuildType != provenance.BuildType {
		return nil, refuse("statement from builder %q build type %q, want %q and %q", prov.BuilderID, prov.BuildType, provenance.BuilderID, provenance.BuildType)
	}

	// The release descriptor, bound by the signed provenance.
	descBytes, err := store.ReadRegularFile(under(opts.Root, descriptor.DescriptorPath), maxReleaseFile)
	if err != nil {
		return nil, refuse("read the release descriptor: %v", err)
	}
	bp, ok := provenance.Find(prov.Byproducts, provenance.ByproductRelease)
	if !ok || descriptor.SHA256(descBytes) != bp.Digest["sha256"] {
		return nil, refuse("/%s (sha256:%s) is not the descriptor the release signs", descriptor.DescriptorPath, descriptor.SHA256(descBytes))
	}
	d, err := descriptor.Parse(descBytes)
	if err != nil {
		return nil, refuse("%v", err)
	}
	descDigest, _ := d.Digest()

	// The engine tree: every file, nothing more.
	rows, treeMeta, err := treeRows(under(opts.Root, descriptor.EngineTreeDir))
	if err != nil {
		return nil, refuse("engine tree: %v", err)
	}
	computed, err := materialize.TreeDigest(rows)
	if err != nil {
		return nil, refuse("engine tree: %v", err)
	}
	treeDigest := computed.String()
	treeSubject, _ := provenance.Find(prov.Subjects, provenance.SubjectEngineTree)
	if treeSubject == nil || treeDigest != d.EngineTreeDigest || treeDigest != treeSubject.Digest[string(identity.DomainMaterializedEngineTree)] {
		return nil, refuse("the engine tree at /%s has digest %s, the signed release has %s", descriptor.EngineTreeDir, treeDigest, d.EngineTreeDigest)
	}

	// Release records and integrated-only coverage.
	files, err := releaseFiles(under(opts.Root, descriptor.ReleaseDir))
	if err != nil {
		return nil, refuse("%v", err)
	}
	if _, _, err := verify.CheckReleaseFiles(d, files, treeMeta); err != nil {
		return nil, refuse("%v", err)
	}
	receipt, err := verify.ModelReceipt(d, files)
	if err != nil {
		return nil, refuse("%v", err)
	}

	// The substrate: its content hash, and no file the hash skips (a
	// planted __pycache__ would run unverified bytes).
	subDir := under(opts.Root, descriptor.SubstrateDir)
	if err := noSkippedFiles(subDir); err != nil {
		return nil, refuse("substrate: %v", err)
	}
	subDigest, err := bundle.ContentHash(subDir)
	if err != nil {
		return nil, refuse("substrate: %v", err)
	}
	if subDigest.String() != d.SubstrateDigest {
		return nil, refuse("the substrate at /%s has content hash %s, the signed release has %s", descriptor.SubstrateDir, subDigest, d.SubstrateDigest)
	}

	// This binary.
	self, _, err := fileSHA256(under(opts.Root, descriptor.EntrypointPath))
	if err != nil {
		return nil, refuse("entrypoint: %v", err)
	}
	if self != d.Entrypoint.SHA256 {
		return nil, refuse("/%s is sha256:%s, the signed release has sha256:%s", descriptor.EntrypointPath, self, d.Entrypoint.SHA256)
	}

	// The mounted model against the signed receipt.
	modelDir := opts.Model
	if modelDir == "" {
		modelDir = under(opts.Root, strings.TrimPrefix(d.Serve.ModelMount, "/"))
	}
	if _, err := models.Check(modelDir, receipt, models.Options{}); err != nil {
		return nil, refuse("model at %s: %v", modelDir, err)
	}

	v := &Verified{Descriptor: d, DescriptorDigest: descDigest, KeyID: signed.KeyID}
	repl := strings.NewReplacer(
		"{engine_tree}", under(opts.Root, descriptor.EngineTreeDir),
		"{substrate}", under(opts.Root, descriptor.SubstrateDir),
		"{model}", modelDir,
	)
	for _, a := range d.Serve.Command {
		v.Argv = append(v.Argv, repl.Replace(a))
	}
	for _, kv := range d.Serve.Environment {
		v.Env = append(v.Env, repl.Replace(kv))
	}
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	v.Env = append(v.Env,
		"PATH="+path,
		"CACHEON_RELEASE_VERIFIED="+descDigest,
		"CACHEON_RELEASE_REQUIRED=1",
		"CACHEON_RELEASE_ENGINE_TREE_DIGEST="+treeDigest,
		"CACHEON_RELEASE_KEY_ID="+signed.KeyID,
	)
	sort.Strings(v.Env)
	return v, nil
}

// Exec replaces the current process with the verified serve command.
func Exec(v *Verified) error {
	bin := v.Argv[0]
	if !strings.Contains(bin, "/") {
		p, err := lookPath(bin, v.Env)
		if err != nil {
			return refuse("serve command %s: %v", bin, err)
		}
		bin = p
	}
	return syscall.Exec(bin, v.Argv, v.Env)
}

func lookPath(bin string, env []string) (string, error) {
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(p) {
				c := filepath.Join(dir, bin)
				if info, err := os.Stat(c); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
					return c, nil
				}
			}
		}
	}
	return exec.LookPath(bin)
}

// treeRows inventories the tree at dir: regular files and directories
// only.
func treeRows(dir string) ([]atomicwrite.Written, []byte, error) {
	var rows []atomicwrite.Written
	var meta []byte
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == materialize.TreeMetadataName {
			b, err := store.ReadRegularFile(p, maxReleaseFile)
			if err != nil {
				return err
			}
			meta = b
			rows = append(rows, atomicwrite.Written{Path: rel, SHA256: descriptor.SHA256(b), Size: int64(len(b))})
			return nil
		}
		sum, n, err := fileSHA256(p)
		if err != nil {
			return err
		}
		rows = append(rows, atomicwrite.Written{Path: rel, SHA256: sum, Size: n})
		return nil
	})
	return rows, meta, err
}

// releaseFiles reads /cacheon/release by image path.
func releaseFiles(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := store.ReadRegularFile(p, maxReleaseFile)
		files[descriptor.ReleaseDir+"/"+filepath.ToSlash(rel)] = b
		return err
	})
	return files, err
}

func noSkippedFiles(dir string) error {
	return filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if !e.IsDir() && !e.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		if bundle.Skipped(filepath.ToSlash(rel)) {
			return fmt.Errorf("%s is not covered by the signed content hash", p)
		}
		return nil
	})
}

// maxReleaseFile bounds a file of the release directory (the descriptor,
// a review record, the release stack) read into memory; verify reads the
// release layer with the same limit.
const maxReleaseFile = 16 << 20

// fileSHA256 hashes a regular file as a stream; a FIFO or device planted
// where a file belongs is refused without blocking.
func fileSHA256(p string) (string, int64, error) {
	f, err := store.OpenRegularFile(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
