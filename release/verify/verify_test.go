package verify_test

import (
	"crypto"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	"github.com/cacheon/engine/release/layer"
	"github.com/cacheon/engine/release/provenance"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/release/verify"
)

func policyFor(t *testing.T, r *fixture.Release) *key.Policy {
	t.Helper()
	p, err := key.LoadPolicy(r.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func buildAndSign(t *testing.T, r *fixture.Release, plan func(*build.Plan)) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "release")
	p, err := build.Prepare(r.Inputs(out), nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan != nil {
		plan(p)
	}
	if _, err := p.Write(out, nil); err != nil {
		t.Fatal(err)
	}
	l, err := store.OpenLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	return out
}

func run(t *testing.T, dir string, p *key.Policy) (*verify.Release, error) {
	t.Helper()
	l, err := store.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	return verify.Run(l, verify.Options{Policy: p})
}

func TestVerifyAcceptsASignedRelease(t *testing.T) {
	for _, alg := range []key.Algorithm{key.Ed25519, key.ECDSAP256} {
		t.Run(string(alg), func(t *testing.T) {
			r := fixture.New(t)
			r.Signer, r.PrivateKey, r.PublicKey = fixture.Keys(t, r.Dir, "alg", alg)
			dir := buildAndSign(t, r, nil)
			rel, err := run(t, dir, policyFor(t, r))
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			rep := rel.Report
			if !rep.Verified || len(rep.Contributions) != 1 || rep.Contributions[0] != fixture.Target {
				t.Errorf("report %+v", rep)
			}
			for _, c := range rep.Checks {
				if !c.OK {
					t.Errorf("check %s not ok: %s", c.Name, c.Detail)
				}
			}
			if len(rep.Checks) < 15 {
				t.Errorf("only %d checks ran", len(rep.Checks))
			}
		})
	}
}

// --- layout surgery for the tamper tests ---------------------------------

func readIndex(t *testing.T, dir string) *v1.IndexManifest {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	im, err := v1.ParseIndexManifest(f)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func writeIndex(t *testing.T, dir string, im *v1.IndexManifest) {
	t.Helper()
	b, _ := json.Marshal(im)
	if err := os.WriteFile(filepath.Join(dir, "index.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// detach removes every artifact of type typ from the layout's index.
func detach(t *testing.T, dir, typ string) {
	im := readIndex(t, dir)
	var keep []v1.Descriptor
	for _, d := range im.Manifests {
		if d.ArtifactType != typ {
			keep = append(keep, d)
		}
	}
	im.Manifests = keep
	writeIndex(t, dir, im)
}

// attached is the data of the artifact of type typ (for bundles, the
// provenance's).
func attached(t *testing.T, dir, typ string) []byte { return fixture.Attached(t, dir, typ) }

func attach(t *testing.T, dir, typ string, data []byte) {
	l, _ := store.OpenLayout(dir)
	desc, _ := l.Resolve()
	if _, err := l.Attach(desc, store.Artifact{ArtifactType: typ, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// editStatement changes the signed statement and re-signs it with signer,
// replacing both the provenance artifact and the bundle.
func editStatement(t *testing.T, dir string, _ any, s *fixture.Release, edit func(map[string]any)) {
	stmt := attached(t, dir, store.ArtifactProvenance)
	var doc map[string]any
	if err := json.Unmarshal(stmt, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	v, _ := canonjson.Parse(mustJSON(t, doc))
	edited, err := canonjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	bundle, _, err := sign.Statement(edited, s.Signer)
	if err != nil {
		t.Fatal(err)
	}
	detach(t, dir, store.ArtifactProvenance)
	fixture.DetachBundle(t, dir)
	attach(t, dir, store.ArtifactProvenance, edited)
	attach(t, dir, store.ArtifactBundle, bundle)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func predicate(doc map[string]any) map[string]any { return doc["predicate"].(map[string]any) }

func byproduct(doc map[string]any, name string) map[string]any {
	for _, b := range predicate(doc)["runDetails"].(map[string]any)["byproducts"].([]any) {
		if m := b.(map[string]any); m["name"] == name {
			return m
		}
	}
	panic("no byproduct " + name)
}

func TestVerifyNamesTheTamperedThing(t *testing.T) {
	type tamper struct {
		name  string
		plan  func(*build.Plan)                                  // a builder that got it wrong
		after func(t *testing.T, dir string, r *fixture.Release) // an attacker who changed the output
		check string
		want  string
	}
	otherKey := func(t *testing.T, r *fixture.Release) crypto.Signer {
		s, _, _ := fixture.Keys(t, t.TempDir(), "attacker", key.Ed25519)
		return s
	}
	cases := []tamper{
		{name: "unsigned release", after: func(t *testing.T, dir string, r *fixture.Release) { detach(t, dir, store.ArtifactBundle) },
			check: verify.CheckAttestations, want: "no signature bundle"},
		{name: "missing provenance attestation", after: func(t *testing.T, dir string, r *fixture.Release) { detach(t, dir, store.ArtifactProvenance) },
			check: verify.CheckAttestations, want: "no provenance statement"},
		{name: "missing SBOM attestation", after: func(t *testing.T, dir string, r *fixture.Release) { detach(t, dir, store.ArtifactSBOM) },
			check: verify.CheckAttestations, want: "no SBOM"},
		{name: "signed by an untrusted key", after: func(t *testing.T, dir string, r *fixture.Release) {
			detach(t, dir, store.ArtifactBundle)
			l, _ := store.OpenLayout(dir)
			if _, err := sign.Release(l, otherKey(t, r)); err != nil {
				t.Fatal(err)
			}
		}, check: verify.CheckKeyPolicy, want: "not in the trusted key policy"},
		{name: "wrongly signed bundle claiming the trusted key", after: func(t *testing.T, dir string, r *fixture.Release) {
			b := attached(t, dir, store.ArtifactBundle)
			stmt := attached(t, dir, store.ArtifactProvenance)
			forged, _, err := sign.Statement(stmt, otherKey(t, r))
			if err != nil {
				t.Fatal(err)
			}
			var good, bad map[string]any
			json.Unmarshal(b, &good)
			json.Unmarshal(forged, &bad)
			bad["verificationMaterial"] = good["verificationMaterial"] // the trusted key's hint
			detach(t, dir, store.ArtifactBundle)
			attach(t, dir, store.ArtifactBundle, mustJSON(t, bad))
		}, check: verify.CheckSignature, want: "does not verify"},
		{name: "statement payload changed under the signature", after: func(t *testing.T, dir string, r *fixture.Release) {
			b := attached(t, dir, store.ArtifactBundle)
			var doc map[string]any
			json.Unmarshal(b, &doc)
			env := doc["dsseEnvelope"].(map[string]any)
			stmt := attached(t, dir, store.ArtifactProvenance)
			env["payload"] = []byte(strings.Replace(string(stmt), "cacheon-engine:test", "cacheon-engine:evil", 1))
			detach(t, dir, store.ArtifactBundle)
			attach(t, dir, store.ArtifactBundle, mustJSON(t, doc))
		}, check: verify.CheckSignature, want: "does not verify"},
		{name: "swapped layer", after: func(t *testing.T, dir string, r *fixture.Release) {
			l, _ := store.OpenLayout(dir)
			desc, _ := l.Resolve()
			raw, _ := store.ReadManifest(l, desc)
			m, _ := v1.ParseManifest(strings.NewReader(string(raw)))
			blob := filepath.Join(dir, "blobs", "sha256", m.Layers[0].Digest.Hex)
			other, _ := os.ReadFile(filepath.Join(dir, "blobs", "sha256", m.Layers[1].Digest.Hex))
			os.WriteFile(blob, other, 0o644)
		}, check: verify.CheckBlobs, want: "do not match the descriptor"},
		{name: "image replaced under the signature", after: func(t *testing.T, dir string, r *fixture.Release) {
			// An attacker moves the valid attestations onto another image.
			var datas = map[string][]byte{}
			for _, typ := range []string{store.ArtifactBundle, store.ArtifactProvenance, store.ArtifactSBOM} {
				datas[typ] = attached(t, dir, typ)
			}
			other := buildAndSign(t, r, func(p *build.Plan) { p.Epoch++; p.Opts.Epoch++ })
			entries, _ := os.ReadDir(filepath.Join(other, "blobs", "sha256"))
			for _, e := range entries {
				b, _ := os.ReadFile(filepath.Join(other, "blobs", "sha256", e.Name()))
				os.WriteFile(filepath.Join(dir, "blobs", "sha256", e.Name()), b, 0o644)
			}
			im := readIndex(t, other)
			var img []v1.Descriptor
			for _, d := range im.Manifests {
				if d.ArtifactType == "" {
					img = append(img, d)
				}
			}
			writeIndex(t, dir, &v1.IndexManifest{SchemaVersion: 2, MediaType: im.MediaType, Manifests: img})
			for typ, data := range datas {
				attach(t, dir, typ, data)
			}
		}, check: verify.CheckSubjects, want: "but the image in"},
		{name: "predicate type", after: func(t *testing.T, dir string, r *fixture.Release) {
			editStatement(t, dir, nil, r, func(doc map[string]any) { doc["predicateType"] = "https://slsa.dev/provenance/v0.2" })
		}, check: verify.CheckPredicate, want: "predicateType"},
		{name: "builder id", after: func(t *testing.T, dir string, r *fixture.Release) {
			editStatement(t, dir, nil, r, func(doc map[string]any) {
				predicate(doc)["runDetails"].(map[string]any)["builder"].(map[string]any)["id"] = "https://ci.example/evil"
			})
		}, check: verify.CheckBuilder, want: "builder.id"},
		{name: "engine tree subject", after: func(t *testing.T, dir string, r *fixture.Release) {
			editStatement(t, dir, nil, r, func(doc map[string]any) {
				doc["subject"].([]any)[1].(map[string]any)["digest"] = map[string]any{"cacheon.materialized-engine-tree": strings.Repeat("ab", 32)}
			})
		}, check: verify.CheckEngineTree, want: "the signed subject"},
		{name: "SBOM swapped for another", after: func(t *testing.T, dir string, r *fixture.Release) {
			sb := strings.Replace(string(attached(t, dir, store.ArtifactSBOM)), "SPDXRef-Model", "SPDXRef-Modle", -1)
			detach(t, dir, store.ArtifactSBOM)
			attach(t, dir, store.ArtifactSBOM, []byte(sb))
		}, check: verify.CheckSBOM, want: "no attached SBOM hashes to"},
		{name: "SBOM that does not describe the image", after: func(t *testing.T, dir string, r *fixture.Release) {
			sb := strings.Replace(string(attached(t, dir, store.ArtifactSBOM)), "engine-tree", "engine-tr3e", 1)
			detach(t, dir, store.ArtifactSBOM)
			attach(t, dir, store.ArtifactSBOM, []byte(sb))
			editStatement(t, dir, nil, r, func(doc map[string]any) {
				byproduct(doc, provenance.ByproductSBOM)["digest"] = map[string]any{"sha256": descriptor.SHA256([]byte(sb))}
			})
		}, check: verify.CheckSBOM, want: "does not describe this image"},
		{name: "provenance dependency", after: func(t *testing.T, dir string, r *fixture.Release) {
			editStatement(t, dir, nil, r, func(doc map[string]any) {
				for _, d := range predicate(doc)["buildDefinition"].(map[string]any)["resolvedDependencies"].([]any) {
					if m := d.(map[string]any); m["name"] == provenance.DepBaseImage {
						m["digest"] = map[string]any{"sha256": strings.Repeat("cd", 32)}
					}
				}
			})
		}, check: verify.CheckProvenance, want: "not the one this image's contents give"},
		{name: "integrated entry without its review record", plan: func(p *build.Plan) {
			rel := &p.Layers[3]
			var keep []layer.Entry
			for _, e := range rel.Entries {
				if !strings.HasPrefix(e.Path, descriptor.ReviewDir) {
					keep = append(keep, e)
				}
			}
			rel.Entries = keep
		}, check: verify.CheckIntegrations, want: "has no integration review record"},
		{name: "engine tree file changed", plan: func(p *build.Plan) {
			tree := &p.Layers[2]
			for i, e := range tree.Entries {
				if strings.HasSuffix(e.Path, "silu_and_mul.py") {
					tree.Entries[i] = layer.Entry{Path: e.Path, Data: []byte("import os\nos.system('evil')\n")}
				}
			}
		}, check: verify.CheckEngineTree, want: "does not pass the materializer's check"},
		{name: "substrate file changed", plan: func(p *build.Plan) {
			sub := &p.Layers[0]
			sub.Entries = append(sub.Entries, layer.Entry{Path: descriptor.SubstrateDir + "/sitecustomize.py", Data: []byte("evil")})
		}, check: verify.CheckSubstrate, want: "content hash"},
		{name: "entrypoint binary changed", plan: func(p *build.Plan) {
			p.Layers[1].Entries = []layer.Entry{{Path: descriptor.EntrypointPath, Data: []byte("#!/bin/sh\nexec evil\n"), Executable: true}}
		}, check: verify.CheckEntrypoint, want: "the descriptor says"},
		{name: "model receipt changed", plan: func(p *build.Plan) {
			p.Descriptor.Model.ReceiptSHA256 = strings.Repeat("ef", 32)
		}, check: verify.CheckModelReceipt, want: "does not hash to"},
		{name: "file outside the layer's directory", plan: func(p *build.Plan) {
			p.Layers[2].Entries = append(p.Layers[2].Entries, layer.Entry{Path: "usr/lib/python3/evil.py", Data: []byte("x")})
		}, check: verify.CheckBlobs, want: "is outside cacheon/engine-tree/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := fixture.New(t)
			dir := buildAndSign(t, r, c.plan)
			if c.after != nil {
				c.after(t, dir, r)
			}
			rel, err := run(t, dir, policyFor(t, r))
			var f *verify.Failure
			if !errors.As(err, &f) {
				t.Fatalf("err = %v, want a failed %s check", err, c.check)
			}
			if f.Check != c.check || !strings.Contains(f.Err.Error(), c.want) {
				t.Fatalf("failed check %s: %v\nwant check %s saying %q", f.Check, f.Err, c.check, c.want)
			}
			if rel.Report.Verified {
				t.Errorf("report says verified")
			}
		})
	}
}

func TestVerifyEnforcesKeyExpiry(t *testing.T) {
	r := fixture.New(t)
	dir := buildAndSign(t, r, nil)
	pub, _ := os.ReadFile(r.PublicKey)
	doc := map[string]any{"type": key.PolicyType, "keys": []any{map[string]any{
		"public_key": string(pub), "not_before": "2020-01-01T00:00:00Z", "not_after": "2021-01-01T00:00:00Z"}}}
	p, err := key.ParsePolicy(mustJSON(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := store.OpenLayout(dir)
	_, err = verify.Run(l, verify.Options{Policy: p, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	var f *verify.Failure
	if !errors.As(err, &f) || f.Check != verify.CheckKeyPolicy || !strings.Contains(err.Error(), "expired at 2021-01-01T00:00:00Z") {
		t.Fatalf("err = %v, want key-policy expiry", err)
	}
	if _, err := verify.Run(l, verify.Options{Policy: p, Now: time.Date(2020, 6, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatalf("inside the window: %v", err)
	}
}
