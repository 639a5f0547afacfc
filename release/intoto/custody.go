package intoto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	toto "github.com/in-toto/in-toto-golang/in_toto"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
)

// Chain is a release's chain of custody as files: the owner's signed
// layout and the functionaries' signed links, each under its in-toto
// file name (<step>.<keyid prefix>.link). It travels with the release as
// referrers of its image (Attach), one artifact each, so a consumer who
// pulls or mirrors the release gets it too.
type Chain struct {
	Layout []byte
	Links  map[string][]byte
}

// envelope is what a chain needs to know of an in-toto metablock before
// in-toto reads it: its type, a link's step and its signers.
type envelope struct {
	Signed *struct {
		Type string `json:"_type"`
		Name string `json:"name"`
	} `json:"signed"`
	Signatures []struct {
		KeyID string `json:"keyid"`
	} `json:"signatures"`
}

// parseEnvelope checks data as a signed in-toto metablock of type want
// ("layout" or "link") and returns it.
func parseEnvelope(data []byte, want string) (*envelope, error) {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("not an in-toto envelope: %w", err)
	}
	if e.Signed == nil || e.Signatures == nil {
		return nil, errors.New("not an in-toto envelope: it needs 'signed' and 'signatures' parts")
	}
	if e.Signed.Type != want {
		return nil, fmt.Errorf("an in-toto %q, not a %s", e.Signed.Type, want)
	}
	if len(e.Signatures) == 0 {
		return nil, fmt.Errorf("an unsigned in-toto %s", want)
	}
	return &e, nil
}

// linkName is the in-toto file name of a link: its step and its signer's
// key id prefix. A link signed by more than one key has none.
func linkName(data []byte) (string, error) {
	e, err := parseEnvelope(data, "link")
	if err != nil {
		return "", err
	}
	if len(e.Signatures) != 1 {
		return "", fmt.Errorf("an in-toto link with %d signatures, want one (a functionary signs its own link)", len(e.Signatures))
	}
	if e.Signed.Name == "" || e.Signatures[0].KeyID == "" {
		return "", errors.New("an in-toto link without a step name or a signer key id")
	}
	name := fmt.Sprintf(toto.LinkNameFormat, e.Signed.Name, e.Signatures[0].KeyID)
	if err := store.CheckTitle(name); err != nil {
		return "", err
	}
	return name, nil
}

// ReadChain reads the layout at layoutPath and every *.link file in
// linkDir. A directory without links, a file that is not a signed
// in-toto layout or link, and a link whose file name is not the one
// in-toto gives it (<step>.<keyid prefix>.link, as release link writes
// it) are refused, naming the file; a file that cannot be read is an I/O
// error.
func ReadChain(layoutPath, linkDir string) (*Chain, error) {
	layout, err := os.ReadFile(layoutPath)
	if err != nil {
		return nil, err
	}
	if _, err := parseEnvelope(layout, "layout"); err != nil {
		return nil, reject.Errorf("layout %s: %w", layoutPath, err)
	}
	if _, err := toto.LoadMetadata(layoutPath); err != nil {
		return nil, reject.Errorf("layout %s: not an in-toto layout: %w", layoutPath, err)
	}
	paths, err := filepath.Glob(filepath.Join(linkDir, "*.link"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		if _, err := os.Stat(linkDir); err != nil {
			return nil, err
		}
		return nil, reject.Errorf("links %s: no *.link file: a chain of custody needs every step's signed link", linkDir)
	}
	c := &Chain{Layout: layout, Links: map[string][]byte{}}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		name, err := linkName(b)
		if err != nil {
			return nil, reject.Errorf("link %s: %w", p, err)
		}
		if _, err := toto.LoadMetadata(p); err != nil {
			return nil, reject.Errorf("link %s: not an in-toto link: %w", p, err)
		}
		if base := filepath.Base(p); base != name {
			return nil, reject.Errorf("link %s: it is the %s, whose in-toto file name is %s", p, strings.TrimSuffix(name, ".link"), name)
		}
		c.Links[name] = b
	}
	return c, nil
}

