package bundle

import (
	"errors"
	"strings"
	"testing"
)

func TestMetadataCanonicalProjection(t *testing.T) {
	md, err := parseMetadata("metadata/m.json", []byte(`{
		"op": "x", "notes": "dropped", "graph_safe": false,
		"dtypes": ["torch.float16", "BF16", "bfloat16"],
		"architectures": ["SM_90", "sm100a"],
		"quant": ["none"],
		"min_num_tokens": 1, "max_num_tokens": 1024,
		"capabilities": {"Head-Dim": [128, 64, 128], "tp": 4, "num_tokens": {"min": 1, "max": 4096}, "phase": "extend"},
		"regime": {"weights": 0.5}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := md.CanonicalBytes()
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "architectures": [
    "sm100a",
    "sm90"
  ],
  "capabilities": {
    "head_dim": {
      "one_of": [
        128,
        64
      ]
    },
    "num_tokens": {
      "max": 4096,
      "min": 1
    },
    "phase": {
      "exact": "prefill"
    },
    "tp_size": {
      "exact": 4
    }
  },
  "dtypes": [
    "bfloat16",
    "float16"
  ],
  "max_num_tokens": 1024,
  "min_num_tokens": 1,
  "quant": [
    "dense"
  ]
}
`
	if string(got) != want {
		t.Fatalf("projection:\n%s\nwant:\n%s", got, want)
	}
}

func TestMetadataRejections(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"not object", `[1]`, "must be a JSON object"},
		{"trailing", `{} {}`, "unexpected data"},
		{"contextual range", `{"capabilities":{"dtype":{"min":1}}}`, "contextual and cannot use min/max"},
		{"mixed predicate", `{"capabilities":{"head_dim":{"exact":1,"min":0}}}`, "cannot mix"},
		{"exact and one_of", `{"capabilities":{"head_dim":{"exact":1,"one_of":[1]}}}`, "both exact and one_of"},
		{"empty one_of", `{"capabilities":{"head_dim":{"one_of":[]}}}`, "non-empty list"},
		{"negative", `{"capabilities":{"head_dim":-1}}`, "non-negative"},
		{"min over max", `{"capabilities":{"head_dim":{"min":5,"max":4}}}`, "greater than max"},
		{"alias duplicate", `{"capabilities":{"tp":1,"tp_size":1}}`, "duplicate canonical capability field"},
		{"numeric string", `{"capabilities":{"head_dim":"128"}}`, "must be an integer"},
		{"unknown predicate key", `{"capabilities":{"head_dim":{"eq":1}}}`, "unknown key"},
		{"dtypes string", `{"dtypes":"float32"}`, "dtypes: must be a list of strings"},
		{"min over max tokens", `{"min_num_tokens":5,"max_num_tokens":4}`, "exceeds max_num_tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseMetadata("metadata/m.json", []byte(tc.doc))
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCheckVariantDomains(t *testing.T) {
	row := func(variant, meta string) string {
		return "\n[[ops]]\nslot = \"s\"\nvariant = \"" + variant + "\"\nsource = \"k.py\"\nentry = \"f\"\nmetadata = \"" + meta + "\"\n"
	}
	tests := []struct {
		name string
		a, b string // metadata documents of two variants
		want string
	}{
		{"disjoint token ranges", `{"max_num_tokens": 63}`, `{"min_num_tokens": 64}`, ""},
		{"disjoint head dims", `{"capabilities":{"head_dim":64}}`, `{"capabilities":{"head_dim":[128,256]}}`, ""},
		{"disjoint dtypes", `{"dtypes":["float16"]}`, `{"dtypes":["bfloat16"]}`, ""},
		{"overlapping ranges", `{"max_num_tokens": 64}`, `{"min_num_tokens": 64}`, "overlapping eligibility domains"},
		{"unconstrained", `{}`, `{"dtypes":["bfloat16"]}`, "overlapping eligibility domains"},
		{"empty domain", `{"capabilities":{"head_dim":{"min":5,"max":5}},"max_num_tokens":3,"min_num_tokens":3}`, `{"capabilities":{"head_dim":[7]}}`, ""},
		{"empty by quant", `{"quant":["nvfp4"],"capabilities":{"quant":"dense"}}`, `{}`, "empty eligibility domain"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeBundle(t, map[string]string{
				"manifest.toml": header + row("a", "a.json") + row("b", "b.json"),
				"k.py":          "x",
				"a.json":        tc.a,
				"b.json":        tc.b,
			})
			m, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckVariantDomains(m)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected rejection: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrMetadata) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRebuildPlan(t *testing.T) {
	p, err := ParseRebuildPlan([]byte(`{"steps":[{"type":"repo_python","path":"build_cuda_ext.py"},{"type":"repo_python","path":"cacheon/patchers/apply_dep_patch.py"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 2 || p.Steps[0].Name != "apply_dep_patch.py" {
		t.Fatalf("steps not in run order: %+v", p.Steps)
	}
	if got := strings.Join(p.ObservedFeatures(), ","); got != "rebuild:apply_dep_patch,rebuild:build_cuda_ext" {
		t.Fatalf("features = %s", got)
	}
	for _, bad := range []string{
		`{"steps":[],"extra":1}`,
		`{"steps":[{"type":"repo_python","path":"../build_cuda_ext.py"}]}`,
		`{"steps":[{"type":"repo_python","path":"other/build_cuda_ext.py"}]}`,
		`{"steps":[{"type":"repo_python","path":"build_cuda_ext.py"},{"type":"repo_python","path":"build_cuda_ext.py"}]}`,
		`{"steps":[{"type":"repo_python","path":"build_cuda_ext.py","env":{}}]}`,
	} {
		if _, err := ParseRebuildPlan([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestMetadataCanonicalBytesKeepsNonASCIIRaw(t *testing.T) {
	md, err := parseMetadata("metadata/m.json", []byte(`{"capabilities":{"model":"Modèle-\u0007X"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := md.CanonicalBytes()
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"capabilities\": {\n    \"model\": {\n      \"exact\": \"Modèle-\\u0007X\"\n    }\n  }\n}\n"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestCheckLogicalPath(t *testing.T) {
	for _, ok := range []string{"k.py", "kernels/a.py", "a/b/c.cu", "a..b/c"} {
		if err := CheckLogicalPath(ok); err != nil {
			t.Errorf("CheckLogicalPath(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/k.py", "./k.py", "a//b.py", "a/../b.py", "a\\b.py", "__pycache__/x.py", "x.pyc", "._x.py", ".git/config"} {
		if err := CheckLogicalPath(bad); err == nil {
			t.Errorf("CheckLogicalPath(%q) accepted", bad)
		}
	}
}
