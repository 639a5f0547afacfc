package cudaclosure

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for p, s := range files {
		m[p] = &fstest.MapFile{Data: []byte(s)}
	}
	return m
}

func TestClosureFollowsDeclaredHeaders(t *testing.T) {
	tests := []struct {
		name       string
		files      map[string]string
		declared   []string
		wantFiles  string
		wantSystem string
	}{
		{"system headers only", map[string]string{"csrc/k.cu": "#include <cuda_runtime.h>\n#include <cuda/std/array>\n"},
			[]string{"csrc/k.cu"}, "csrc/k.cu", "cuda/std/array cuda_runtime.h"},
		{"declared local header", map[string]string{"csrc/k.cu": "#include \"common.cuh\"\n", "csrc/common.cuh": "#pragma once\n#include <cstdint>\n"},
			[]string{"csrc/k.cu", "csrc/common.cuh"}, "csrc/common.cuh csrc/k.cu", "cstdint"},
		{"header in a sibling directory", map[string]string{"csrc/a/k.cu": "#include \"../inc/h.cuh\"\n", "csrc/inc/h.cuh": ""},
			[]string{"csrc/a/k.cu", "csrc/inc/h.cuh"}, "csrc/a/k.cu csrc/inc/h.cuh", ""},
		{"quoted name not in the bundle is a system header", map[string]string{"k.cu": "#include \"cuda_fp16.h\"\n"},
			[]string{"k.cu"}, "k.cu", "cuda_fp16.h"},
		{"unreached declared header is checked but not listed", map[string]string{"k.cu": "", "spare.cuh": "#include <vector>\n"},
			[]string{"k.cu", "spare.cuh"}, "k.cu", "vector"},
		{"include cycle", map[string]string{"k.cu": "#include \"a.cuh\"\n", "a.cuh": "#include \"b.cuh\"\n", "b.cuh": "#include \"a.cuh\"\n"},
			[]string{"k.cu", "a.cuh", "b.cuh"}, "a.cuh b.cuh k.cu", ""},
		{"spacing and comments around the hash", map[string]string{"k.cu": "  #  include <a.h>\n/* c */ # /* c */ include \"h.cuh\" // trailing\n", "h.cuh": ""},
			[]string{"k.cu", "h.cuh"}, "h.cuh k.cu", "a.h"},
		{"includes in strings and comments are not directives", map[string]string{"k.cu": "const char* s = \"\\n#include <evil.h>\";\n// #include_next <x>\n/*\n#include \"../../etc/passwd\"\n*/\nauto r = R\"x(// not a comment )x\";\n#include <ok.h>\n"},
			[]string{"k.cu"}, "k.cu", "ok.h"},
		{"digit separators do not open a character literal", map[string]string{"k.cu": "int n = 1'000'000; // it's fine\n#include <ok.h>\n"},
			[]string{"k.cu"}, "k.cu", "ok.h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Build(mapFS(tt.files), tt.declared)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if got := strings.Join(c.Files, " "); got != tt.wantFiles {
				t.Errorf("files = %q, want %q", got, tt.wantFiles)
			}
			if got := strings.Join(c.SystemHeaders, " "); got != tt.wantSystem {
				t.Errorf("system headers = %q, want %q", got, tt.wantSystem)
			}
		})
	}
}

