package speed

import (
	"path/filepath"
	"strings"
	"testing"
)

const policyHCL = `
speed_policy "test" {
  version                    = 8
  min_margin                 = 0.005
  noise_multiplier           = 2
  max_noise                  = 0.02
  min_windows                = 3
  max_window_scatter         = 0.05
  max_conditioning_slowdown  = 1.25
  max_stage_seconds          = 1800
  max_qualification_seconds  = 7200
  calibration_digest         = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
  calibration_context_digest = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
}
`

func TestPolicyFileDecodesToTheSamePolicy(t *testing.T) {
	p, diags := ParsePolicyFile("p.hcl", []byte(policyHCL))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if p != testPolicy(V8) {
		t.Fatalf("decoded %+v", p)
	}
}

func TestPolicyFileErrorsPointAtTheAttribute(t *testing.T) {
	cases := []struct{ name, old, new, want string }{
		{"margin out of range", "min_margin                 = 0.005", "min_margin = 1.5", "p.hcl:4,"},
		{"old version", "version                    = 8", "version = 5", "p.hcl:3,"},
		{"string where number", "max_noise                  = 0.02", `max_noise = "0.02"`, "Number required"},
		{"missing attribute", "min_windows                = 3\n", "", `"min_windows" is required`},
		{"sets under version 8", "version                    = 8", "version = 8\nsets = 4", "version 8 reads one set"},
		{"version 9 without sets", "version                    = 8", "version = 9", "sets: 0 is outside [2, 8]"},
		{"bad digest", `"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`, `"zz"`, "p.hcl:12,"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(policyHCL, c.old, c.new, 1)
			_, diags := ParsePolicyFile("p.hcl", []byte(src))
			if !diags.HasErrors() || !strings.Contains(diags.Error(), c.want) {
				t.Fatalf("diags %v, want %q", diags, c.want)
			}
		})
	}
}

// TestFormatPolicyFileReadsBack: a printed policy parses to the same
// policy, thresholds with many significant digits included, and its
// comment is a comment.
func TestFormatPolicyFileReadsBack(t *testing.T) {
	for _, c := range []struct {
		name    string
		edit    func(p *Policy)
		comment string
	}{
		{"test values", func(*Policy) {}, ""},
		{"calibrated thresholds", func(p *Policy) { p.MinMargin, p.MaxNoise = 0.031415926535897934, 0.0172 }, "from calibration x\nrounds: 3"},
		{"version 7", func(p *Policy) { p.Version = V7 }, "one line"},
		{"version 9", func(p *Policy) { p.Version, p.Sets = V9, 4 }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := testPolicy(V8)
			c.edit(&want)
			src := FormatPolicyFile("generated", want, c.comment)
			got, diags := ParsePolicyFile("generated.hcl", src)
			if diags.HasErrors() {
				t.Fatalf("%s\n%s", diags, src)
			}
			if got != want {
				t.Fatalf("read back %+v, want %+v\n%s", got, want, src)
			}
			if c.comment != "" && !strings.HasPrefix(string(src), "# "+strings.Split(c.comment, "\n")[0]+"\n") {
				t.Fatalf("comment not printed first:\n%s", src)
			}
		})
	}
}

// TestBenchPoliciesAreValid: the measurement policies the GPU bench
// reads are policies, so that a run on a GPU never ends at its first
// command over a typo.
func TestBenchPoliciesAreValid(t *testing.T) {
	for file, version := range map[string]int{"policy.hcl": V8, "policy-sets.hcl": V9} {
		p, diags := LoadPolicyFile(filepath.Join("..", "..", "bench", "h200", file))
		if diags.HasErrors() {
			t.Fatalf("%s: %s", file, diags.Error())
		}
		if p.Version != version {
			t.Errorf("%s: version %d, want %d", file, p.Version, version)
		}
	}
}
