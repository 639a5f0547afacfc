package prebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// ManifestName is the sealed inventory at an artifact directory's root.
const ManifestName = "artifact.json"

// ArtifactSchema names the artifact.json format.
const ArtifactSchema = "prebuild-artifact-v1"

// MaxManifestBytes bounds artifact.json when reopening.
const MaxManifestBytes = 1 << 20

// Artifact is artifact.json: what was built, for which target, from which
// sources, and every file the artifact holds. Its canonical JSON is the
// payload of the seal digest, so it holds nothing that differs between
// two builds of the same bytes (no paths of the build host, no times).
type Artifact struct {
	Schema    string    `json:"schema"`
	Target    string    `json:"target"`         // "cpu" or "cuda"
	Arch      string    `json:"arch,omitempty"` // CUDA architecture (sm_90); empty on cpu
	Torch     string    `json:"torch"`          // the torch version the libraries link against
	Libraries []Library `json:"libraries"`
	Files     []File    `json:"files"` // every file but artifact.json, sorted by path
}

// Library is one op row's compiled library.
type Library struct {
	Slot    string `json:"slot"`
	Variant string `json:"variant"`
	// Sources are the row's declared CUDA files (bundle-relative) with the
	// digests of the bytes compiled: a worker binds a row to its library by
	// these digests, so the paths a materialized tree gives the files do
	// not matter.
	Sources []File `json:"sources"`
	Path    string `json:"path"` // the library, relative to the artifact directory
}

// File is one file and its SHA-256.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Sealed is an opened, verified artifact directory.
type Sealed struct {
	Dir      string          // absolute path; its base name is Digest's hex
	Digest   identity.Digest // H(DomainPrebuildArtifact, Artifact)
	Artifact Artifact
}

// ErrSeal is the class of every sealed-artifact check that fails: the
// directory is not what its name says.
var ErrSeal = errors.New("sealed prebuild artifact does not verify")

func sealErr(dir, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrSeal, dir, fmt.Sprintf(format, args...))
}

// Digest returns the seal digest of a.
func (a *Artifact) Digest() (identity.Digest, error) {
	return identity.H(identity.DomainPrebuildArtifact, a)
}

// Library returns the library of the row (slot, variant).
func (s *Sealed) Library(slot, variant string) (*Library, bool) {
	for i := range s.Artifact.Libraries {
		l := &s.Artifact.Libraries[i]
		if l.Slot == slot && l.Variant == variant {
			return l, true
		}
	}
	return nil, false
}

// Path returns the absolute path of an artifact-relative file.
func (s *Sealed) Path(rel string) string { return filepath.Join(s.Dir, filepath.FromSlash(rel)) }

// Open reopens the artifact directory dir and verifies it: artifact.json
// parses and its digest is the directory's name, the directory holds
// exactly the files it lists (regular files, no write permission) with
// their sizes and SHA-256, and every library is one of them.
func Open(dir string) (*Sealed, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data, err := readBounded(filepath.Join(abs, ManifestName), MaxManifestBytes)
	if err != nil {
		return nil, sealErr(abs, "%v", err)
	}
	var a Artifact
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, sealErr(abs, "%s: %v", ManifestName, err)
	}
	if a.Schema != ArtifactSchema {
		return nil, sealErr(abs, "%s: schema %q, want %q", ManifestName, a.Schema, ArtifactSchema)
	}
	d, err := a.Digest()
	if err != nil {
		return nil, sealErr(abs, "%s: %v", ManifestName, err)
	}
	if filepath.Base(abs) != d.Hex {
		return nil, sealErr(abs, "the inventory's digest is %s, the directory is named %s", d.Hex, filepath.Base(abs))
	}
	want := map[string]File{}
	for _, f := range a.Files {
		if err := checkRel(f.Path); err != nil || f.Path == ManifestName {
			return nil, sealErr(abs, "%s: file path %q is not a plain relative path", ManifestName, f.Path)
		}
		want[f.Path] = f
	}
	for _, l := range a.Libraries {
		if _, ok := want[l.Path]; !ok {
			return nil, sealErr(abs, "library %s of %s [%s] is not in the inventory", l.Path, l.Slot, l.Variant)
		}
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(abs, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(abs, p)
		rel = filepath.ToSlash(rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o222 != 0 {
			return sealErr(abs, "%s is writable (mode %04o)", rel, info.Mode().Perm())
		}
		if e.IsDir() || rel == ManifestName {
			return nil
		}
		if !info.Mode().IsRegular() {
			return sealErr(abs, "%s is not a regular file", rel)
		}
		f, ok := want[rel]
		if !ok {
			return sealErr(abs, "%s is not in the inventory", rel)
		}
		sum, size, err := hashFile(p)
		if err != nil {
			return err
		}
		if size != f.Size || sum != f.SHA256 {
			return sealErr(abs, "%s: sha256 %s (%d bytes), sealed %s (%d bytes)", rel, sum, size, f.SHA256, f.Size)
		}
		seen[rel] = true
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrSeal) {
			return nil, err
		}
		return nil, sealErr(abs, "%v", err)
	}
	for p := range want {
		if !seen[p] {
			return nil, sealErr(abs, "%s is missing", p)
		}
	}
	return &Sealed{Dir: abs, Digest: d, Artifact: a}, nil
}