func TestClosureRefusals(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		declared []string
		want     string
	}{
		{"include_next", map[string]string{"k.cu": "#include_next <stdio.h>\n"}, []string{"k.cu"}, "k.cu:1: #include_next is not allowed"},
		{"import", map[string]string{"k.cu": "#import <x.h>\n"}, []string{"k.cu"}, "k.cu:1: #import is not allowed"},
		{"digraph directive", map[string]string{"k.cu": "int x;\n%:include \"evil.h\"\n"}, []string{"k.cu"}, "k.cu:2: directive written with the %: digraph"},
		{"trigraph directive", map[string]string{"k.cu": "??=include <x.h>\n"}, []string{"k.cu"}, "k.cu:1: directive written with the ??= trigraph"},
		{"macro include", map[string]string{"k.cu": "#define H \"x.cuh\"\n#include H\n"}, []string{"k.cu"}, "k.cu:2: #include of \"H\": only a literal"},
		{"trailing tokens", map[string]string{"k.cu": "#include <a.h> extra\n"}, []string{"k.cu"}, "k.cu:1: #include of \"<a.h> extra\""},
		{"spliced include_next", map[string]string{"k.cu": "#include\\\n_next <x.h>\n"}, []string{"k.cu"}, "k.cu:1: #include_next is not allowed"},
		{"splice with trailing space", map[string]string{"k.cu": "#inc\\  \nlude_next <x.h>\n"}, []string{"k.cu"}, "k.cu:1: #include_next is not allowed"},
		{"block comment joins the directive", map[string]string{"k.cu": "#include /*\n*/ \"../../secret.h\"\n"}, []string{"k.cu"}, "k.cu:1: #include \"../../secret.h\" leaves the bundle"},
		{"undeclared local header", map[string]string{"k.cu": "#include \"h.cuh\"\n", "h.cuh": ""}, []string{"k.cu"}, "k.cu:1: #include \"h.cuh\" names h.cuh, which no op declares"},
		{"including a translation unit", map[string]string{"k.cu": "#include \"other.cu\"\n", "other.cu": ""}, []string{"k.cu", "other.cu"}, "names the translation unit other.cu"},
		{"absolute system path", map[string]string{"k.cu": "#include </etc/passwd>\n"}, []string{"k.cu"}, "absolute paths are not allowed"},
		{"dotdot system path", map[string]string{"k.cu": "#include <../x.h>\n"}, []string{"k.cu"}, "relative components are not allowed"},
		{"quoted absolute path", map[string]string{"k.cu": "#include \"/proc/self/environ\"\n"}, []string{"k.cu"}, "absolute paths are not allowed"},
		{"backslash in name", map[string]string{"k.cu": "#include <a\\b.h>\n"}, []string{"k.cu"}, "character '\\\\' is not allowed"},
		{"empty component", map[string]string{"k.cu": "#include <a//b.h>\n"}, []string{"k.cu"}, "empty path component"},
		{"declared file missing", map[string]string{}, []string{"k.cu"}, "k.cu: cannot be read"},
		{"declared file with another suffix", map[string]string{"k.h": ""}, []string{"k.h"}, "not a .cu or .cuh file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(mapFS(tt.files), tt.declared)
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrRefused) {
				t.Fatalf("Build error = %v, want a refusal", err)
			}
			if len(ce.Problems) != 1 || !strings.Contains(ce.Problems[0].String(), tt.want) {
				t.Errorf("problems = %q, want one containing %q", ce.Problems, tt.want)
			}
		})
	}
}

func TestDirectiveLinesCountPhysicalLines(t *testing.T) {
	src := "// a\r\n#define A \\\r\n  1\r\n\n/* x\ny */ #include <z.h>\n"
	ds := directives([]byte(src))
	if len(ds) != 2 || ds[0].line != 2 || ds[0].name != "define" || ds[1].line != 5 || ds[1].name != "include" {
		t.Errorf("directives = %+v", ds)
	}
}

func FuzzDirectives(f *testing.F) {
	f.Add([]byte("#include <a.h>\n#include \"b.cuh\"\n"))
	f.Add([]byte("R\"x(\n#include <q>\n)x\" /* \\\n */ %:include 'c'\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, d := range directives(src) {
			if d.line < 1 {
				t.Fatalf("directive at line %d", d.line)
			}
		}
		_, _ = Build(fstest.MapFS{"k.cu": &fstest.MapFile{Data: src}}, []string{"k.cu"})
	})
}

// Hostile files near the 8 MiB limit must be read in linear time: these
// shapes would be quadratic for a scanner that rescans the line per token.
func TestHostileSourcesStayLinear(t *testing.T) {
	const n = 4 << 20
	tests := map[string]string{
		"one line of angle brackets":  strings.Repeat(" ", n) + strings.Repeat("<", n),
		"include line of angles":      "#include " + strings.Repeat("<", n),
		"unterminated block comment":  "/*" + strings.Repeat("*", n),
		"unterminated raw string":     "R\"x(" + strings.Repeat("(", n),
		"many splices":                strings.Repeat("\\\n", n),
		"many directives":             strings.Repeat("#define A 1\n", n/12),
		"quotes and digit separators": strings.Repeat("1'2'", n/4),
	}
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			_, _ = Build(fstest.MapFS{"k.cu": &fstest.MapFile{Data: []byte(src)}}, []string{"k.cu"})
		})
	}
}
