package stack

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestErrorFiles checks that every file in testdata/error-files produces
// exactly the diagnostics its "# ERROR: <summary>" comments announce, each
// on the line that carries the comment.
func TestErrorFiles(t *testing.T) {
	paths, err := filepath.Glob("testdata/error-files/*.hcl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no error files: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			sc := bufio.NewScanner(bytes.NewReader(src))
			for line := 1; sc.Scan(); line++ {
				if _, msg, ok := strings.Cut(sc.Text(), "# ERROR: "); ok {
					want = append(want, lineMsg(line, msg))
				}
			}
			f, diags := Parse(p, src)
			if f != nil {
				t.Errorf("Parse returned a file despite errors")
			}
			var got []string
			for _, d := range diags {
				if d.Subject == nil {
					t.Errorf("diagnostic %q has no source range", d.Summary)
					continue
				}
				if d.Subject.Filename != p {
					t.Errorf("diagnostic %q names file %q, want %q", d.Summary, d.Subject.Filename, p)
				}
				got = append(got, lineMsg(d.Subject.Start.Line, d.Summary))
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s\nfull:\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"), diags)
			}
		})
	}
}

func lineMsg(line int, msg string) string {
	return strings.TrimSpace(msg) + " @" + strings.Repeat("0", 3-len(itoa(line))) + itoa(line)
}

func itoa(n int) string {
	var b []byte
	for ; n > 0 || len(b) == 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestParseValidFiles(t *testing.T) {
	d := dg
	t.Run("evaluation", func(t *testing.T) {
		f, _, diags := Load("testdata/valid/evaluation.hcl")
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if f.Name != "incumbent" || f.Kind != Evaluation || f.Catalog != "//catalog:targets.hcl" {
			t.Errorf("header = %q %q %q", f.Name, f.Kind, f.Catalog)
		}
		s := f.Substrate
		if s.Name != "sglang" || s.Version != "0.5.13.post1" || s.UpstreamRevision != "0123456789abcdef0123456789abcdef01234567" ||
			s.BaseEngineDigest != d("2") || s.RuntimeDigest != d("1") {
			t.Errorf("substrate = %+v", s)
		}
		if f.Arena == nil || f.Arena.Digest != d("3") || f.Arena.Name != "test-arena" {
			t.Errorf("arena = %+v", f.Arena)
		}
		if got := strings.Join(f.Targets(), ","); got != "activation.silu_and_mul,norm.rmsnorm" {
			t.Errorf("targets = %s", got)
		}
		c, ok := f.Entry("activation.silu_and_mul")
		if !ok || c.Kind != ProposalKind || c.Source != "../bundles/silu" || c.ArtifactDigest != d("2") || c.AttributionDigest != d("4") {
			t.Errorf("silu entry = %+v", c)
		}
		if r := c.Range("source"); r.Start.Line != 26 {
			t.Errorf("source range starts at line %d, want 26", r.Start.Line)
		}
	})
	t.Run("release defaults to integrated", func(t *testing.T) {
		f, _, diags := Load("testdata/valid/release.hcl")
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if f.Arena != nil {
			t.Errorf("release arena = %+v", f.Arena)
		}
		c, _ := f.Entry("activation.silu_and_mul")
		if c.Kind != IntegratedKind || c.IntegrationRecordDigest != d("3") {
			t.Errorf("entry = %+v", c)
		}
	})
	t.Run("reference", func(t *testing.T) {
		f, _, diags := Load("testdata/valid/reference.hcl")
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if f.Kind != Reference || len(f.Contributions) != 0 || f.Arena == nil {
			t.Errorf("reference = %+v", f)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		_, _, diags := Load("testdata/valid/missing.hcl")
		if !diags.HasErrors() || !strings.Contains(diags.Error(), "Cannot read stack file") {
			t.Errorf("diags = %v", diags)
		}
	})
}

func TestParseLabel(t *testing.T) {
	tests := []struct {
		in, canon, short, dir, err string
	}{
		{in: "//kernels/contributions:silu", canon: "//kernels/contributions:silu", short: "//kernels/contributions:silu", dir: "kernels/contributions/silu"},
		{in: "@//kernels/contributions:silu", canon: "//kernels/contributions:silu", short: "//kernels/contributions:silu", dir: "kernels/contributions/silu"},
		{in: "//kernels:substrate", canon: "//kernels:substrate", short: "//kernels:substrate", dir: "kernels/substrate"},
		{in: "//kernels/contributions/silu", canon: "//kernels/contributions/silu:silu", short: "//kernels/contributions/silu", err: "write //kernels/contributions:silu"},
		{in: "//kernels/contributions/silu:silu", canon: "//kernels/contributions/silu:silu", short: "//kernels/contributions/silu", dir: "kernels/contributions/silu/silu"},
		{in: "//:x", canon: "//:x", short: "//:x", dir: "x"},
		{in: "//a:b/c", canon: "//a:b/c", short: "//a:b/c", err: "one directory beside the BUILD file"},
		{in: "@repo//x", err: "only labels of the main repository"},
		{in: "kernels/x", err: "must start with //"},
		{in: "//a/../b", err: "not a clean relative path"},
		{in: "//a:", err: "missing or invalid target name"},
		{in: "//a:../b", err: "not a clean relative path"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			l, err := ParseLabel(tt.in)
			if tt.canon == "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseLabel(%q) = %v, %v; want error %q", tt.in, l, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.String() != tt.canon || l.Short() != tt.short {
				t.Errorf("got %s / %s, want %s / %s", l, l.Short(), tt.canon, tt.short)
			}
			dir, err := l.DirPath()
			if tt.dir != "" && (err != nil || dir != tt.dir) {
				t.Errorf("DirPath = %q, %v; want %q", dir, err, tt.dir)
			}
			if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("DirPath error = %v, want %q", err, tt.err)
			}
		})
	}
}
