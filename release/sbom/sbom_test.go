package sbom

import (
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/descriptor"
)

func input() Input {
	h := strings.Repeat("ab", 32)
	return Input{
		ImageName: "cacheon-engine:1.0", ImageDigest: "sha256:" + h, BaseName: "scratch", BaseDigest: "sha256:" + h,
		EngineTree: h, Substrate: h, ModelContent: h, ModelReceipt: h, ReleaseDigest: h, Creator: "Tool: test",
		EngineFiles: []File{{Path: "cacheon/engine-tree/b.py", SHA1: strings.Repeat("1", 40), SHA256: h},
			{Path: "cacheon/engine-tree/a.py", SHA1: strings.Repeat("2", 40), SHA256: h}},
		SubstrateFiles: []File{{Path: "cacheon/substrate/s.py", SHA1: strings.Repeat("3", 40), SHA256: h}},
		Entrypoint:     File{Path: "cacheon/bin/cacheon", SHA1: strings.Repeat("4", 40), SHA256: h},
		Contributions:  []Contribution{{TargetID: "activation.silu_and_mul", IntegratedSourceTreeDigest: h, ReviewCommit: strings.Repeat("f", 40), Reviewer: "Ada"}},
	}
}

func TestGenerateIsAValidDeterministicSPDXDocument(t *testing.T) {
	a, err := Generate(input())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(input())
	if string(a) != string(b) {
		t.Fatal("two generations differ")
	}
	d, err := Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	if d.CreationInfo.Created != "1970-01-01T00:00:00Z" || d.DocumentDescribes[0] != idImage {
		t.Errorf("document %+v", d.CreationInfo)
	}
	files := map[string]bool{}
	for _, f := range d.Files {
		files[f.FileName] = len(f.Checksums) == 2 && f.Checksums[0].Algorithm == "SHA1"
	}
	for _, p := range []string{"./cacheon/engine-tree/a.py", "./cacheon/engine-tree/b.py", "./cacheon/substrate/s.py"} {
		if !files[p] {
			t.Errorf("file %s missing or without SHA1+SHA256", p)
		}
	}
	var pkgs []string
	for _, p := range d.Packages {
		pkgs = append(pkgs, p.SPDXID)
		if p.FilesAnalyzed && (p.VerificationCode == nil || len(p.HasFiles) == 0) {
			t.Errorf("package %s analyzes files but has no verification code or files", p.SPDXID)
		}
	}
	if !strings.Contains(strings.Join(pkgs, " "), "SPDXRef-Contribution-activation.silu-and-mul") {
		t.Errorf("packages %v lack the contribution", pkgs)
	}
}

