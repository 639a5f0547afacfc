package scan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cacheon/engine/kernels/bundle"
)

const testManifest = `bundle_id = "scan-test"
abi_version = "cacheon-op-abi-v0"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "silu_and_mul"
cuda_sources = ["csrc/ok.cu"]
`

// writeBundle creates files (path -> content) under a fresh directory.
func writeBundle(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func baseBundle() map[string]string {
	return map[string]string{
		"manifest.toml": testManifest,
		"kernels/k.py":  "import torch\n\ndef silu_and_mul(x, out):\n    out.copy_(x)\n",
		"csrc/ok.cu":    "__global__ void k() {}\n",
	}
}

func treeRules(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Path+" "+string(f.Rule))
	}
	return out
}

func TestTreeRules(t *testing.T) {
	tests := []struct {
		name  string
		add   map[string]string
		setup func(t *testing.T, dir string)
		want  []string
	}{
		{name: "clean bundle", want: nil},
		{name: "benign metadata", add: map[string]string{"README.md": "x", "LICENSE": "x", ".gitignore": "x",
			"rebuild.json": `{"steps":[]}`, "metadata/k.json": "{}", "docs/metadata/v.json": "{}"}},
		{name: "shared object", add: map[string]string{"kernels/_ext.so": "\x7fELF"}, want: []string{"kernels/_ext.so binary-artifact"}},
		{name: "every compiled suffix", add: map[string]string{"a.o": "", "b.a": "", "c.dylib": "", "d.bin": "", "e.pyc": ""},
			want: []string{"a.o binary-artifact", "b.a binary-artifact", "c.dylib binary-artifact", "d.bin binary-artifact", "e.pyc binary-artifact"}},
		{name: "pycache is skipped", add: map[string]string{"kernels/__pycache__/k.cpython-312.pyc": "junk"}},
		{name: "git directory is skipped", add: map[string]string{".git/objects/ab/cdef": "junk"}},
		{name: "undeclared cuda source", add: map[string]string{"csrc/extra.cu": "", "csrc/extra.cuh": ""},
			want: []string{"csrc/extra.cu undeclared-cuda", "csrc/extra.cuh undeclared-cuda"}},
		{name: "undeclared patch", add: map[string]string{"patches/x.patch": "", "y.diff": ""},
			want: []string{"patches/x.patch undeclared-patch", "y.diff undeclared-patch"}},
		{name: "stray files", add: map[string]string{"weights.pt": "", "data.json": "{}", "notes.txt": ""},
			want: []string{"data.json unexpected-file", "notes.txt unexpected-file", "weights.pt unexpected-file"}},
		{name: "vendored python is scanned", add: map[string]string{"vendor/helper.py": "import os\nos.system('id')\n"},
			want: []string{"vendor/helper.py banned-attribute"}},
		{name: "unparsable extra python", add: map[string]string{"kernels/util.py": "def (:\n"},
			want: []string{"kernels/util.py syntax-error"}},
		{name: "symlink to a file", setup: func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "kernels", "data.py")); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"kernels/data.py symlink"}},
		{name: "symlink to a directory is not followed", setup: func(t *testing.T, dir string) {
			if err := os.Symlink("/usr/lib", filepath.Join(dir, "lib")); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"lib symlink"}},
		{name: "named pipe", setup: func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, want: []string{"pipe special-file"}},
		{name: "oversized python", setup: func(t *testing.T, dir string) {
			big := "x = 1\n" + strings.Repeat("#", 8<<20)
			if err := os.WriteFile(filepath.Join(dir, "big.py"), []byte(big), 0o644); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"big.py file-too-large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := baseBundle()
			for k, v := range tt.add {
				files[k] = v
			}
			dir := writeBundle(t, files)
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			r, err := Bundle(dir)
			if err != nil {
				t.Fatalf("Bundle: %v", err)
			}
			got := treeRules(r.TreeFindings)
			want := tt.want
			if want == nil {
				want = []string{}
			}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Errorf("tree findings\n got %q\nwant %q", got, want)
			}
			if r.Clean != (len(want) == 0) {
				t.Errorf("Clean = %v with %d findings", r.Clean, len(want))
			}
		})
	}
}

