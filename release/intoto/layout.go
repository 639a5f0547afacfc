// Package layout states the release supply chain as a signed in-toto
// layout and checks a verified release against it.
//
// The chain has five steps, each performed by the functionaries whose
// public keys the layout lists:
//
//	qualify      two validators (threshold 2, distinct keys) attest the
//	             crowned selected payload of every integrated target and
//	             the qualification reports (with the evidence they
//	             reference) the crown rests on
//	review       the integration reviewer turns each payload, on those
//	             reports, into reviewed source and a review record
//	materialize  the builder materializes the release stack from that
//	             source into the engine tree
//	build        the builder builds the image and its provenance from the
//	             records and the tree
//	sign         the release key signs the provenance
//
// Artifact rules chain the steps: what review consumes must be what
// qualify produced, and so on down to the bundle. The reports are records
// (records.go): the release does not hold them, so the rules alone bind
// them, and Check requires the qualify links to name at least two and the
// review link to consume exactly those. Links are in-toto link
// metadata signed by each functionary (Link creates them from a release);
// Check runs in-toto's verification (layout signature and expiry, link
// signatures and thresholds, artifact rules) and then binds the final
// products to the release that was verified: the image, the bundle, the
// records, the tree and the payloads must be the ones the links name.
package intoto

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	toto "github.com/in-toto/in-toto-golang/in_toto"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/verify"
)

// Step names.
const (
	StepQualify     = "qualify"
	StepReview      = "review"
	StepMaterialize = "materialize"
	StepBuild       = "build"
	StepSign        = "sign"
)

// Steps in supply-chain order.
var Steps = []string{StepQualify, StepReview, StepMaterialize, StepBuild, StepSign}

// Artifact names used in links.
const (
	artImage      = "image"
	artProvenance = "provenance.json"
	artBundle     = "bundle.json"
	artTree       = "engine-tree"
	artStack      = "stack/release-manifest.json"
	prefPayload   = "payload/"
	prefSource    = "source/"
	prefReview    = "review/"
)

// Functionaries maps each step to the PEM public keys allowed to perform
// it.
type Functionaries map[string][][]byte

// inTotoKey loads a PEM key (private or public) as an in-toto key.
func inTotoKey(pem []byte) (toto.Key, error) {
	var k toto.Key
	if err := k.LoadKeyReaderDefaults(bytes.NewReader(pem)); err != nil {
		return toto.Key{}, err
	}
	return k, nil
}

// KeyID returns the in-toto key id of a PEM public key.
func KeyID(pem []byte) (string, error) {
	k, err := inTotoKey(pem)
	if err != nil {
		return "", err
	}
	return k.KeyID, nil
}