func TestParseRejects(t *testing.T) {
	good, _ := Generate(input())
	var doc map[string]any
	json.Unmarshal(good, &doc)
	cases := []struct {
		name   string
		change func(map[string]any)
		want   string
	}{
		{"version", func(d map[string]any) { d["spdxVersion"] = "SPDX-2.2" }, "not an SPDX 2.3"},
		{"namespace", func(d map[string]any) { delete(d, "documentNamespace") }, "documentNamespace"},
		{"dangling relationship", func(d map[string]any) {
			d["relationships"] = append(d["relationships"].([]any), map[string]any{"spdxElementId": "SPDXRef-Image", "relationshipType": "CONTAINS", "relatedSpdxElement": "SPDXRef-Nope"})
		}, "does not define"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d map[string]any
			json.Unmarshal(good, &d)
			c.change(d)
			b, _ := json.Marshal(d)
			if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	other := input()
	other.ModelContent = strings.Repeat("cd", 32)
	b, _ := Generate(other)
	if same, field := Equal(good, b); same || field != "packages" {
		t.Errorf("Equal = %v, %q", same, field)
	}
}

// FuzzParse feeds arbitrary bytes to the SPDX parser and the comparison
// the verifier runs on an attached SBOM.
func FuzzParse(f *testing.F) {
	good, err := Generate(input())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","dataLicense":"CC0-1.0","relationships":[{"spdxElementId":"x"}]}`))
	f.Add([]byte(`{"packages":[{}],"files":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := Parse(data); err != nil {
			return
		}
		if same, _ := Equal(data, data); !same {
			t.Fatalf("a document differs from itself")
		}
		Equal(good, data)
	})
}

// The modules a Go entrypoint links are packages it CONTAINS, each with
// its purl, beside the standard library of its toolchain.
func TestGoModulesOfTheEntrypoint(t *testing.T) {
	in := input()
	in.EntrypointGo = &GoBuild{GoVersion: "go1.26.8", MainModule: "github.com/cacheon/engine", Modules: []GoModule{
		{Path: "github.com/spf13/cobra", Version: "v1.10.2", Sum: "h1:abc="},
		{Path: "github.com/blang/semver", Version: "v3.5.1+incompatible"},
	}}
	b, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	purls := map[string]string{}
	for _, p := range d.Packages {
		for _, r := range p.ExternalRefs {
			if r.Type == "purl" {
				purls[p.SPDXID] = r.Locator
			}
		}
	}
	want := map[string]string{
		"SPDXRef-GoStdlib": "pkg:golang/stdlib@1.26.8",
		"SPDXRef-GoModule-github.com-spf13-cobra-v1.10.2":              "pkg:golang/github.com/spf13/cobra@v1.10.2",
		"SPDXRef-GoModule-github.com-blang-semver-v3.5.1-incompatible": "pkg:golang/github.com/blang/semver@v3.5.1%2Bincompatible",
	}
	for id, purl := range want {
		if purls[id] != purl {
			t.Errorf("%s purl %q, want %q", id, purls[id], purl)
		}
		found := false
		for _, r := range d.Relationships {
			found = found || (r.Element == idEntry && r.Type == "CONTAINS" && r.Related == id)
		}
		if !found {
			t.Errorf("no relationship %s CONTAINS %s", idEntry, id)
		}
	}
	// Without build information nothing is listed.
	in.EntrypointGo = nil
	b, _ = Generate(in)
	if strings.Contains(string(b), "pkg:golang") {
		t.Error("an entrypoint without Go build information lists modules")
	}
}

// GoBuildOf reads a real Go binary (this test's own) and nothing from a
// script.
func TestGoBuildOf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	g := GoBuildOf(bin)
	// What the binary says about itself at run time is what GoBuildOf
	// must read from its file: go test links module information,
	// rules_go's test binaries carry none.
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Path != "" {
		if g == nil || g.GoVersion != runtime.Version() || g.MainModule != info.Main.Path || len(g.Modules) != len(info.Deps) {
			t.Fatalf("GoBuildOf(this test binary) = %+v, want Go %s, main module %s, %d modules", g, runtime.Version(), info.Main.Path, len(info.Deps))
		}
	} else if g != nil {
		t.Fatalf("GoBuildOf(a binary without module information) = %+v, want nil", g)
	}
	if GoBuildOf([]byte("#!/bin/sh\necho not go\n")) != nil {
		t.Error("a shell script has Go build information")
	}
}

// The base image's OS packages are packages the base CONTAINS, with
// deb purls whose version characters are escaped.
func TestOSPackagesOfTheBase(t *testing.T) {
	in := input()
	in.BaseDistro = "debian-12"
	in.BasePackages = []descriptor.BasePackage{
		{Name: "libc6", Version: "2.36-9+deb12u14", Architecture: "amd64", Source: "glibc"},
		{Name: "zlib1g", Version: "1:1.2.13.dfsg-1+deb12u1", Architecture: "amd64", Source: "zlib"},
		{Name: "libstdc++6", Version: "12.2.0-14", Architecture: "amd64"},
	}
	b, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"SPDXRef-OSPackage-libc6-amd64":            "pkg:deb/debian/libc6@2.36-9%2Bdeb12u14?arch=amd64&distro=debian-12",
		"SPDXRef-OSPackage-zlib1g-amd64":           "pkg:deb/debian/zlib1g@1%3A1.2.13.dfsg-1%2Bdeb12u1?arch=amd64&distro=debian-12",
		"SPDXRef-OSPackage-libstdcplusplus6-amd64": "pkg:deb/debian/libstdc%2B%2B6@12.2.0-14?arch=amd64&distro=debian-12",
	}
	got := map[string]string{}
	for _, p := range d.Packages {
		for _, r := range p.ExternalRefs {
			if r.Type == "purl" && strings.HasPrefix(r.Locator, "pkg:deb/") {
				got[p.SPDXID] = r.Locator
			}
		}
	}
	for id, purl := range want {
		if got[id] != purl {
			t.Errorf("%s purl %q, want %q (all: %v)", id, got[id], purl, got)
		}
		found := false
		for _, r := range d.Relationships {
			found = found || (r.Element == idBase && r.Type == "CONTAINS" && r.Related == id)
		}
		if !found {
			t.Errorf("no relationship %s CONTAINS %s", idBase, id)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d deb packages, want %d", len(got), len(want))
	}
	// Without a distribution the namespace is debian and no distro
	// qualifier is claimed.
	if p := debPURL("", in.BasePackages[0]); p != "pkg:deb/debian/libc6@2.36-9%2Bdeb12u14?arch=amd64" {
		t.Errorf("purl without distro: %s", p)
	}
	if p := debPURL("ubuntu-22.04", in.BasePackages[0]); !strings.HasPrefix(p, "pkg:deb/ubuntu/libc6@") {
		t.Errorf("purl on ubuntu: %s", p)
	}
}
