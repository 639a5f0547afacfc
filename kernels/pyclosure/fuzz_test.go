package pyclosure

import (
	"testing"
	"testing/fstest"
)

// Whatever the op source holds, the closure either refuses it or yields
// files whose rewrite is still Python.
func FuzzClosureAndRewrite(f *testing.F) {
	f.Add([]byte("import helpers\nfrom pkg import mod\nimport pkg.mod as m\nfrom . import helpers\n"))
	f.Add([]byte("import pkg . \\\n mod\nfrom pkg.mod import (a,\n b)\n"))
	f.Add([]byte("import cutlass.cute as cute\nk = cute.compile(f, x)\n"))
	for _, c := range quietCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		// The quiet-text shortcut of the ban never changes the facts.
		checkQuietShortcut(t, "fuzzed source", src)
		fsys := fstest.MapFS{
			"k.py":            &fstest.MapFile{Data: src},
			"helpers.py":      &fstest.MapFile{Data: []byte("X = 1\n")},
			"pkg/__init__.py": &fstest.MapFile{},
			"pkg/mod.py":      &fstest.MapFile{Data: []byte("import helpers\n")},
		}
		c, err := Build(fsys, []string{"k.py"}, Options{})
		// The facts cache never changes the outcome, refusals included.
		mem := &countingCache{}
		for run := 0; run < 2; run++ {
			if got, want := outcome(Build(fsys, []string{"k.py"}, Options{Facts: mem})), outcome(c, err); got != want {
				t.Fatalf("cached closure (run %d) differs:\n%s\nwant:\n%s", run, got, want)
			}
		}
		if err != nil {
			return
		}
		for _, file := range c.Files {
			if _, err := file.Rewrite(prefix); err != nil {
				t.Fatalf("rewrite of %s failed: %v\nsource:\n%s", file.Path, err, file.Src)
			}
		}
	})
}
