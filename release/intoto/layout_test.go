package intoto_test

import (
	"crypto"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	toto "github.com/in-toto/in-toto-golang/in_toto"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/intoto"
	"github.com/cacheon/engine/release/key"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
)

type party struct {
	signer   crypto.Signer
	priv     []byte
	pub      []byte
	pubPath  string
	privPath string
}

func newParty(t *testing.T, name string, alg key.Algorithm) party {
	s, privPath, pubPath := fixture.Keys(t, t.TempDir(), name, alg)
	priv, _ := os.ReadFile(privPath)
	pub, _ := os.ReadFile(pubPath)
	return party{s, priv, pub, pubPath, privPath}
}

type chain struct {
	r                                                        *fixture.Release
	rel                                                      *verify.Release
	owner, validatorA, validatorB, reviewer, builder, signer party
	records                                                  intoto.Records
}

// writeReport writes a qualification report that references one
// evidence artifact (digest evidence) and, unless reproduces is "",
// reproduces the report of that canonical digest on exchanged lanes. It
// returns the path and the report's canonical digest (its keys are
// written sorted and compact, so the canonical form is the bytes).
func writeReport(t *testing.T, dir, name, decision, evidence, reproduces string) (string, string) {
	t.Helper()
	p := filepath.Join(dir, name)
	doc := `{"decision":"` + decision + `",`
	if reproduces != "" {
		doc += `"lanes_exchanged":true,"reproduces":"` + reproduces + `",`
	}
	doc += `"schema":"cacheon.qualification-report.v2",` +
		`"speed":{"reads":{"domain":"cacheon.qualification.speed-reads","sha256":"` + evidence + `","size":3}}}`
	if err := os.WriteFile(p, []byte(doc+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, descriptor.SHA256([]byte(doc))
}

// reportPair writes a passing qualification and its reproduction.
func reportPair(t *testing.T, dir, evidenceA, evidenceB string) (string, string) {
	t.Helper()
	first, digest := writeReport(t, dir, "report-1.json", "PASS", evidenceA, "")
	second, _ := writeReport(t, dir, "report-2.json", "PASS", evidenceB, digest)
	return first, second
}

func newChain(t *testing.T) *chain {
	t.Helper()
	c := &chain{r: fixture.New(t)}
	c.owner = newParty(t, "owner", key.Ed25519)
	c.validatorA = newParty(t, "validator-a", key.Ed25519)
	c.validatorB = newParty(t, "validator-b", key.ECDSAP256)
	c.reviewer = newParty(t, "reviewer", key.Ed25519)
	c.builder = newParty(t, "builder", key.ECDSAP256)
	priv, _ := os.ReadFile(c.r.PrivateKey)
	pub, _ := os.ReadFile(c.r.PublicKey)
	c.signer = party{c.r.Signer, priv, pub, c.r.PublicKey, c.r.PrivateKey}
	dir, _ := c.r.Build(t)
	l, _ := store.OpenLayout(dir)
	if _, err := sign.Release(l, c.r.Signer); err != nil {
		t.Fatal(err)
	}
	p, _ := key.LoadPolicy(c.r.PublicKey)
	rel, err := verify.Run(l, verify.Options{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	c.rel = rel
	rdir := t.TempDir()
	first, second := reportPair(t, rdir, strings.Repeat("a", 64), strings.Repeat("b", 64))
	c.records, err = intoto.QualificationRecords([]string{first, second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *chain) functionaries() intoto.Functionaries {
	return intoto.Functionaries{
		intoto.StepQualify:     {c.validatorA.pub, c.validatorB.pub},
		intoto.StepReview:      {c.reviewer.pub},
		intoto.StepMaterialize: {c.builder.pub},
		intoto.StepBuild:       {c.builder.pub},
		intoto.StepSign:        {c.signer.pub},
	}
}

func (c *chain) links(t *testing.T, rel *verify.Release, skip string) string {
	t.Helper()
	return c.linksWith(t, rel, skip, c.records, c.records)
}

// linksWith writes every link but skip (step/public key), the qualify
// links naming qualified and the review link consuming reviewed.
func (c *chain) linksWith(t *testing.T, rel *verify.Release, skip string, qualified, reviewed intoto.Records) string {
	t.Helper()
	dir := t.TempDir()
	for _, l := range []struct {
		step string
		p    party
	}{{intoto.StepQualify, c.validatorA}, {intoto.StepQualify, c.validatorB}, {intoto.StepReview, c.reviewer},
		{intoto.StepMaterialize, c.builder}, {intoto.StepBuild, c.builder}, {intoto.StepSign, c.signer}} {
		var records intoto.Records
		switch l.step {
		case intoto.StepQualify:
			records = qualified
		case intoto.StepReview:
			records = reviewed
		}
		mb, name, err := intoto.Link(l.step, rel, l.p.priv, records)
		if err != nil {
			t.Fatal(err)
		}
		if l.step+"/"+string(l.p.pub) == skip {
			continue
		}
		if err := mb.Dump(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLayoutAcceptsTheFullChain(t *testing.T) {
	c := newChain(t)
	mb, err := intoto.New(c.owner.priv, c.functionaries(), time.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "root.layout")
	if err := mb.Dump(p); err != nil {
		t.Fatal(err)
	}
	loaded, err := intoto.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := intoto.Check(loaded, [][]byte{c.owner.pub}, c.links(t, c.rel, ""), c.rel); err != nil {
		t.Fatalf("check: %v", err)
	}
}

func TestLayoutRejects(t *testing.T) {
	c := newChain(t)
	good, err := intoto.New(c.owner.priv, c.functionaries(), time.Now().Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	stranger := newParty(t, "stranger", key.Ed25519)
	cases := []struct {
		name  string
		check func(t *testing.T) error
		want  string
	}{
		{"one qualification", func(t *testing.T) error {
			return intoto.Check(good, [][]byte{c.owner.pub}, c.links(t, c.rel, intoto.StepQualify+"/"+string(c.validatorB.pub)), c.rel)
		}, "requires '2' link metadata file(s), found '1'"},
		{"layout signed by another owner", func(t *testing.T) error {
			return intoto.Check(good, [][]byte{stranger.pub}, c.links(t, c.rel, ""), c.rel)
		}, "in-toto verification"},
		{"expired layout", func(t *testing.T) error {
			old, err := intoto.New(c.owner.priv, c.functionaries(), time.Now().Add(-time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			return intoto.Check(old, [][]byte{c.owner.pub}, c.links(t, c.rel, ""), c.rel)
		}, "expired"},
		{"review by a non-functionary", func(t *testing.T) error {
			dir := c.links(t, c.rel, intoto.StepReview+"/"+string(c.reviewer.pub))
			mb, _, _ := intoto.Link(intoto.StepReview, c.rel, stranger.priv, c.records)
			reviewerID, _ := intoto.KeyID(c.reviewer.pub)
			mb.Dump(filepath.Join(dir, "review."+reviewerID[:8]+".link"))
			return intoto.Check(good, [][]byte{c.owner.pub}, dir, c.rel)
		}, "in-toto verification"},
		{"links of another release", func(t *testing.T) error {
			other := newChain(t)
			other.validatorA, other.validatorB, other.reviewer, other.builder, other.signer = c.validatorA, c.validatorB, c.reviewer, c.builder, c.signer
			// Build the other release in another epoch, so its image differs.
			in := other.r.Inputs(filepath.Join(t.TempDir(), "o"))
			in.Epoch++
			if _, err := build.Build(in, nil); err != nil {
				t.Fatal(err)
			}
			l, _ := store.OpenLayout(in.Out)
			sign.Release(l, c.r.Signer)
			p, _ := key.LoadPolicy(c.r.PublicKey)
			rel, err := verify.Run(l, verify.Options{Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			return intoto.Check(good, [][]byte{c.owner.pub}, c.links(t, rel, ""), c.rel)
		}, "do not describe this release"},
		{"release signed by a key the layout does not name", func(t *testing.T) error {
			f := c.functionaries()
			f[intoto.StepSign] = [][]byte{stranger.pub}
			lay, err := intoto.New(c.owner.priv, f, time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			dir := c.links(t, c.rel, intoto.StepSign+"/"+string(c.signer.pub))
			mb, name, _ := intoto.Link(intoto.StepSign, c.rel, stranger.priv, nil)
			mb.Dump(filepath.Join(dir, name))
			return intoto.Check(lay, [][]byte{c.owner.pub}, dir, c.rel)
		}, "does not allow to perform step sign"},
		{"review of other qualification reports", func(t *testing.T) error {
			other := intoto.Records{}
			for n, h := range c.records {
				other[n] = h
			}
			other["qualification/report-2.json"] = map[string]string{"sha256": strings.Repeat("c", 64)}
			return intoto.Check(good, [][]byte{c.owner.pub}, c.linksWith(t, c.rel, "", c.records, other), c.rel)
		}, "artifact verification failed for Step 'review', materials [qualification/report-2.json] disallowed"},
		{"review of a part of the qualification reports", func(t *testing.T) error {
			part := intoto.Records{}
			for n, h := range c.records {
				if n != "evidence/"+strings.Repeat("b", 64) {
					part[n] = h
				}
			}
			return intoto.Check(good, [][]byte{c.owner.pub}, c.linksWith(t, c.rel, "", c.records, part), c.rel)
		}, "step review materials are not the reports step qualify produced: evidence/bbbb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check(t)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := intoto.New(c.owner.priv, intoto.Functionaries{intoto.StepQualify: {c.validatorA.pub}}, time.Now()); err == nil {
		t.Errorf("a layout with missing steps was created")
	}
	f := c.functionaries()
	f[intoto.StepQualify] = [][]byte{c.validatorA.pub}
	if _, err := intoto.New(c.owner.priv, f, time.Now()); err == nil || !strings.Contains(err.Error(), "two validator keys") {
		t.Errorf("a layout with one validator: %v", err)
	}
	var _ toto.Metablock
	for _, step := range []string{intoto.StepMaterialize, intoto.StepBuild, intoto.StepSign} {
		if _, _, err := intoto.Link(step, c.rel, c.builder.priv, c.records); err == nil || !strings.Contains(err.Error(), "takes no qualification reports") {
			t.Errorf("a %s link with reports: %v", step, err)
		}
	}
	if _, _, err := intoto.Link(intoto.StepQualify, c.rel, c.validatorA.priv, nil); err == nil || !strings.Contains(err.Error(), "0 qualification report(s)") {
		t.Errorf("a qualify link without reports: %v", err)
	}
}

func TestQualificationRecords(t *testing.T) {
	dir := t.TempDir()
	ev := strings.Repeat("d", 64)
	pass1, pass2 := reportPair(t, dir, ev, strings.Repeat("e", 64))
	fail, _ := writeReport(t, dir, "report-3.json", "FAIL", ev, "")
	unrelated, _ := writeReport(t, dir, "report-4.json", "PASS", ev, strings.Repeat("0", 64))
	lone, _ := writeReport(t, dir, "report-5.json", "PASS", strings.Repeat("c", 64), "")
	sub := filepath.Join(dir, "other")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	sameName, _ := writeReport(t, sub, "report-1.json", "PASS", strings.Repeat("f", 64), "")
	notReport := filepath.Join(dir, "review.json")
	if err := os.WriteFile(notReport, []byte(`{"schema":"cacheon.integration-record.v1","decision":"PASS"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := intoto.QualificationRecords([]string{pass1, pass2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got["evidence/"+ev]["sha256"] != ev || len(got["qualification/report-1.json"]["sha256"]) != 64 {
		t.Errorf("records %v, want two reports and their two evidence digests", got)
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"one report", []string{pass1}, "1 qualification report(s) given"},
		{"a failed qualification", []string{pass1, fail}, fail + `: decision "FAIL"`},
		{"not a qualification report", []string{pass1, notReport}, notReport + `: schema "cacheon.integration-record.v1"`},
		{"one report twice", []string{pass1, pass2, pass1}, pass1 + ": the same bytes as " + pass1},
		{"two reports of one name", []string{pass1, sameName}, "a second report named report-1.json"},
		{"two first qualifications", []string{pass1, lone}, "reproduces another on exchanged lanes"},
		{"a reproduction of another qualification", []string{pass1, unrelated}, "reproduces another on exchanged lanes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := intoto.QualificationRecords(tc.paths); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
