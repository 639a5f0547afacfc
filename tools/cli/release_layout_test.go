package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	toto "github.com/in-toto/in-toto-golang/in_toto"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/intoto"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// custodyChain is a release with its supply chain as the crown loop ships
// it: functionary keys, the owner's layout and every step's link, made by
// the commands the release engineer's guide names.
type custodyChain struct {
	dir, release, releaseKey, releasePub string
	owner, va, vb, reviewer, builder     string // key prefixes (.key, .pub)
	reports                              []string
	layout, links                        string
}

// linkArgs are the release link arguments of one step's functionary.
func (c *custodyChain) linkArgs(step, keyPath, out, release string, reports []string) []string {
	args := []string{"release", "link", "--step", step, "--key", keyPath, "--trust", c.releasePub, "--out", out}
	for _, r := range reports {
		args = append(args, "--report", r)
	}
	return append(args, release)
}

// writeLinks writes every functionary's link of release into a new
// directory and returns it.
func (c *custodyChain) writeLinks(t *testing.T, release string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "links")
	for _, l := range []struct {
		step, key string
		reports   []string
	}{
		{"qualify", c.va + ".key", c.reports}, {"qualify", c.vb + ".key", c.reports}, {"review", c.reviewer + ".key", c.reports},
		{"materialize", c.builder + ".key", nil}, {"build", c.builder + ".key", nil}, {"sign", c.releaseKey, nil},
	} {
		if code, _, errOut := run(t, "", c.linkArgs(l.step, l.key, dir, release, l.reports)...); code != 0 {
			t.Fatalf("release link --step %s: exit %d\n%s", l.step, code, errOut)
		}
	}
	return dir
}

// writeLayout writes the owner's layout naming the chain's functionaries,
// expiring at expires.
func (c *custodyChain) writeLayout(t *testing.T, expires string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "root.layout")
	if code, _, errOut := run(t, "", "release", "layout", "--owner-key", c.owner+".key", "--qualify", c.va+".pub", "--qualify", c.vb+".pub",
		"--review", c.reviewer+".pub", "--materialize", c.builder+".pub", "--build", c.builder+".pub", "--sign", c.releasePub,
		"--expires", expires, "--out", p); code != 0 {
		t.Fatalf("release layout: exit %d\n%s", code, errOut)
	}
	return p
}

func (c *custodyChain) verifyArgs(layout, links string) []string {
	return []string{"release", "verify", "--key", c.releasePub, "--layout", layout, "--layout-key", c.owner + ".pub", "--links", links, c.release}
}

// newCustodyChain builds and signs a release and makes its chain from the
// outputs of real steps: the two qualification reports of a CPU crown
// (settlement's recorded first qualification and its reproduction on
// exchanged lanes), the release's review record, engine tree, image and
// signature bundle.
func newCustodyChain(t *testing.T) *custodyChain {
	t.Helper()
	r := fixture.New(t)
	c := &custodyChain{dir: t.TempDir(), releaseKey: r.PrivateKey, releasePub: r.PublicKey}
	c.release, _ = r.Build(t)
	if code, _, errOut := run(t, "", "release", "sign", "--key", r.PrivateKey, c.release); code != 0 {
		t.Fatalf("release sign: %s", errOut)
	}
	k := func(name string) string {
		p := filepath.Join(c.dir, name)
		if code, _, errOut := run(t, "", "release", "keygen", "--out", p); code != 0 {
			t.Fatalf("release keygen %s: %s", name, errOut)
		}
		return p
	}
	c.owner, c.va, c.vb, c.reviewer, c.builder = k("owner"), k("validator-a"), k("validator-b"), k("reviewer"), k("builder")
	c.reports = []string{repoDir("settlement/settle/testdata/cpu-first.report.json"), repoDir("settlement/settle/testdata/cpu-reproduction.report.json")}
	c.layout = c.writeLayout(t, "2099-01-01T00:00:00Z")
	c.links = c.writeLinks(t, c.release)
	return c
}

// inTotoVerify runs in-toto-golang's own verifier on a layout file and a
// links directory, with the owner's public key: what a consumer without
// cacheon checks.
func inTotoVerify(t *testing.T, layout, ownerPub, links string) (toto.Metadata, error) {
	t.Helper()
	mb, err := toto.LoadMetadata(layout)
	if err != nil {
		t.Fatal(err)
	}
	var owner toto.Key
	if err := owner.LoadKeyDefaults(ownerPub); err != nil {
		t.Fatal(err)
	}
	return toto.InTotoVerify(mb, map[string]toto.Key{owner.KeyID: owner}, links, "", nil, nil, false)
}

