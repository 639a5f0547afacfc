package provenance

import (
	"errors"
	"strings"
	"testing"
)

func sample() *Provenance {
	h := strings.Repeat("ab", 32)
	return &Provenance{
		Subjects:           []Resource{{Name: "img", Digest: map[string]string{"sha256": h}}},
		BuildType:          BuildType,
		ExternalParameters: map[string]string{"platform": "linux/amd64"},
		Dependencies: []Resource{{Name: "z", Digest: map[string]string{"sha256": h}},
			{Name: "a", URI: "oci:scratch", Digest: map[string]string{"cacheon.x": h}, Annotations: map[string]string{"k": "v"}}},
		BuilderID: BuilderID, BuilderVersion: map[string]string{"go": "go1.26.8"}, InvocationID: h, Epoch: 1767225600,
		Byproducts: []Resource{{Name: "sbom", MediaType: "application/spdx+json", Digest: map[string]string{"sha256": h}}},
	}
}

func TestStatementIsCanonicalAndRoundTrips(t *testing.T) {
	a, err := sample().Statement()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(a), " ") || strings.Contains(string(a), "\n") {
		t.Errorf("statement is not compact canonical JSON: %s", a)
	}
	b, _ := sample().Statement()
	if string(a) != string(b) {
		t.Fatal("two statements differ")
	}
	p, err := Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	if p.BuilderID != BuilderID || p.Epoch != 1767225600 || p.Dependencies[0].Name != "a" || p.Dependencies[0].Annotations["k"] != "v" {
		t.Errorf("parsed %+v", p)
	}
}

func TestStatementRejects(t *testing.T) {
	p := sample()
	p.Subjects[0].Digest = map[string]string{"sha256": "short"}
	if _, err := p.Statement(); err == nil {
		t.Error("a subject with a malformed sha256 was accepted")
	}
	good, _ := sample().Statement()
	if _, err := Parse([]byte(strings.Replace(string(good), PredicateType, "https://slsa.dev/provenance/v0.2", 1))); !errors.Is(err, ErrNotProvenance) {
		t.Errorf("err = %v, want ErrNotProvenance", err)
	}
	if _, err := Parse([]byte(`{"_type":"https://in-toto.io/Statement/v1"}`)); err == nil {
		t.Error("a statement without subjects parsed")
	}
}

// FuzzParse feeds arbitrary bytes to the in-toto statement parser, which
// runs on the signed payload of a bundle before any value is compared.
func FuzzParse(f *testing.F) {
	good, err := sample().Statement()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[],"predicateType":"` + PredicateType + `","predicate":{}}`))
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"x","digest":{"sha256":""}}],"predicateType":"x","predicate":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		// What parses must be usable: statements round-trip.
		if _, err := p.Statement(); err != nil {
			return
		}
		Find(p.Subjects, "image")
		Find(p.Byproducts, "sbom")
	})
}