// seal copies the inventoried files from out into a new directory of
// store named by the digest of a (whose Files it fills), makes it
// read-only and reopens it. An artifact already sealed at that address is
// reopened and used: it holds the same bytes, or Open says it does not.
func seal(store, out string, a *Artifact) (*Sealed, error) {
	if err := os.MkdirAll(store, 0o755); err != nil {
		return nil, fmt.Errorf("artifact store: %w", err)
	}
	tmp, err := os.MkdirTemp(store, ".seal-")
	if err != nil {
		return nil, fmt.Errorf("artifact store: %w", err)
	}
	defer makeWritableAndRemove(tmp)
	var dirs []string
	for _, f := range a.Files {
		dst := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		for d := filepath.Dir(dst); d != tmp; d = filepath.Dir(d) {
			dirs = append(dirs, d)
		}
		sum, size, err := copyFile(filepath.Join(out, filepath.FromSlash(f.Path)), dst)
		if err != nil {
			return nil, fmt.Errorf("sealing %s: %w", f.Path, err)
		}
		if sum != f.SHA256 || size != f.Size {
			return nil, fmt.Errorf("sealing %s: it changed after the inventory (sha256 %s, inventoried %s)", f.Path, sum, f.SHA256)
		}
	}
	d, err := a.Digest()
	if err != nil {
		return nil, err
	}
	doc, err := canonjson.Marshal(a)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, ManifestName), append(doc, '\n'), 0o444); err != nil {
		return nil, err
	}
	// Children before parents, so no directory loses its write bit before
	// what is inside it is done.
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, f := range a.Files {
		if err := os.Chmod(filepath.Join(tmp, filepath.FromSlash(f.Path)), 0o444); err != nil {
			return nil, err
		}
	}
	for _, dir := range append(dirs, tmp) {
		if err := os.Chmod(dir, 0o555); err != nil {
			return nil, err
		}
	}
	final := filepath.Join(store, d.Hex)
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(final); statErr != nil {
			return nil, fmt.Errorf("publishing the sealed artifact: %w", err)
		}
	}
	return Open(final)
}

// makeWritableAndRemove removes a read-only scratch tree (gone already
// when it was renamed into place).
func makeWritableAndRemove(dir string) {
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// inventory lists every file under out, which must hold only regular files
// and directories.
func inventory(out string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(out, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == out {
			return nil
		}
		rel, _ := filepath.Rel(out, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			return nil
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("build output %s is not a regular file (%s)", rel, e.Type())
		}
		if err := checkRel(rel); err != nil || rel == ManifestName {
			return fmt.Errorf("build output %q has a name the artifact cannot hold", rel)
		}
		sum, size, err := hashFile(p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: rel, SHA256: sum, Size: size})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, err
}

func checkRel(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("path %q is not a clean relative path", p)
	}
	return nil
}

func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
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

func copyFile(src, dst string) (string, int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", 0, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func readBounded(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	return data, nil
}

// File returns the inventory entry of an artifact-relative path.
func (s *Sealed) File(rel string) (File, bool) {
	for _, f := range s.Artifact.Files {
		if f.Path == rel {
			return f, true
		}
	}
	return File{}, false
}

// Bind returns the library built from exactly the bytes the row (slot,
// variant) declares as sources in the bundle or engine tree at dir. It is
// bound by content, not by path: a materialized engine tree holds a
// contribution's files under other paths, and an artifact sealed for other
// bytes never stands in for them.
func (s *Sealed) Bind(dir, slot, variant string, sources []string) (*Library, error) {
	want := make([]string, len(sources))
	for i, src := range sources {
		sum, _, err := hashFile(filepath.Join(dir, filepath.FromSlash(src)))
		if err != nil {
			return nil, err
		}
		want[i] = sum
	}
	sort.Strings(want)
	var match *Library
	candidates := 0
	for i := range s.Artifact.Libraries {
		l := &s.Artifact.Libraries[i]
		if l.Slot != slot {
			continue
		}
		candidates++
		got := make([]string, len(l.Sources))
		for j, f := range l.Sources {
			got[j] = f.SHA256
		}
		sort.Strings(got)
		if strings.Join(got, ",") == strings.Join(want, ",") && (match == nil || l.Variant == variant) {
			match = l
		}
	}
	if match == nil {
		return nil, fmt.Errorf("sealed prebuild artifact %s: none of its %d %s librar(ies) was built from the bytes %s [%s] declares (%s)",
			s.Digest.Hex, candidates, slot, slot, variant, strings.Join(sources, ", "))
	}
	return match, nil
}
