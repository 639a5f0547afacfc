package scan

import (
	"strings"
	"testing"
)

// FuzzSource feeds arbitrary bytes to the scanner entry. It must not
// panic, and what it returns must be well formed: every finding names a
// rule and a place inside the file, in source order, and a file that
// does not parse yields exactly one syntax-error finding.
//
//	go test ./kernels/scan -run '^$' -fuzz '^FuzzSource$' -fuzztime 30s
func FuzzSource(f *testing.F) {
	for _, src := range []string{
		"import os\nos.system('id')\n",
		"import operator, os\noperator.methodcaller('system', 'id')(os)\n",
		"from numpy import ctypeslib as c\nimport torch.utils.cpp_extension\n",
		"import numpy as np\nnp.load(f, allow_pickle=True)\nnp.ctypeslib.ctypes.CDLL(None)\n",
		"s = f\"{f'{eval(1)}'}\"\nt = f'{x['k']}'\n",
		"type X = int\ndef f[T](): pass\n",
		"x = '\\N{EM DASH}' + '\\N{" + strings.Repeat("A", 89) + "}'\n",
		"import triton\n@triton.jit\ndef k(n):\n    b = triton.next_power_of_2(n)\n",
		"__builtins__['eval']('1')\nsys._getframe().f_back.f_globals\n",
	} {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fs := Source("k.py", src)
		// \r, \n and \r\n all end lines.
		lines := strings.Count(string(src), "\n") + strings.Count(string(src), "\r") + 1
		for i, fd := range fs {
			if fd.Rule == "" || fd.Path != "k.py" || fd.Line < 0 || fd.Line > lines || fd.Col < 0 {
				t.Fatalf("finding %d malformed: %+v", i, fd)
			}
			if fd.Rule == RuleSyntax && len(fs) != 1 {
				t.Fatalf("syntax error among other findings: %v", fs)
			}
			if i > 0 && (fs[i-1].Line > fd.Line || fs[i-1].Line == fd.Line && fs[i-1].Col > fd.Col) {
				t.Fatalf("findings out of order: %v then %v", fs[i-1], fd)
			}
		}
	})
}