// New returns the release layout, signed by the project owner's key
// (ownerPEM, PKCS#8), valid until expires.
func New(ownerPEM []byte, f Functionaries, expires time.Time) (*toto.Metablock, error) {
	owner, err := inTotoKey(ownerPEM)
	if err != nil {
		return nil, fmt.Errorf("owner key: %w", err)
	}
	keys := map[string]toto.Key{}
	ids := map[string][]string{}
	for _, step := range Steps {
		pems := f[step]
		if len(pems) == 0 {
			return nil, fmt.Errorf("step %s: no functionary key", step)
		}
		for _, p := range pems {
			k, err := inTotoKey(p)
			if err != nil {
				return nil, fmt.Errorf("step %s: %w", step, err)
			}
			if k.KeyVal.Private != "" {
				return nil, fmt.Errorf("step %s: a functionary key in a layout must be public", step)
			}
			keys[k.KeyID] = k
			ids[step] = append(ids[step], k.KeyID)
		}
		sort.Strings(ids[step])
	}
	if len(ids[StepQualify]) < 2 {
		return nil, fmt.Errorf("step %s needs at least two validator keys (two independent qualifications)", StepQualify)
	}
	rule := func(r ...string) []string { return r }
	step := func(name string, threshold int, materials, products [][]string, cmd []string) toto.Step {
		return toto.Step{
			Type: "step", PubKeys: ids[name], Threshold: threshold, ExpectedCommand: cmd,
			SupplyChainItem: toto.SupplyChainItem{Name: name, ExpectedMaterials: materials, ExpectedProducts: products},
		}
	}
	l := toto.Layout{
		Type:    "layout",
		Expires: expires.UTC().Format(toto.ISO8601DateSchema),
		Keys:    keys,
		Readme:  "Cacheon Engine release supply chain: two qualifications, integration review, materialization, build, signature.",
		Inspect: []toto.Inspection{},
		Steps: []toto.Step{
			step(StepQualify, 2, [][]string{rule("DISALLOW", "*")},
				[][]string{rule("CREATE", prefPayload+"*"), rule("CREATE", prefQualification+"*"), rule("CREATE", prefEvidence+"*"),
					rule("DISALLOW", "*")}, []string{"cacheon", "qualify"}),
			step(StepReview, 1,
				[][]string{rule("MATCH", prefPayload+"*", "WITH", "PRODUCTS", "FROM", StepQualify),
					rule("MATCH", prefQualification+"*", "WITH", "PRODUCTS", "FROM", StepQualify),
					rule("MATCH", prefEvidence+"*", "WITH", "PRODUCTS", "FROM", StepQualify), rule("DISALLOW", "*")},
				[][]string{rule("CREATE", prefSource+"*"), rule("CREATE", prefReview+"*"), rule("DISALLOW", "*")},
				[]string{"cacheon", "release", "review"}),
			step(StepMaterialize, 1,
				[][]string{rule("MATCH", prefSource+"*", "WITH", "PRODUCTS", "FROM", StepReview), rule("ALLOW", artStack), rule("DISALLOW", "*")},
				[][]string{rule("CREATE", artTree), rule("DISALLOW", "*")},
				[]string{"cacheon", "stack", "materialize"}),
			step(StepBuild, 1,
				[][]string{rule("MATCH", prefReview+"*", "WITH", "PRODUCTS", "FROM", StepReview),
					rule("MATCH", artTree, "WITH", "PRODUCTS", "FROM", StepMaterialize), rule("DISALLOW", "*")},
				[][]string{rule("CREATE", artImage), rule("CREATE", artProvenance), rule("DISALLOW", "*")},
				[]string{"cacheon", "release", "build"}),
			step(StepSign, 1,
				[][]string{rule("MATCH", artImage, "WITH", "PRODUCTS", "FROM", StepBuild),
					rule("MATCH", artProvenance, "WITH", "PRODUCTS", "FROM", StepBuild), rule("DISALLOW", "*")},
				[][]string{rule("CREATE", artBundle), rule("DISALLOW", "*")},
				[]string{"cacheon", "release", "sign"}),
		},
	}
	mb := &toto.Metablock{Signed: l}
	if err := mb.Sign(owner); err != nil {
		return nil, fmt.Errorf("sign layout: %w", err)
	}
	return mb, nil
}

// Artifacts are the materials and products of one step of a release.
type Artifacts struct {
	Materials map[string]toto.HashObj
	Products  map[string]toto.HashObj
}

func sha(hex string) toto.HashObj { return toto.HashObj{"sha256": hex} }