// Names returns the chain's link file names, sorted.
func (c *Chain) Names() []string {
	var names []string
	for n := range c.Links {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// check runs Check on the chain, laid out as files in a temporary
// directory (in-toto's verifier reads links from a directory).
func (c *Chain) check(ownerPEMs [][]byte, rel *verify.Release) error {
	dir, err := os.MkdirTemp("", "cacheon-custody-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	layoutPath := filepath.Join(dir, store.TitleLayout)
	if err := os.WriteFile(layoutPath, c.Layout, 0o600); err != nil {
		return err
	}
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o700); err != nil {
		return err
	}
	for name, b := range c.Links {
		if err := os.WriteFile(filepath.Join(links, name), b, 0o600); err != nil {
			return err
		}
	}
	mb, err := Load(layoutPath)
	if err != nil {
		return reject.Wrap(err)
	}
	return Check(mb, ownerPEMs, links, rel)
}

// Attached is one artifact of a chain attached to a release.
type Attached struct {
	Title        string `json:"title"`
	ArtifactType string `json:"artifact_type"`
	Digest       string `json:"digest"`
	// AlreadyAttached says the artifact was attached before this call
	// (an earlier attach of the same chain that stopped part way).
	AlreadyAttached bool `json:"already_attached,omitempty"`
}

// Attach attaches the chain c to the image subject in s: the layout
// (titled root.layout) and then each link (titled with its file name),
// each its own artifact. A release carries one chain, so Attach refuses,
// attaching nothing, an image that already carries any layout or link
// that is not this chain's own artifact under the same title. Artifacts
// of this very chain already attached are kept and reported as such:
// attaching the same chain again completes an attach that stopped part
// way (a crash, a lost connection to the registry) and otherwise
// attaches nothing, so an operator can always retry. Attach does not
// check the chain: AttachChecked does.
func Attach(s store.Store, subject v1.Descriptor, c *Chain) ([]Attached, error) {
	if len(c.Links) == 0 {
		return nil, reject.Errorf("a chain of custody without links")
	}
	arts := []store.Artifact{{ArtifactType: store.ArtifactInTotoLayout, Data: c.Layout, Title: store.TitleLayout}}
	byTitle := map[string]store.Artifact{store.TitleLayout: arts[0]}
	for _, name := range c.Names() {
		a := store.Artifact{ArtifactType: store.ArtifactInTotoLink, Data: c.Links[name], Title: name}
		arts = append(arts, a)
		byTitle[name] = a
	}
	refs, err := store.Referrers(s, subject.Digest)
	if err != nil {
		return nil, err
	}
	present := map[string]v1.Descriptor{} // title -> the attached artifact of this chain
	for _, r := range refs {
		if r.ArtifactType != store.ArtifactInTotoLayout && r.ArtifactType != store.ArtifactInTotoLink {
			continue
		}
		a, ok := byTitle[r.Title()]
		if !ok || a.ArtifactType != r.ArtifactType || !bytes.Equal(a.Data, r.Data) {
			return nil, reject.Errorf("another chain of custody is already attached to %s in %s (%s as %s is not this chain's): a release carries one chain", subject.Digest, s.Location(), r.Title(), r.Descriptor.Digest)
		}
		present[r.Title()] = r.Descriptor
	}
	var out []Attached
	for _, a := range arts {
		if d, ok := present[a.Title]; ok {
			out = append(out, Attached{Title: a.Title, ArtifactType: a.ArtifactType, Digest: d.Digest.String(), AlreadyAttached: true})
			continue
		}
		d, err := s.Attach(subject, a)
		if err != nil {
			return out, fmt.Errorf("attach %s to %s (attach the same chain again to finish): %w", a.Title, subject.Digest, err)
		}
		out = append(out, Attached{Title: a.Title, ArtifactType: a.ArtifactType, Digest: d.Digest.String()})
	}
	return out, nil
}

// AttachChecked checks the chain against the release rel, verified in s,
// with the owner keys (the check release verify runs), and attaches it
// only when it passes, so a broken chain is never shipped. A chain that
// does not verify is a rejection naming the step.
func AttachChecked(s store.Store, rel *verify.Release, c *Chain, ownerPEMs [][]byte) ([]Attached, error) {
	if err := c.check(ownerPEMs, rel); err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			return nil, err
		}
		return nil, reject.Errorf("the chain does not verify against %s: %w", rel.Image.Digest, err)
	}
	return Attach(s, rel.Image, c)
}

