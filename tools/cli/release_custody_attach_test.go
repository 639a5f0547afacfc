package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	toto "github.com/in-toto/in-toto-golang/in_toto"

	"github.com/cacheon/engine/release/intoto"
	"github.com/cacheon/engine/release/registrytest"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// releaseCopy copies the chain's signed release into a new directory, so
// a case can attach to it without touching the others.
func (c *custodyChain) releaseCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "release")
	copyDir(t, c.release, dst)
	return dst
}

// linksCopy copies the chain's links into a new directory, leaving out
// those matching any of the globs.
func (c *custodyChain) linksCopy(t *testing.T, without ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "links")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	all, _ := filepath.Glob(filepath.Join(c.links, "*.link"))
	left := 0
	for _, p := range all {
		skip := false
		for _, g := range without {
			if ok, _ := filepath.Match(g, filepath.Base(p)); ok {
				skip = true
			}
		}
		if skip {
			left++
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if left == 0 && len(without) > 0 {
		t.Fatalf("no link matches %v", without)
	}
	return dir
}

// attachUnchecked attaches a layout and links to release as
// attach-custody does, but without checking them first: what someone
// shipping a broken chain without cacheon would attach.
func attachUnchecked(t *testing.T, release, layout, links string) {
	t.Helper()
	chain, err := intoto.ReadChain(layout, links)
	if err != nil {
		t.Fatal(err)
	}
	l, desc := fixture.OpenResolved(t, release)
	if _, err := intoto.Attach(l, desc, chain); err != nil {
		t.Fatal(err)
	}
}

// attachRaw attaches one artifact to release as it is, beside whatever
// it carries.
func attachRaw(t *testing.T, release, typ, title string, data []byte) {
	t.Helper()
	l, desc := fixture.OpenResolved(t, release)
	if _, err := l.Attach(desc, store.Artifact{ArtifactType: typ, Data: data, Title: title}); err != nil {
		t.Fatal(err)
	}
}

// custodyFromRelease reads back the chain of custody attached to release
// into a new directory, as oras pull would: root.layout and links/.
func custodyFromRelease(t *testing.T, release string) (layout, links string) {
	t.Helper()
	l, desc := fixture.OpenResolved(t, release)
	refs, err := store.Referrers(l, desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layout, links = filepath.Join(dir, "root.layout"), filepath.Join(dir, "links")
	if err := os.MkdirAll(links, 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range refs {
		var p string
		switch r.ArtifactType {
		case store.ArtifactInTotoLayout:
			p = layout
		case store.ArtifactInTotoLink:
			p = filepath.Join(links, r.Title())
		default:
			continue
		}
		if err := os.WriteFile(p, r.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no chain of custody is attached to %s", release)
	}
	return layout, links
}

func (c *custodyChain) attachArgs(layout, links, release string) []string {
	return []string{"release", "attach-custody", "--key", c.releasePub, "--layout", layout, "--layout-key", c.owner + ".pub", "--links", links, release}
}

func (c *custodyChain) verifyAttachedArgs(release string) []string {
	return []string{"release", "verify", "--key", c.releasePub, "--layout-key", c.owner + ".pub", release}
}

// TestReleaseCustodyAttached attaches a release's chain of custody to the
// release with release attach-custody and verifies it from the release
// alone (release verify --layout-key, no --layout or --links), and with
// in-toto-golang's verifier on the layout and links read back from the
// release's referrers. Chains attached broken (a step's link missing,
// one qualification, links of another release, a link signed by a key
// the layout does not name), and a release that carries none, are
// refused with exit 2 naming the step, and so are a release whose only
// layout is not signed by a layout key and one carrying two layouts the
// owner signed; a stranger's layout and links beside the genuine chain
// change nothing; --layout and --links still override what the release
// carries.
func TestReleaseCustodyAttached(t *testing.T) {
	c := newCustodyChain(t)

	release := c.releaseCopy(t)
	code, out, errOut := run(t, "", c.attachArgs(c.layout, c.links, release)...)
	if code != 0 || !strings.Contains(out, "attached the chain of custody to sha256:") || !strings.Contains(out, "(6 links)") ||
		!strings.Contains(out, "root.layout") || !strings.Contains(out, "review.") {
		t.Fatalf("attach-custody: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, "", c.verifyAttachedArgs(release)...)
	if code != 0 || !strings.Contains(out, "ok   in-toto-layout      the layout and 6 links attached to the release: qualify, review, materialize, build and sign links verified") {
		t.Fatalf("verify --layout-key from the release: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "skipped referrer") || strings.Contains(out, "chain of custody") {
		t.Errorf("verify --layout-key notes the chain it checked:\n%s", out)
	}
	// Without --layout-key the chain is not checked, and a note says so
	// (not one skipped referrer per artifact).
	code, out, errOut = run(t, "", "release", "verify", "--key", c.releasePub, release)
	if code != 0 || !strings.Contains(out, "note the release carries a chain of custody (7 in-toto layout and link artifact(s)), not checked") ||
		strings.Contains(out, "skipped referrer") || strings.Contains(out, "in-toto-layout") {
		t.Errorf("verify without --layout-key: exit %d\n%s%s", code, out, errOut)
	}
	// What a consumer without cacheon checks: in-toto-golang's verifier
	// on the chain pulled from the release.
	layout, links := custodyFromRelease(t, release)
	summary, err := inTotoVerify(t, layout, c.owner+".pub", links)
	if err != nil {
		t.Fatalf("in-toto-golang's verifier refuses the chain read back from the release: %v", err)
	}
	if p := summary.GetPayload().(toto.Link).Products; len(p) != 1 || len(p["bundle.json"]["sha256"]) != 64 {
		t.Errorf("summary link products %v, want the bundle", p)
	}
	// Attaching the same chain again attaches nothing and says so.
	if code, out, errOut := run(t, "", c.attachArgs(c.layout, c.links, release)...); code != 0 ||
		!strings.Contains(out, "the chain of custody is already attached to sha256:") || strings.Count(out, "(already attached)") != 7 {
		t.Errorf("attach-custody twice: exit %d\n%s%s", code, out, errOut)
	}
	// An attach that stopped part way (the layout and the review link
	// attached, then a crash) is finished by attaching the chain again.
	interrupted := c.releaseCopy(t)
	l, desc := fixture.OpenResolved(t, interrupted)
	part, err := intoto.ReadChain(c.layout, c.linksCopy(t, "qualify.*.link", "materialize.*.link", "build.*.link", "sign.*.link"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := intoto.Attach(l, desc, part); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, "", c.verifyAttachedArgs(interrupted)...); code == 0 {
		t.Errorf("a release with half its chain verifies:\n%s%s", out, errOut)
	}
	code, out, errOut = run(t, "", c.attachArgs(c.layout, c.links, interrupted)...)
	if code != 0 || !strings.Contains(out, "attached the rest of the chain of custody to sha256:") ||
		!strings.Contains(out, "2 of 7 artifacts were already attached") || strings.Count(out, "(already attached)") != 2 {
		t.Fatalf("attach-custody after an interrupted attach: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "", c.verifyAttachedArgs(interrupted)...); code != 0 || !strings.Contains(out, "the layout and 6 links attached to the release") {
		t.Errorf("verify after the finished attach: exit %d\n%s%s", code, out, errOut)
	}
	// Another chain that verifies (the owner's layout with another
	// expiry) is refused: the release already carries one.
	otherLayout := c.writeLayout(t, "2098-01-01T00:00:00Z")
	if code, out, errOut := run(t, "", c.attachArgs(otherLayout, c.links, interrupted)...); code != enginecli.ExitRejected ||
		!strings.Contains(errOut, "another chain of custody is already attached to sha256:") || !strings.Contains(errOut, "root.layout as sha256:") {
		t.Errorf("attach-custody of another chain: exit %d\n%s%s", code, out, errOut)
	}

	// A release whose build and materialize links describe another
	// release, and a stranger's key.
	other, stranger := c.otherReleaseAndStranger(t)
	relink := func(t *testing.T, dir, step, keyPath, release string, reports []string) {
		t.Helper()
		if code, _, errOut := run(t, "", c.linkArgs(step, keyPath, dir, release, reports)...); code != 0 {
			t.Fatalf("release link --step %s: exit %d\n%s", step, code, errOut)
		}
	}
	oneQualify, _ := filepath.Glob(filepath.Join(c.links, "qualify.*.link"))
	strangerLayout := filepath.Join(t.TempDir(), "root.layout")
	if code, _, errOut := run(t, "", "release", "layout", "--owner-key", stranger+".key", "--qualify", c.va+".pub", "--qualify", c.vb+".pub",
		"--review", c.reviewer+".pub", "--materialize", c.builder+".pub", "--build", c.builder+".pub", "--sign", c.releasePub,
		"--expires", "2099-01-01T00:00:00Z", "--out", strangerLayout); code != 0 {
		t.Fatalf("release layout by a stranger: exit %d\n%s", code, errOut)
	}
	tests := []struct {
		name string
		// attach attaches a chain to release, or nothing.
		attach func(t *testing.T, release string)
		want   string
	}{
		{"no chain attached", func(t *testing.T, release string) {},
			"no chain of custody is attached to sha256:"},
		{"only a layout signed by a key that is not a layout key", func(t *testing.T, release string) {
			attachUnchecked(t, release, strangerLayout, c.links)
		}, "no layout attached to sha256:"},
		{"two layouts signed by the owner", func(t *testing.T, release string) {
			attachUnchecked(t, release, c.layout, c.links)
			attachRaw(t, release, store.ArtifactInTotoLayout, store.TitleLayout, []byte(mustRead(t, c.writeLayout(t, "2098-01-01T00:00:00Z"))))
		}, "two layouts signed by a layout key are attached to sha256:"},
		{"the review link missing", func(t *testing.T, release string) {
			attachUnchecked(t, release, c.layout, c.linksCopy(t, "review.*.link"))
		}, "in-toto verification: step 'review' requires '1' link metadata file(s), found '0'"},
		{"one qualification", func(t *testing.T, release string) {
			attachUnchecked(t, release, c.layout, c.linksCopy(t, filepath.Base(oneQualify[0])))
		}, "in-toto verification: step 'qualify' requires '2' link metadata file(s), found '1'"},
		{"build and materialize links of another release", func(t *testing.T, release string) {
			dir := c.linksCopy(t, "build.*.link", "materialize.*.link")
			relink(t, dir, "materialize", c.builder+".key", other, nil)
			relink(t, dir, "build", c.builder+".key", other, nil)
			attachUnchecked(t, release, c.layout, dir)
		}, "in-toto verification: artifact verification failed for Step 'sign', materials "},
		{"review signed by a key the layout does not name", func(t *testing.T, release string) {
			dir := c.linksCopy(t, "review.*.link")
			relink(t, dir, "review", stranger+".key", c.release, c.reports)
			attachUnchecked(t, release, c.layout, dir)
		}, "in-toto verification: step 'review' requires '1' link metadata file(s). '0' out of '1' available link(s) have a valid signature from an authorized signer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			release := c.releaseCopy(t)
			tc.attach(t, release)
			code, out, errOut := run(t, "", c.verifyAttachedArgs(release)...)
			if code != enginecli.ExitRejected || !strings.Contains(out, "FAIL in-toto-layout") ||
				!strings.Contains(errOut, "in-toto-layout check failed: ") || !strings.Contains(errOut, tc.want) {
				t.Errorf("verify --layout-key: exit %d\n%s%s\nwant exit %d naming %q", code, out, errOut, enginecli.ExitRejected, tc.want)
			}
			if !strings.Contains(tc.want, "in-toto verification: ") {
				return
			}
			// in-toto-golang's verifier refuses what the release carries
			// too.
			layout, links := custodyFromRelease(t, release)
			if _, err := inTotoVerify(t, layout, c.owner+".pub", links); err == nil || !strings.Contains(tc.want, "in-toto verification: "+err.Error()[:40]) {
				t.Errorf("in-toto-golang's verifier: %v, want %q", err, tc.want)
			}
			// --layout and --links override the chain the release
			// carries.
			args := append(c.verifyArgs(c.layout, c.links)[:10:10], release)
			if code, out, errOut := run(t, "", args...); code != 0 || !strings.Contains(out, "ok   in-toto-layout      layout "+c.layout) {
				t.Errorf("verify --layout --links of a release carrying a broken chain: exit %d\n%s%s", code, out, errOut)
			}
		})
	}

	// Anyone who can push to a repository can attach referrers: a
	// stranger's layout, a stranger's review link and a forged copy of the
	// genuine one beside the genuine chain change nothing.
	crowded := c.releaseCopy(t)
	attachUnchecked(t, crowded, c.layout, c.links)
	attachRaw(t, crowded, store.ArtifactInTotoLayout, store.TitleLayout, []byte(mustRead(t, strangerLayout)))
	dir := c.linksCopy(t, "*")
	relink(t, dir, "review", stranger+".key", c.release, c.reports)
	strangerReview, _ := filepath.Glob(filepath.Join(dir, "review.*.link"))
	attachRaw(t, crowded, store.ArtifactInTotoLink, filepath.Base(strangerReview[0]), []byte(mustRead(t, strangerReview[0])))
	// A copy of the genuine review link with its signer's key id but not
	// its signature (a product changed): the one that verifies is kept.
	genuineReview, _ := filepath.Glob(filepath.Join(c.links, "review.*.link"))
	forged := strings.Replace(mustRead(t, genuineReview[0]), `"source/`, `"source/x`, 1)
	if forged == mustRead(t, genuineReview[0]) {
		t.Fatal("the review link names no source")
	}
	attachRaw(t, crowded, store.ArtifactInTotoLink, filepath.Base(genuineReview[0]), []byte(forged))
	if code, out, errOut := run(t, "", c.verifyAttachedArgs(crowded)...); code != 0 || !strings.Contains(out, "ok   in-toto-layout") {
		t.Errorf("verify --layout-key of a release carrying a stranger's layout and link beside its chain: exit %d\n%s%s", code, out, errOut)
	}
}

// TestReleaseAttachCustodyRefuses checks attach-custody's refusals: exit
// 2 naming the file or directory and the reason, and nothing attached.
func TestReleaseAttachCustodyRefuses(t *testing.T) {
	c := newCustodyChain(t)
	empty := filepath.Join(t.TempDir(), "links")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	notEnvelope := c.linksCopy(t)
	bogus := filepath.Join(notEnvelope, "qualify.0123abcd.link")
	if err := os.WriteFile(bogus, []byte(`{"_type":"link","name":"qualify"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	layoutAsLink := c.linksCopy(t)
	if err := os.WriteFile(filepath.Join(layoutAsLink, "sign.0123abcd.link"), []byte(mustRead(t, c.layout)), 0o644); err != nil {
		t.Fatal(err)
	}
	renamed := c.linksCopy(t, "review.*.link")
	review, _ := filepath.Glob(filepath.Join(c.links, "review.*.link"))
	if err := os.WriteFile(filepath.Join(renamed, "review.link"), []byte(mustRead(t, review[0])), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, layout, links, want string
	}{
		{"a links directory without links", c.layout, empty, "links " + empty + ": no *.link file"},
		{"a file that is not an in-toto envelope", c.layout, notEnvelope, "link " + bogus + ": not an in-toto envelope"},
		{"a layout among the links", c.layout, layoutAsLink, "sign.0123abcd.link: an in-toto \"layout\", not a link"},
		{"a link under another name", c.layout, renamed, filepath.Join(renamed, "review.link") + ": it is the review."},
		{"a links file as the layout", review[0], c.links, "layout " + review[0] + ": an in-toto \"link\", not a layout"},
		{"a chain that does not verify", c.layout, c.linksCopy(t, "review.*.link"), "the chain does not verify against sha256:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := c.releaseCopy(t)
			code, out, errOut := run(t, "", c.attachArgs(tc.layout, tc.links, release)...)
			if code != enginecli.ExitRejected || !strings.Contains(errOut, tc.want) {
				t.Errorf("attach-custody: exit %d\n%s%s\nwant exit %d naming %q", code, out, errOut, enginecli.ExitRejected, tc.want)
			}
			if code, out, _ := run(t, "", "release", "verify", "--key", c.releasePub, release); code != 0 || strings.Contains(out, "chain of custody") {
				t.Errorf("a refused attach-custody attached something:\n%s", out)
			}
		})
	}
}

// TestReleaseCustodyTravels checks that the chain of custody travels with
// the release through a registry: attach-custody attaches it to a
// release already published (a registry reference, with --json), release publish
// copies a chain attached in a layout directory, and release mirror
// copies it to a second registry; each copy verifies from itself with
// --layout-key alone.
func TestReleaseCustodyTravels(t *testing.T) {
	c := newCustodyChain(t)
	regA, regB := registrytest.Start(t), registrytest.Start(t)
	verifyRef := func(t *testing.T, ref string) {
		t.Helper()
		code, out, errOut := run(t, "", c.verifyAttachedArgs(ref)...)
		if code != 0 || !strings.Contains(out, "ok   in-toto-layout      the layout and 6 links attached to the release") || strings.Contains(out, "skipped referrer") {
			t.Fatalf("verify --layout-key %s: exit %d\n%s%s", ref, code, out, errOut)
		}
	}

	// Attached in the registry, after publication.
	published := regA.Host + "/cacheon/published:1.0"
	if code, out, errOut := run(t, "", "release", "publish", c.releaseCopy(t), published); code != 0 {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := run(t, "", append([]string{"release", "attach-custody", "--json"}, c.attachArgs(c.layout, c.links, published)[2:]...)...)
	if code != 0 {
		t.Fatalf("attach-custody to %s: exit %d\n%s%s", published, code, out, errOut)
	}
	var res struct {
		FormatVersion int               `json:"format_version"`
		ImageDigest   string            `json:"image_digest"`
		Attached      []intoto.Attached `json:"attached"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.FormatVersion != 1 || !strings.HasPrefix(res.ImageDigest, "sha256:") || len(res.Attached) != 7 ||
		res.Attached[0].Title != store.TitleLayout || res.Attached[0].ArtifactType != store.ArtifactInTotoLayout || res.Attached[1].ArtifactType != store.ArtifactInTotoLink {
		t.Errorf("attach-custody --json: %v\n%s", err, out)
	}
	verifyRef(t, published)
	if code, out, errOut := run(t, "", c.attachArgs(c.layout, c.links, published)...); code != 0 || !strings.Contains(out, "is already attached") {
		t.Errorf("attach-custody twice to %s: exit %d\n%s%s", published, code, out, errOut)
	}

	// Attached in the layout directory, then published and mirrored.
	release := c.releaseCopy(t)
	if code, out, errOut := run(t, "", c.attachArgs(c.layout, c.links, release)...); code != 0 {
		t.Fatalf("attach-custody: exit %d\n%s%s", code, out, errOut)
	}
	src, mirror := regA.Host+"/cacheon/engine:1.0", regB.Host+"/cacheon/engine:1.0"
	if code, out, errOut := run(t, "", "release", "publish", release, src); code != 0 {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errOut)
	}
	verifyRef(t, src)
	code, out, errOut = run(t, "", "release", "mirror", "--key", c.releasePub, src, mirror)
	if code != 0 {
		t.Fatalf("mirror: exit %d\n%s%s", code, out, errOut)
	}
	verifyRef(t, mirror)

	// The consumer guide's oras commands take the chain out of the mirror:
	// discover lists it by artifact type, each pull writes the blob under
	// its title, and the files pulled verify as a layout and a links
	// directory, with cacheon and with in-toto-golang.
	t.Run("oras", func(t *testing.T) {
		stockTool(t, "oras")
		home := t.TempDir()
		oras := func(args ...string) []byte {
			t.Helper()
			cmd := exec.Command("oras", args...)
			cmd.Env = append(os.Environ(), "HOME="+home)
			b, err := cmd.Output()
			if err != nil {
				t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, b)
			}
			return b
		}
		var found struct {
			Referrers []struct {
				Digest       string `json:"digest"`
				ArtifactType string `json:"artifactType"`
			} `json:"referrers"`
		}
		if err := json.Unmarshal(oras("discover", "--plain-http", "--format", "json", mirror), &found); err != nil {
			t.Fatal(err)
		}
		pulled := t.TempDir()
		links := filepath.Join(pulled, "links")
		layouts, linkCount := 0, 0
		for _, r := range found.Referrers {
			switch r.ArtifactType {
			case store.ArtifactInTotoLayout:
				layouts++
				oras("pull", "--plain-http", "-o", pulled, regB.Host+"/cacheon/engine@"+r.Digest)
			case store.ArtifactInTotoLink:
				linkCount++
				oras("pull", "--plain-http", "-o", links, regB.Host+"/cacheon/engine@"+r.Digest)
			}
		}
		if layouts != 1 || linkCount != 6 {
			t.Fatalf("oras discover listed %d layouts and %d links, want 1 and 6", layouts, linkCount)
		}
		layout := filepath.Join(pulled, store.TitleLayout)
		args := []string{"release", "verify", "--key", c.releasePub, "--layout", layout, "--layout-key", c.owner + ".pub", "--links", links, mirror}
		if code, out, errOut := run(t, "", args...); code != 0 || !strings.Contains(out, "ok   in-toto-layout") {
			t.Fatalf("verify of the pulled chain: exit %d\n%s%s", code, out, errOut)
		}
		if _, err := inTotoVerify(t, layout, c.owner+".pub", links); err != nil {
			t.Errorf("in-toto-golang refuses the pulled chain: %v", err)
		}
	})
}