// StepArtifacts derives what step consumed and produced for the verified
// release rel, as its functionary attests it.
func StepArtifacts(step string, rel *verify.Release) (*Artifacts, error) {
	a := &Artifacts{Materials: map[string]toto.HashObj{}, Products: map[string]toto.HashObj{}}
	d := rel.Descriptor
	payloads := func(m map[string]toto.HashObj) {
		for _, in := range d.Integrations {
			m[prefPayload+in.TargetID] = sha(in.SelectedPayloadDigest)
		}
	}
	reviews := func(m map[string]toto.HashObj) {
		for _, in := range d.Integrations {
			m[prefReview+in.TargetID+".json"] = sha(in.RecordSHA256)
		}
	}
	sources := func(m map[string]toto.HashObj) {
		for _, in := range d.Integrations {
			m[prefSource+in.TargetID] = sha(in.IntegratedSourceTreeDigest)
		}
	}
	switch step {
	case StepQualify:
		payloads(a.Products)
	case StepReview:
		payloads(a.Materials)
		sources(a.Products)
		reviews(a.Products)
	case StepMaterialize:
		sources(a.Materials)
		a.Materials[artStack] = sha(descriptor.SHA256(rel.Files[descriptor.ManifestPath]))
		a.Products[artTree] = sha(d.EngineTreeDigest)
	case StepBuild:
		reviews(a.Materials)
		a.Materials[artTree] = sha(d.EngineTreeDigest)
		a.Products[artImage] = sha(rel.Image.Digest.Hex)
		a.Products[artProvenance] = sha(descriptor.SHA256(rel.Statement))
	case StepSign:
		a.Materials[artImage] = sha(rel.Image.Digest.Hex)
		a.Materials[artProvenance] = sha(descriptor.SHA256(rel.Statement))
		a.Products[artBundle] = sha(descriptor.SHA256(rel.Bundle))
	default:
		return nil, fmt.Errorf("unknown step %q (want one of %s)", step, strings.Join(Steps, ", "))
	}
	return a, nil
}

// Link signs the link of step for rel with the functionary's PKCS#8 PEM
// key, and returns it with its conventional file name
// (<step>.<keyid prefix>.link). The qualify link produces records (the
// qualification reports, QualificationRecords) and the review link
// consumes them; the other steps take none.
func Link(step string, rel *verify.Release, functionaryPEM []byte, records Records) (*toto.Metablock, string, error) {
	k, err := inTotoKey(functionaryPEM)
	if err != nil {
		return nil, "", err
	}
	if k.KeyVal.Private == "" {
		return nil, "", errors.New("a link is signed with a private key")
	}
	a, err := StepArtifacts(step, rel)
	if err != nil {
		return nil, "", err
	}
	switch {
	case step == StepQualify || step == StepReview:
		if n := records.reports(); n < minQualifications {
			return nil, "", fmt.Errorf("step %s: %d qualification report(s): the link names the %d independent qualifications the crown rests on", step, n, minQualifications)
		}
		side := a.Products
		if step == StepReview {
			side = a.Materials
		}
		for n, h := range records {
			if !isRecord(n) {
				return nil, "", fmt.Errorf("step %s: record %s is neither a qualification report nor evidence", step, n)
			}
			side[n] = h
		}
	case len(records) > 0:
		return nil, "", fmt.Errorf("step %s takes no qualification reports (only %s and %s do)", step, StepQualify, StepReview)
	}
	cmd := map[string][]string{
		StepQualify: {"cacheon", "qualify"}, StepReview: {"cacheon", "release", "review"},
		StepMaterialize: {"cacheon", "stack", "materialize"}, StepBuild: {"cacheon", "release", "build"},
		StepSign: {"cacheon", "release", "sign"},
	}[step]
	mb := &toto.Metablock{Signed: toto.Link{
		Type: "link", Name: step, Materials: a.Materials, Products: a.Products,
		ByProducts: map[string]interface{}{}, Command: cmd, Environment: map[string]interface{}{},
	}}
	if err := mb.Sign(k); err != nil {
		return nil, "", fmt.Errorf("sign %s link: %w", step, err)
	}
	return mb, fmt.Sprintf(toto.LinkNameFormat, step, k.KeyID), nil
}

// Load reads a signed layout file.
func Load(path string) (*toto.Metablock, error) {
	var mb toto.Metablock
	if err := mb.Load(path); err != nil {
		return nil, fmt.Errorf("load layout %s: %w", path, err)
	}
	if _, ok := mb.Signed.(toto.Layout); !ok {
		return nil, fmt.Errorf("%s is not an in-toto layout", path)
	}
	return &mb, nil
}

