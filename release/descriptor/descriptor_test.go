package descriptor

import (
	"strings"
	"testing"
)

func valid() *Descriptor {
	h := strings.Repeat("ab", 32)
	return &Descriptor{
		Type: Type, SchemaVersion: SchemaVersion, ReleaseManifestDigest: h, EngineTreeDigest: h, CatalogDigest: h,
		RuntimeDigest: h, BaseEngineDigest: h, SubstrateDigest: h, Integrations: []Integration{},
		Model:      Model{ContentDigest: h, ReceiptDigest: h, ReceiptSHA256: h},
		BaseImage:  BaseImage{Name: "scratch", Digest: "sha256:" + h, Platform: "linux/amd64", Layers: []string{}},
		Entrypoint: Entrypoint{SHA256: h, Size: 1},
		Serve:      Serve{Command: []string{"python3"}, Environment: []string{"A=1", "B=2"}, ModelMount: "/cacheon/model"},
		Toolchain:  Toolchain{GoVersion: "go1.26.8", Compression: "gzip"},
	}
}

func TestMarshalParseRoundTrip(t *testing.T) {
	b, err := valid().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Digest(); got == "" {
		t.Error("no digest")
	}
	if _, err := Parse([]byte(strings.Replace(string(b), `{"base_engine_digest"`, `{ "base_engine_digest"`, 1))); err == nil {
		t.Error("non-canonical descriptor parsed")
	}
	if _, err := Parse([]byte(strings.Replace(string(b), `"type":`, `"extra":1,"type":`, 1))); err == nil {
		t.Error("descriptor with an unknown field parsed")
	}
	// The entrypoint's source is optional: without it the bytes are
	// those of a descriptor that never knew the field.
	if strings.Contains(string(b), `"source":`) {
		t.Error("a descriptor without an entrypoint source mentions one")
	}
	withSource := valid()
	withSource.Entrypoint.Source = &EntrypointSource{Repository: "https://example.com/cacheon.git", Commit: strings.Repeat("f", 40), BazelTarget: "//tools/cmd/cacheon"}
	b, err = withSource.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = Parse(b); err != nil || d.Entrypoint.Source == nil || d.Entrypoint.Source.Commit != strings.Repeat("f", 40) {
		t.Fatalf("round trip with a source: %v %+v", err, d)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Descriptor)
		want   string
	}{
		{"type", func(d *Descriptor) { d.Type = "x" }, "type"},
		{"digest", func(d *Descriptor) { d.EngineTreeDigest = "zz" }, "engine_tree_digest"},
		{"base digest", func(d *Descriptor) { d.BaseImage.Digest = "sha256:12" }, "base_image.digest"},
		{"empty command", func(d *Descriptor) { d.Serve.Command = nil }, "serve.command"},
		{"relative model mount", func(d *Descriptor) { d.Serve.ModelMount = "model" }, "absolute"},
		{"unsorted env", func(d *Descriptor) { d.Serve.Environment = []string{"B=1", "A=2"} }, "sorted"},
		{"PATH", func(d *Descriptor) { d.Serve.Environment = []string{"PATH=/x"} }, "set by the entrypoint"},
		{"LD_PRELOAD", func(d *Descriptor) { d.Serve.Environment = []string{"LD_PRELOAD=/x"} }, "set by the entrypoint"},
		{"reserved prefix", func(d *Descriptor) { d.Serve.Environment = []string{"CACHEON_RELEASE_X=1"} }, "reserved"},
		{"chain variable", func(d *Descriptor) { d.Serve.Environment = []string{"WALLET_NAME=w"} }, "chain-independent"},
		{"lowercase key", func(d *Descriptor) { d.Serve.Environment = []string{"a=1"} }, "KEY=VALUE"},
		{"source commit", func(d *Descriptor) {
			d.Entrypoint.Source = &EntrypointSource{Repository: "r", Commit: "abc", BazelTarget: "//tools/cmd/cacheon"}
		}, "entrypoint.source.commit"},
		{"source target", func(d *Descriptor) {
			d.Entrypoint.Source = &EntrypointSource{Repository: "r", Commit: strings.Repeat("a", 40), BazelTarget: "tools/cmd/cacheon; rm -rf /"}
		}, "entrypoint.source.bazel_target"},
		{"source repository", func(d *Descriptor) {
			d.Entrypoint.Source = &EntrypointSource{Commit: strings.Repeat("a", 40), BazelTarget: "//tools/cmd/cacheon"}
		}, "entrypoint.source.repository"},
		{"integrations unsorted", func(d *Descriptor) {
			h := strings.Repeat("cd", 32)
			in := Integration{IntegratedRefDigest: h, IntegrationRecordDigest: h, IntegratedSourceTreeDigest: h, SelectedPayloadDigest: h, RecordSHA256: h}
			a, b := in, in
			a.TargetID, b.TargetID = "z", "a"
			d.Integrations = []Integration{a, b}
		}, "sorted, unique"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := valid()
			c.change(d)
			if err := d.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	b, _ := valid().Marshal()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Parse(b)
		if err != nil {
			return
		}
		again, err := d.Marshal()
		if err != nil || string(again) != string(b) {
			t.Fatalf("a parsed descriptor does not re-encode to its bytes: %v", err)
		}
	})
}