func TestBundleReportsOpStatus(t *testing.T) {
	tests := []struct {
		name, src, status string
		violations        int
		advisories        int
	}{
		{"clean", "def silu_and_mul(x, out):\n    out.copy_(x)\n", StatusClean, 0, 0},
		{"violations", "import subprocess\ndef silu_and_mul(x, out): pass\n", StatusViolations, 1, 0},
		{"broken kernel", "import triton\n@triton.jit\ndef k(n):\n    b = triton.next_power_of_2(n)\ndef silu_and_mul(x, out): pass\n", StatusBrokenKernel, 0, 1},
		{"both", "import socket, triton\n@triton.jit\ndef k(n):\n    b = triton.next_power_of_2(n)\n", StatusViolations, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := baseBundle()
			files["kernels/k.py"] = tt.src
			r, err := Bundle(writeBundle(t, files))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Ops) != 1 || r.Ops[0].Status != tt.status {
				t.Fatalf("ops = %+v, want one op with status %q", r.Ops, tt.status)
			}
			if r.Violations != tt.violations || r.Advisories != tt.advisories {
				t.Errorf("violations/advisories = %d/%d, want %d/%d", r.Violations, r.Advisories, tt.violations, tt.advisories)
			}
			if len(r.TreeFindings) != 0 {
				t.Errorf("op source findings repeated in the tree scan: %v", r.TreeFindings)
			}
			if r.BundleID != "scan-test" || r.ABIVersion != "cacheon-op-abi-v0" {
				t.Errorf("header = %q %q", r.BundleID, r.ABIVersion)
			}
		})
	}
}

func TestBundleWithoutManifestIsAnError(t *testing.T) {
	dir := writeBundle(t, map[string]string{"kernels/k.py": "x = 1\n"})
	if _, err := Bundle(dir); err == nil {
		t.Fatal("Bundle of a directory without manifest.toml succeeded")
	}
}

func TestTreeWithoutManifestAppliesDeclarationFreeRules(t *testing.T) {
	dir := writeBundle(t, map[string]string{"a.cu": "", "b.so": "", "c.py": "eval('1')\n", "d.txt": ""})
	fs, err := Tree(dir, TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(treeRules(fs), "; ")
	if got != "b.so binary-artifact; c.py banned-call" {
		t.Errorf("findings = %q", got)
	}
}

// A bundle over an intake limit is refused as inspection refuses it, with
// the same error and before any Python is parsed: every bundle here holds
// Python with findings (an op source calling eval, vendored files calling
// eval) that must not appear in the report.
func TestBundleOverIntakeLimitsIsRefusedBeforeParsing(t *testing.T) {
	sparse := func(name string, size int64) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(size); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string // tree findings besides the intake error's
	}{
		{"more files than MaxFiles", func(t *testing.T, dir string) {
			for i := 0; i <= bundle.MaxFiles; i++ {
				p := filepath.Join(dir, "vendor", fmt.Sprintf("m%04d.py", i))
				if i == 0 {
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(p, []byte("eval('1')\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, nil},
		{"more inspectable text than MaxInspectableBytes", func(t *testing.T, dir string) {
			for i := 0; i*bundle.MaxInspectableFileBytes <= bundle.MaxInspectableBytes; i++ {
				sparse(fmt.Sprintf("vendor/big%d.py", i), bundle.MaxInspectableFileBytes)(t, dir)
			}
		}, nil},
		{"more bytes than MaxTotalBytes", func(t *testing.T, dir string) {
			for i := 0; i*bundle.MaxFileBytes <= bundle.MaxTotalBytes; i++ {
				sparse(fmt.Sprintf("blob%02d", i), bundle.MaxFileBytes)(t, dir)
			}
		}, func() []string {
			var w []string
			for i := 0; i*bundle.MaxFileBytes <= bundle.MaxTotalBytes; i++ {
				w = append(w, fmt.Sprintf("blob%02d unexpected-file", i))
			}
			return w
		}()},
		{"a link beside hostile python", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "vendor.py"), []byte("eval('1')\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "kernels", "data.py")); err != nil {
				t.Fatal(err)
			}
		}, []string{"kernels/data.py symlink"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := baseBundle()
			files["kernels/k.py"] = "eval('1')\ndef silu_and_mul(x, out): pass\n"
			dir := writeBundle(t, files)
			tt.setup(t, dir)
			_, lerr := bundle.Load(dir)
			var intake *bundle.Error
			if !errors.As(lerr, &intake) || !errors.Is(lerr, bundle.ErrLimit) {
				t.Fatalf("manifest.Load = %v, want an intake limit error", lerr)
			}
			r, err := Bundle(dir)
			if err != nil {
				t.Fatalf("Bundle: %v", err)
			}
			if len(r.Ops) != 0 {
				t.Errorf("op sources were scanned: %+v", r.Ops)
			}
			want := append([]string{}, tt.want...)
			var got []string
			found := false
			for _, f := range r.TreeFindings {
				if f.Rule == RuleBundleLimit {
					found = true
					if f.Path != intake.File || f.Message != intake.Reason {
						t.Errorf("intake finding %q, want the inspection error %q", f, intake)
					}
					continue
				}
				got = append(got, f.Path+" "+string(f.Rule))
			}
			// The walk's own finding for the same entry stands in for it.
			reported := false
			for _, w := range want {
				reported = reported || strings.HasPrefix(w, intake.File+" ")
			}
			if !found && !reported {
				t.Errorf("no %s finding in %v", RuleBundleLimit, r.TreeFindings)
			}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Errorf("tree findings\n got %q\nwant %q", got, want)
			}
			if r.Clean || r.Violations == 0 {
				t.Errorf("an over-limit bundle scanned clean: %+v", r)
			}
		})
	}
}
