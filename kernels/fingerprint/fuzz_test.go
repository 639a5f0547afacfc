package fingerprint

import (
	"os"
	"path/filepath"
	"testing"
)

// addSeeds adds the repository's files matching the patterns (relative
// to kernels/) to a fuzz corpus.
func addSeeds(f *testing.F, patterns ...string) {
	for _, p := range patterns {
		files, _ := filepath.Glob(filepath.Join("..", filepath.FromSlash(p)))
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
}

// The CUDA normalizer never panics, and its output normalizes to itself.
func FuzzNormalizeCUDA(f *testing.F) {
	addSeeds(f, "fixtures/*/*/*.cu", "fixtures/*/patches/*.patch")
	f.Add([]byte("#define A(x) \\\n  (x) // c \\\n continued\nint s = \"/* no */\"; char c = '\\''; /* a\n b */ #x\n"))
	f.Add([]byte("auto r = R\"d(// )\" not a comment)d\"; int n = 1'000 + 0x1p-3 + .5e+2;\n#include <a//b.h>\n"))
	f.Add([]byte("\"unterminated \\\n#if a\\\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		once := NormalizeCUDA(src)
		if twice := NormalizeCUDA([]byte(once)); twice != once {
			t.Fatalf("not idempotent:\nsource %q\nonce   %q\ntwice  %q", src, once, twice)
		}
		_, _ = normalizePatch(src)
	})
}

// The Python normalizer never panics; what it accepts it re-emits as
// Python that parses and normalizes to itself.
func FuzzNormalizePython(f *testing.F) {
	addSeeds(f, "contributions/*/kernels/*.py", "fixtures/*/kernels/*.py")
	f.Add([]byte("@d\ndef f(a, b,):\n  '''doc'''\n  if (a): x = (1 +\n 2); y = 3\n  elif b:\n    return (a,)\n  else:\n    pass\n"))
	f.Add([]byte("class A(B,):\n    'doc'\ntry:\n    x[1,]\nexcept* E as e: ...\nelse: pass\nfinally:\n    s = rb'\\x00' 'a' f\"{x!r:>{w}}\" u'\\N{BULLET}'\n"))
	f.Add([]byte("match p:\n    case [1, *r] if r: pass\n    case {'k': v, **kw}: pass\nfor i in (1,): pass\nelse: 0x_1F; 1_0.5E-3J\nwhile 0:\n    '''only'''\n"))
	f.Add([]byte("@dec(1,)\nclass C[T,](B, metaclass=M,):\n    async def g(self, *, a=lambda x,: x,):\n        async with (open(a) as b, c as d,):\n            global q; q = (y := 1)\n        return [*a, *b,], {**k,}\n"))
	f.Add([]byte("s = f'''{\n  x # comment\n}''' + f\"{f'{y!s}'}\" + b'\\xff\\n' + '\\N{DEGREE SIGN}' \\\n  'tail'\ntype A[T] = list[T,]\n"))
	f.Add([]byte("if a:\n    pass\nelif b: x = 1; y = 2\nelif c:\n    '''s'''\nelse:\n    ...\nwhile x: break\nelse: continue\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		once, err := NormalizePython("fuzz.py", src)
		if err != nil {
			return
		}
		twice, err := NormalizePython("normalized.py", []byte(once))
		if err != nil {
			t.Fatalf("normalized output does not parse: %v\nsource %q\noutput:\n%s", err, src, once)
		}
		if twice != once {
			t.Fatalf("not idempotent:\nsource %q\nonce:\n%s\ntwice:\n%s", src, once, twice)
		}
	})
}
