// Package base assembles a release's base image from a lock of pinned
// Debian packages, the way distroless images and rules_distroless build
// from package lists: no package manager and no maintainer script runs,
// each .deb is fetched by its pinned sha256 and its data archive is
// written, normalized, into deterministic layers. The same lock gives the
// same image digest on every machine.
//
// What maintainer scripts would have done and a served engine needs (the
// libblas.so.3 alternative, for one) is declared in the lock as links and
// checked against the assembled tree, so every byte of the base comes from
// a pinned package or from a line a reviewer read.
package base

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/reject"
)

// LockFormatVersion is the version of the lock file format this package
// reads and writes.
const LockFormatVersion = 1

// Lock pins every package of a base image. It is generated once by
// Resolve (with apt) and then committed and reviewed; building needs only
// the lock and the packages' bytes.
type Lock struct {
	FormatVersion int `json:"format_version"`
	// Name is the base's human name, recorded in the release's SBOM and
	// provenance (e.g. "debian-bookworm-python3-torch").
	Name string `json:"name"`
	// Distribution is the Debian release the packages come from.
	Distribution string `json:"distribution"`
	// Architecture is the dpkg architecture of every package (or "all").
	Architecture string `json:"architecture"`
	// Epoch dates the image config, history and the entries the base
	// adds itself (links, directories, package records).
	Epoch int64 `json:"epoch"`
	// Requested are the packages asked for; Packages is their closure.
	Requested []string `json:"requested"`
	// Env is the image config's environment.
	Env []string `json:"env"`
	// Links stand in for the maintainer scripts' symbolic links.
	Links    []Link    `json:"links"`
	Packages []Package `json:"packages"`
}

// Package is one pinned .deb.
type Package struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	Architecture string `json:"architecture"`
	// Source is the source package (name, or "name (version)"), for the SBOM.
	Source string `json:"source,omitempty"`
	// URL is where the lock's author fetched it; any mirror serving the
	// same bytes will do (they are checked against SHA256).
	URL           string `json:"url"`
	SHA256        string `json:"sha256"`
	Size          int64  `json:"size"`
	InstalledSize int64  `json:"installed_size_kib"`
}

// Link is a symbolic link the base adds, with the reason a reviewer reads.
type Link struct {
	Path   string `json:"path"`   // slash path in the image, no leading slash
	Target string `json:"target"` // what the link points to, as ln -s would take it
	Why    string `json:"why"`
}

// ErrLock is wrapped by every problem with a lock file's contents.
var ErrLock = reject.New("invalid base lock")

func lockErr(name, field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s: %s", ErrLock, name, field, fmt.Sprintf(format, args...))
}

// ParseLock reads a lock file's bytes; name (its path) is named in every
// error with the field at fault.
func ParseLock(name string, b []byte) (*Lock, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l Lock
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrLock, name, err)
	}
	// More would miss a stray "}" or "]": only the end of input may follow.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: %s: data after the lock object", ErrLock, name)
	}
	if err := l.Check(name); err != nil {
		return nil, err
	}
	return &l, nil
}

// Check validates a lock; name is used in errors.
func (l *Lock) Check(name string) error {
	if l.FormatVersion != LockFormatVersion {
		return lockErr(name, "format_version", "%d, want %d", l.FormatVersion, LockFormatVersion)
	}
	if l.Name == "" || strings.ContainsAny(l.Name, " \t\n/:@") {
		return lockErr(name, "name", "%q: want a non-empty name without blanks, slashes, colons or @", l.Name)
	}
	if l.Distribution == "" {
		return lockErr(name, "distribution", "empty")
	}
	if _, err := platformOf(l.Architecture); err != nil {
		return lockErr(name, "architecture", "%v", err)
	}
	if l.Epoch < 0 {
		return lockErr(name, "epoch", "%d is negative", l.Epoch)
	}
	if len(l.Requested) == 0 {
		return lockErr(name, "requested", "empty: name the packages the base is for")
	}
	for i, e := range l.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return lockErr(name, fmt.Sprintf("env[%d]", i), "%q: want KEY=VALUE", e)
		}
	}
	if len(l.Packages) == 0 {
		return lockErr(name, "packages", "empty")
	}
	seen := map[string]bool{}
	for i, p := range l.Packages {
		f := fmt.Sprintf("packages[%d]", i)
		if p.Name == "" || strings.ContainsAny(p.Name, " /_") {
			return lockErr(name, f+".name", "%q is not a Debian package name", p.Name)
		}
		if i > 0 && l.Packages[i-1].Name >= p.Name {
			return lockErr(name, f+".name", "%q: packages must be sorted by name, each once", p.Name)
		}
		seen[p.Name] = true
		if p.Version == "" {
			return lockErr(name, f+".version", "empty")
		}
		if p.Architecture != l.Architecture && p.Architecture != "all" {
			return lockErr(name, f+".architecture", "%q, want %q or \"all\"", p.Architecture, l.Architecture)
		}
		if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.HasSuffix(u.Path, ".deb") {
			return lockErr(name, f+".url", "%q: want an http(s) URL of a .deb", p.URL)
		}
		if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 || strings.ToLower(p.SHA256) != p.SHA256 {
			return lockErr(name, f+".sha256", "%q: want 64 lowercase hex digits", p.SHA256)
		}
		if p.Size <= 0 {
			return lockErr(name, f+".size", "%d: want the .deb's size in bytes", p.Size)
		}
		if p.InstalledSize < 0 {
			return lockErr(name, f+".installed_size_kib", "%d is negative", p.InstalledSize)
		}
	}
	for i, r := range l.Requested {
		if !seen[r] {
			return lockErr(name, fmt.Sprintf("requested[%d]", i), "%q is not among the locked packages", r)
		}
	}
	links := map[string]bool{}
	for i, k := range l.Links {
		f := fmt.Sprintf("links[%d]", i)
		if err := cleanRel(k.Path); err != nil {
			return lockErr(name, f+".path", "%q: %v", k.Path, err)
		}
		if links[k.Path] {
			return lockErr(name, f+".path", "%q is linked twice", k.Path)
		}
		links[k.Path] = true
		if k.Target == "" || strings.ContainsRune(k.Target, 0) {
			return lockErr(name, f+".target", "empty or holds NUL")
		}
		if k.Why == "" {
			return lockErr(name, f+".why", "empty: say which maintainer script this stands in for")
		}
	}
	return nil
}

// Marshal returns the lock as the indented JSON committed to the
// repository: fields in declaration order, packages sorted by name.
func (l *Lock) Marshal() ([]byte, error) {
	c := *l
	c.Packages = append([]Package(nil), l.Packages...)
	sort.Slice(c.Packages, func(i, j int) bool { return c.Packages[i].Name < c.Packages[j].Name })
	if c.Env == nil {
		c.Env = []string{}
	}
	if c.Links == nil {
		c.Links = []Link{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DownloadSize is the total size of the locked .deb files.
func (l *Lock) DownloadSize() int64 {
	var n int64
	for _, p := range l.Packages {
		n += p.Size
	}
	return n
}

// cleanRel checks a slash path relative to the image root.
func cleanRel(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("want a clean slash path relative to the image root")
	}
	return nil
}

// platformOf maps a dpkg architecture to its OCI platform.
func platformOf(arch string) (string, error) {
	switch arch {
	case "amd64":
		return "linux/amd64", nil
	case "arm64":
		return "linux/arm64/v8", nil
	case "ppc64el":
		return "linux/ppc64le", nil
	case "s390x":
		return "linux/s390x", nil
	}
	return "", fmt.Errorf("%q: want amd64, arm64, ppc64el or s390x", arch)
}