// Check verifies the release rel (already verified by release/verify)
// against the layout signed by one of ownerKeys (PEM public keys), with
// the links in linkDir.
func Check(mb *toto.Metablock, ownerPEMs [][]byte, linkDir string, rel *verify.Release) error {
	keys := map[string]toto.Key{}
	for _, p := range ownerPEMs {
		k, err := inTotoKey(p)
		if err != nil {
			return fmt.Errorf("layout key: %w", err)
		}
		keys[k.KeyID] = k
	}
	if _, err := toto.InTotoVerify(mb, keys, linkDir, "", nil, nil, false); err != nil {
		return fmt.Errorf("in-toto verification: %w", err)
	}
	// The links verified among themselves; now they must describe this
	// release, and rest on two qualifications the review consumed.
	var produced, consumed Records
	for _, step := range Steps {
		want, err := StepArtifacts(step, rel)
		if err != nil {
			return err
		}
		got, err := readStep(mb, linkDir, step)
		if err != nil {
			return err
		}
		materials, inputs := split(got.Materials)
		products, outputs := split(got.Products)
		switch step {
		case StepQualify:
			produced = outputs
		case StepReview:
			consumed = inputs
		}
		for _, side := range []struct {
			name      string
			want, got map[string]toto.HashObj
		}{{"materials", want.Materials, materials}, {"products", want.Products, products}} {
			if err := sameArtifacts(side.want, side.got, "the release", "the link"); err != nil {
				return fmt.Errorf("step %s %s do not describe this release: %w", step, side.name, err)
			}
		}
	}
	if n := produced.reports(); n < minQualifications {
		return fmt.Errorf("step %s: the links name %d qualification report(s); a crown rests on %d independent qualifications", StepQualify, n, minQualifications)
	}
	if err := sameArtifacts(produced, consumed, "the qualify links' products", "the review link's materials"); err != nil {
		return fmt.Errorf("step %s materials are not the reports step %s produced: %w", StepReview, StepQualify, err)
	}
	// The key that signed the release must be a sign-step functionary.
	pem, err := key.MarshalPublic(rel.SignerPublic)
	if err != nil {
		return fmt.Errorf("release signing key: %w", err)
	}
	id, err := KeyID(pem)
	if err != nil {
		return err
	}
	for _, s := range mb.Signed.(toto.Layout).Steps {
		if s.Name != StepSign {
			continue
		}
		for _, allowed := range s.PubKeys {
			if allowed == id {
				return nil
			}
		}
	}
	return fmt.Errorf("the release is signed by key %s (in-toto key id %s), which the layout does not allow to perform step %s", rel.Report.KeyID, id, StepSign)
}

func readStep(mb *toto.Metablock, linkDir, step string) (*Artifacts, error) {
	lay := mb.Signed.(toto.Layout)
	for _, s := range lay.Steps {
		if s.Name != step {
			continue
		}
		for _, id := range s.PubKeys {
			p := filepath.Join(linkDir, fmt.Sprintf(toto.LinkNameFormat, step, id))
			if _, err := os.Stat(p); err != nil {
				continue
			}
			var link toto.Metablock
			if err := link.Load(p); err != nil {
				return nil, err
			}
			l, ok := link.Signed.(toto.Link)
			if !ok {
				return nil, fmt.Errorf("%s is not a link", p)
			}
			return &Artifacts{Materials: l.Materials, Products: l.Products}, nil
		}
	}
	return nil, fmt.Errorf("no link for step %s", step)
}

// sameArtifacts compares two artifact sets; wantIn and gotIn name where
// each comes from in the message.
func sameArtifacts(want, got map[string]toto.HashObj, wantIn, gotIn string) error {
	var names []string
	for n := range want {
		names = append(names, n)
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if want[n]["sha256"] != got[n]["sha256"] {
			return fmt.Errorf("%s is sha256:%s in %s, sha256:%s in %s", n, orNone(want[n]["sha256"]), wantIn, orNone(got[n]["sha256"]), gotIn)
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}