// TestReleaseCustodyChain verifies a release's chain of custody with
// release verify --layout and with in-toto-golang's verifier, and checks
// both refuse a broken chain, release verify with exit 2 naming the step
// and the reason.
func TestReleaseCustodyChain(t *testing.T) {
	c := newCustodyChain(t)
	code, out, errOut := run(t, "", c.verifyArgs(c.layout, c.links)...)
	if code != 0 || !strings.Contains(out, "ok   in-toto-layout      layout "+c.layout+": qualify, review, materialize, build and sign links verified") {
		t.Fatalf("verify --layout: exit %d\n%s%s", code, out, errOut)
	}
	summary, err := inTotoVerify(t, c.layout, c.owner+".pub", c.links)
	if err != nil {
		t.Fatalf("in-toto-golang's verifier refuses the chain: %v", err)
	}
	// The summary runs from the first step's materials to the last step's
	// products: the signature bundle the release carries.
	if p := summary.GetPayload().(toto.Link).Products; len(p) != 1 || len(p["bundle.json"]["sha256"]) != 64 {
		t.Errorf("summary link products %v, want the bundle", p)
	}
	// The qualify links name both reports and the evidence they reference.
	matches, _ := filepath.Glob(filepath.Join(c.links, "qualify.*.link"))
	if len(matches) != 2 {
		t.Fatalf("qualify links %v, want two", matches)
	}
	var qualify toto.Metablock
	if err := qualify.Load(matches[0]); err != nil {
		t.Fatal(err)
	}
	products := qualify.Signed.(toto.Link).Products
	evidence := 0
	for n := range products {
		if strings.HasPrefix(n, "evidence/") {
			evidence++
		}
	}
	if products["qualification/cpu-first.report.json"] == nil || products["qualification/cpu-reproduction.report.json"] == nil || evidence == 0 {
		t.Errorf("qualify link products %v, want both reports and their evidence", products)
	}

	// A chain whose build and materialize links describe another release
	// (the same inputs, built at another time): sign's materials are not
	// build's products.
	other, stranger := c.otherReleaseAndStranger(t)
	// A second pair of passing reports, one of them with other bytes under
	// the same name.
	altered := filepath.Join(t.TempDir(), "cpu-reproduction.report.json")
	raw, err := os.ReadFile(c.reports[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(altered, bytes.Replace(raw, []byte(`"lanes_exchanged":true`), []byte(`"lanes_exchanged": true`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	copyLinks := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "links")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		all, _ := filepath.Glob(filepath.Join(c.links, "*.link"))
		for _, p := range all {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	remove := func(t *testing.T, dir, glob string) {
		matches, _ := filepath.Glob(filepath.Join(dir, glob))
		if len(matches) == 0 {
			t.Fatalf("no link %s", glob)
		}
		for _, m := range matches {
			if err := os.Remove(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	relink := func(t *testing.T, dir, step, keyPath, release string, reports []string) {
		if code, _, errOut := run(t, "", c.linkArgs(step, keyPath, dir, release, reports)...); code != 0 {
			t.Fatalf("release link --step %s: exit %d\n%s", step, code, errOut)
		}
	}
	tests := []struct {
		name string
		// chain returns the layout and links directory to check.
		chain func(t *testing.T) (layout, links string)
		want  string
	}{
		{"the review link missing", func(t *testing.T) (string, string) {
			dir := copyLinks(t)
			remove(t, dir, "review.*.link")
			return c.layout, dir
		}, "step 'review' requires '1' link metadata file(s), found '0'"},
		{"one qualification", func(t *testing.T) (string, string) {
			dir := copyLinks(t)
			matches, _ := filepath.Glob(filepath.Join(dir, "qualify.*.link"))
			remove(t, dir, filepath.Base(matches[0]))
			return c.layout, dir
		}, "step 'qualify' requires '2' link metadata file(s), found '1'"},
		{"review of other reports than the qualifications produced", func(t *testing.T) (string, string) {
			dir := copyLinks(t)
			remove(t, dir, "review.*.link")
			relink(t, dir, "review", c.reviewer+".key", c.release, []string{c.reports[0], altered})
			return c.layout, dir
		}, "artifact verification failed for Step 'review', materials [qualification/cpu-reproduction.report.json] disallowed by rule [DISALLOW *]"},
		{"build and materialize links of another release", func(t *testing.T) (string, string) {
			dir := copyLinks(t)
			remove(t, dir, "build.*.link")
			remove(t, dir, "materialize.*.link")
			relink(t, dir, "materialize", c.builder+".key", other, nil)
			relink(t, dir, "build", c.builder+".key", other, nil)
			return c.layout, dir
		}, "artifact verification failed for Step 'sign', materials "},
		{"review signed by a key the layout does not name", func(t *testing.T) (string, string) {
			dir := copyLinks(t)
			remove(t, dir, "review.*.link")
			relink(t, dir, "review", stranger+".key", c.release, c.reports)
			return c.layout, dir
		}, "step 'review' requires '1' link metadata file(s). '0' out of '1' available link(s) have a valid signature from an authorized signer"},
		{"an expired layout", func(t *testing.T) (string, string) {
			return c.writeLayout(t, "2020-01-01T00:00:00Z"), c.links
		}, "layout has expired on '2020-01-01 00:00:00 +0000 UTC'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layout, links := tc.chain(t)
			code, out, errOut := run(t, "", c.verifyArgs(layout, links)...)
			if code != enginecli.ExitRejected || !strings.Contains(out, "FAIL in-toto-layout") ||
				!strings.Contains(errOut, "in-toto-layout check failed: layout "+layout+", links "+links+": in-toto verification: "+tc.want) {
				t.Errorf("verify --layout: exit %d\n%s%s\nwant exit %d naming %q", code, out, errOut, enginecli.ExitRejected, tc.want)
			}
			if _, err := inTotoVerify(t, layout, c.owner+".pub", links); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("in-toto-golang's verifier: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReleaseLinkRefusesReports checks release link's refusals of the
// qualification reports it is given: exit 2 naming the file and reason,
// no link written.
func TestReleaseLinkRefusesReports(t *testing.T) {
	c := newCustodyChain(t)
	notReport := filepath.Join(t.TempDir(), "review.json")
	if err := os.WriteFile(notReport, []byte(`{"schema":"cacheon.integration-record.v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, step string
		reports    []string
		want       string
	}{
		{"qualify without reports", "qualify", nil, "step qualify: 0 qualification report(s)"},
		{"qualify on one report", "qualify", c.reports[:1], "--report: 1 qualification report(s) given: a crown rests on 2 independent qualifications"},
		{"qualify on one report twice", "qualify", []string{c.reports[0], c.reports[0]}, "the same bytes as " + c.reports[0]},
		{"a file that is not a qualification report", "review", []string{c.reports[0], notReport}, notReport + `: schema "cacheon.integration-record.v1" is not a qualification report`},
		{"reports given to the build step", "build", c.reports, "step build takes no qualification reports"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "links")
			code, stdout, errOut := run(t, "", c.linkArgs(tc.step, c.va+".key", out, c.release, tc.reports)...)
			if code != enginecli.ExitRejected || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d\n%s%s\nwant exit %d naming %q", code, stdout, errOut, enginecli.ExitRejected, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused link left %s", out)
			}
		})
	}
}

// TestCustodyChainScript runs tools/custody_chain.sh, the script the crown
// loop ships its release's chain of custody with, on a signed release and
// the two recorded CPU crown reports laid out as cacheon qualify --ledger
// writes them (beside a failing report, which it must leave out). The
// shipped chain must verify with release verify and with in-toto-golang's
// verifier, both from the release alone (the chain attached to it) and
// from the in-toto/ directory, and its layout must name each functionary
// the script made: two validators for qualify, the reviewer, the builder
// for materialize and build, the release key for sign. The main job's
// check verifies the crown loop's chain only when the loop crowns, which a
// loaded CPU may prevent; this runs the script every time.
func TestCustodyChainScript(t *testing.T) {
	for _, tool := range []string{"bash", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	r := fixture.New(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	if err := os.Rename(r.Signed(t), release); err != nil {
		t.Fatal(err)
	}
	copyFile := func(src, dst string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(r.PrivateKey, filepath.Join(dir, "keys", "release.key"))
	copyFile(r.PublicKey, filepath.Join(dir, "keys", "release.pub"))
	quals := filepath.Join(dir, "qualification")
	copyFile(repoDir("settlement/settle/testdata/cpu-first.report.json"), filepath.Join(quals, "proposal-1", "report-1.json"))
	copyFile(repoDir("settlement/settle/testdata/cpu-reproduction.report.json"), filepath.Join(quals, "proposal-1", "report-2.json"))
	// Another proposal's qualification that failed.
	failed, err := os.ReadFile(repoDir("settlement/settle/testdata/cpu-first.report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(quals, "proposal-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(quals, "proposal-2", "report-1.json"), bytes.Replace(failed, []byte(`"decision":"PASS"`), []byte(`"decision":"FAIL"`), -1), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("bash", repoDir("tools/custody_chain.sh"), filepath.Join(cacheonOnPath(t), "cacheon"), dir)
	cmd.Env = commandEnv(os.Environ())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("tools/custody_chain.sh: %v\n%s%s", err, out.String(), errOut.String())
	}
	chain := filepath.Join(dir, "in-toto")
	layout, links := filepath.Join(chain, "root.layout"), filepath.Join(chain, "links")
	if !strings.Contains(out.String(), "in-toto-layout      the layout and 6 links attached to the release: qualify, review, materialize, build and sign links verified") ||
		!strings.Contains(errOut.String(), "(2 qualification reports, 6 links)") {
		t.Fatalf("tools/custody_chain.sh did not verify a chain of 2 reports and 6 links:\n%s%s", out.String(), errOut.String())
	}

	// What it shipped verifies on its own, with both verifiers: from the
	// release alone, and from the in-toto/ directory it also leaves.
	c := &custodyChain{releasePub: filepath.Join(dir, "keys", "release.pub"), owner: filepath.Join(dir, "keys", "owner"), release: release}
	if code, stdout, stderr := run(t, "", c.verifyAttachedArgs(release)...); code != 0 || !strings.Contains(stdout, "ok   in-toto-layout      the layout and 6 links attached") {
		t.Fatalf("verify --layout-key of the shipped release: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := run(t, "", c.verifyArgs(layout, links)...); code != 0 || !strings.Contains(stdout, "ok   in-toto-layout") {
		t.Fatalf("verify --layout of the shipped chain: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := inTotoVerify(t, layout, c.owner+".pub", links); err != nil {
		t.Fatalf("in-toto-golang's verifier refuses the shipped chain: %v", err)
	}
	pulledLayout, pulledLinks := custodyFromRelease(t, release)
	if _, err := inTotoVerify(t, pulledLayout, c.owner+".pub", pulledLinks); err != nil {
		t.Fatalf("in-toto-golang's verifier refuses the chain the shipped release carries: %v", err)
	}
	// The qualify link names the two passing reports, not the failing one.
	qualify, _ := filepath.Glob(filepath.Join(links, "qualify.*.link"))
	if len(qualify) != 2 {
		t.Fatalf("qualify links %v, want two", qualify)
	}
	var ql toto.Metablock
	if err := ql.Load(qualify[0]); err != nil {
		t.Fatal(err)
	}
	var reports []string
	for n := range ql.Signed.(toto.Link).Products {
		if strings.HasPrefix(n, "qualification/") {
			reports = append(reports, n)
		}
	}
	sort.Strings(reports)
	if strings.Join(reports, " ") != "qualification/report-1.json qualification/report-2.json" {
		t.Errorf("the qualify link names reports %v, want the two passing ones", reports)
	}
	// Each step's functionaries are the keys the script made for it.
	var lay toto.Metablock
	if err := lay.Load(layout); err != nil {
		t.Fatal(err)
	}
	id := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "keys", name+".pub"))
		if err != nil {
			t.Fatal(err)
		}
		k, err := intoto.KeyID(b)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	want := map[string][]string{
		"qualify": {id("validator-a"), id("validator-b")}, "review": {id("reviewer")},
		"materialize": {id("builder")}, "build": {id("builder")}, "sign": {id("release")},
	}
	steps := lay.Signed.(toto.Layout).Steps
	if len(steps) != len(want) {
		t.Fatalf("the layout has %d steps, want %d", len(steps), len(want))
	}
	for _, s := range steps {
		w := append([]string(nil), want[s.Name]...)
		sort.Strings(w)
		got := append([]string(nil), s.PubKeys...)
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(w, " ") || s.Threshold != len(w) {
			t.Errorf("step %s: keys %v threshold %d, want %v threshold %d", s.Name, got, s.Threshold, w, len(w))
		}
	}
}

// otherReleaseAndStranger builds and signs, with the chain's release key,
// another release of the same inputs (built at another time, so links
// made of it describe other bytes), and makes a key pair no layout names.
// It returns the other release's layout directory and the stranger's key
// path prefix (.key and .pub).
func (c *custodyChain) otherReleaseAndStranger(t *testing.T) (other, stranger string) {
	t.Helper()
	in := fixture.New(t).Inputs(filepath.Join(t.TempDir(), "other"))
	in.Epoch++
	if _, err := build.Build(in, nil); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "", "release", "sign", "--key", c.releaseKey, in.Out); code != 0 {
		t.Fatalf("sign the other release: %s", errOut)
	}
	stranger = filepath.Join(t.TempDir(), "stranger")
	if code, _, errOut := run(t, "", "release", "keygen", "--out", stranger); code != 0 {
		t.Fatal(errOut)
	}
	return in.Out, stranger
}
