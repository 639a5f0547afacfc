package sbom

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// The packages built from the repository's own source declare its
// license; everything else says NOASSERTION rather than guess.
func TestLicensesAreDeclaredHonestly(t *testing.T) {
	b, err := Generate(input())
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	type lic struct{ declared, concluded, copyright string }
	want := map[string]lic{
		idSubstrate: {ProjectLicense, ProjectLicense, ProjectCopyright},
		idEntry:     {ProjectLicense, noAssertion, ProjectCopyright},
		idImage:     {noAssertion, noAssertion, noAssertion},
		idBase:      {noAssertion, noAssertion, noAssertion},
		idTree:      {noAssertion, noAssertion, noAssertion},
		idModel:     {noAssertion, noAssertion, noAssertion},
		"SPDXRef-Contribution-activation.silu-and-mul": {noAssertion, noAssertion, noAssertion},
	}
	for _, p := range d.Packages {
		w, ok := want[p.SPDXID]
		if !ok {
			t.Errorf("package %s not in the table", p.SPDXID)
			continue
		}
		if got := (lic{p.LicenseDeclared, p.LicenseConcluded, p.CopyrightText}); got != w {
			t.Errorf("package %s: declared/concluded/copyright %q, want %q", p.SPDXID, got, w)
		}
		delete(want, p.SPDXID)
	}
	if len(want) != 0 {
		t.Errorf("packages missing: %v", want)
	}
	// Files follow their package: the substrate's are the repository's
	// source, the engine tree's are the contributions'.
	fileWant := map[string]lic{
		"./cacheon/substrate/s.py":   {"", ProjectLicense, ProjectCopyright},
		"./cacheon/engine-tree/a.py": {"", noAssertion, noAssertion},
		"./cacheon/engine-tree/b.py": {"", noAssertion, noAssertion},
	}
	for _, f := range d.Files {
		if got := (lic{"", f.LicenseConcluded, f.CopyrightText}); got != fileWant[f.FileName] {
			t.Errorf("file %s: concluded/copyright %q, want %q", f.FileName, got, fileWant[f.FileName])
		}
		delete(fileWant, f.FileName)
	}
	if len(fileWant) != 0 {
		t.Errorf("files missing: %v", fileWant)
	}
}

// The license the SBOM declares is the LICENSE at the repository's root:
// the standard Apache-2.0 text, byte for byte, with the project's
// copyright line in its appendix.
func TestProjectLicenseIsTheRepositoryLicense(t *testing.T) {
	b, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	line := "   " + ProjectCopyright + "\n"
	if ProjectLicense != "Apache-2.0" || strings.Count(text, line) != 1 {
		t.Fatalf("LICENSE lacks the copyright line %q", line)
	}
	// The text as apache.org publishes it (LICENSE-2.0.txt).
	const standard = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
	sum := sha256.Sum256([]byte(strings.Replace(text, line, "   Copyright [yyyy] [name of copyright owner]\n", 1)))
	if got := hex.EncodeToString(sum[:]); got != standard {
		t.Errorf("LICENSE is not the standard Apache-2.0 text apart from its copyright line: sha256 %s, want %s", got, standard)
	}
}