// chainAttached reads the chain of custody attached to the verified
// release rel: the one layout among the attached layouts signed by an
// owner key, and the attached links, each under its in-toto file name.
// Two different links with one name (the same step by the same key) keep
// the one whose signature verifies with the layout's key of that id.
// Nothing attached, no layout signed by an owner key, or a choice left
// between two is a rejection.
func chainAttached(rel *verify.Release, owners []toto.Key) (*Chain, error) {
	layouts, err := rel.Attached(store.ArtifactInTotoLayout)
	if err != nil {
		return nil, err
	}
	links, err := rel.Attached(store.ArtifactInTotoLink)
	if err != nil {
		return nil, err
	}
	if len(layouts) == 0 && len(links) == 0 {
		return nil, reject.Errorf("no chain of custody is attached to %s (no %s or %s referrer): attach one with cacheon release attach-custody, or give --layout and --links", rel.Image.Digest, store.ArtifactInTotoLayout, store.ArtifactInTotoLink)
	}
	var layout *toto.Metablock
	var layoutData []byte
	var unsigned []string
	for _, r := range layouts {
		mb, err := metablock(r.Data)
		if err != nil {
			unsigned = append(unsigned, fmt.Sprintf("%s: %v", r.Descriptor.Digest, err))
			continue
		}
		if _, ok := mb.Signed.(toto.Layout); !ok {
			unsigned = append(unsigned, fmt.Sprintf("%s: not an in-toto layout", r.Descriptor.Digest))
			continue
		}
		if !signedByOne(mb, owners) {
			unsigned = append(unsigned, fmt.Sprintf("%s: not signed by a layout key", r.Descriptor.Digest))
			continue
		}
		if layout != nil && !bytes.Equal(layoutData, r.Data) {
			return nil, reject.Errorf("two layouts signed by a layout key are attached to %s; the chain is ambiguous", rel.Image.Digest)
		}
		layout, layoutData = mb, r.Data
	}
	if layout == nil {
		return nil, reject.Errorf("no layout attached to %s is signed by a layout key (%d attached%s)", rel.Image.Digest, len(layouts), listed(unsigned))
	}
	keys := layout.Signed.(toto.Layout).Keys
	c := &Chain{Layout: layoutData, Links: map[string][]byte{}}
	for _, r := range links {
		name, err := linkName(r.Data)
		if err != nil {
			// in-toto would not read it: leave it out, and let the
			// step's threshold name what is missing.
			continue
		}
		prev, dup := c.Links[name]
		if !dup || bytes.Equal(prev, r.Data) {
			c.Links[name] = r.Data
			continue
		}
		ok := func(b []byte) bool {
			mb, err := metablock(b)
			if err != nil || len(mb.Signatures) != 1 {
				return false
			}
			k, known := keys[mb.Signatures[0].KeyID]
			return known && mb.VerifySignature(k) == nil
		}
		switch {
		case ok(prev) && ok(r.Data):
			return nil, reject.Errorf("two different links %s, both validly signed, are attached to %s; the chain is ambiguous", name, rel.Image.Digest)
		case ok(r.Data):
			c.Links[name] = r.Data
		}
	}
	return c, nil
}

func listed(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return ": " + strings.Join(s, "; ")
}

// metablock parses data as in-toto metadata, as in-toto reads a file.
func metablock(data []byte) (*toto.Metablock, error) {
	f, err := os.CreateTemp("", "cacheon-intoto-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	var mb toto.Metablock
	if err := mb.Load(f.Name()); err != nil {
		return nil, err
	}
	return &mb, nil
}

func signedByOne(mb *toto.Metablock, keys []toto.Key) bool {
	for _, k := range keys {
		if mb.VerifySignature(k) == nil {
			return true
		}
	}
	return false
}

// AttachedCheck returns the check release/verify runs after it has
// verified a release whose chain of custody travels with it: the layout
// and links attached to the image, read back and checked as LoadCheck
// checks files, against the owner public keys at ownerKeyPaths.
func AttachedCheck(ownerKeyPaths []string) (verify.LayoutCheck, error) {
	if len(ownerKeyPaths) == 0 {
		return nil, errors.New("a layout check needs the layout owner's keys")
	}
	var pems [][]byte
	var owners []toto.Key
	for _, p := range ownerKeyPaths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("layout owner key: %w", err)
		}
		k, err := inTotoKey(b)
		if err != nil {
			return nil, reject.Errorf("layout owner key %s: %w", p, err)
		}
		pems = append(pems, b)
		owners = append(owners, k)
	}
	return func(rel *verify.Release) error {
		c, err := chainAttached(rel, owners)
		if err != nil {
			return err
		}
		if err := c.check(pems, rel); err != nil {
			return fmt.Errorf("the chain of custody attached to %s: %w", rel.Image.Digest, err)
		}
		rel.Report.Checks = append(rel.Report.Checks, verify.CheckResult{Name: verify.CheckLayout, OK: true,
			Detail: fmt.Sprintf("the layout and %d links attached to the release: qualify, review, materialize, build and sign links verified", len(c.Links))})
		return nil
	}, nil
}
