package pyclosure

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// countingCache is a FactsCache in memory that counts its hits, so a test
// can tell a warm run from a run that parsed again.
type countingCache struct {
	mu     sync.Mutex
	m      map[[32]byte]*Facts
	hits   int
	misses int
}

func (c *countingCache) Load(sum [32]byte) (*Facts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.m[sum]
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	return f, ok
}

func (c *countingCache) Store(sum [32]byte, f *Facts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[32]byte]*Facts{}
	}
	c.m[sum] = f
}

// outcome is what a closure build returns, in comparable form.
func outcome(c *Closure, err error) string {
	if err != nil {
		if ps := problems(err); ps != nil {
			return "refused:\n" + strings.Join(ps, "\n")
		}
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, f := range c.Files {
		fmt.Fprintf(&b, "%s %s pkg=%v %+v\n", f.Path, f.Module, f.IsPackage, f.Imports)
	}
	return b.String()
}

// buildEveryWay builds the closure without a cache, with an empty
// on-disk cache, with that cache warm, and with a cache in memory, and
// fails unless all four agree and the warm runs parsed nothing. It
// returns the uncached result, for the caller's own assertions.
func buildEveryWay(t *testing.T, fsys fs.FS, sources []string, opts Options) (*Closure, error) {
	t.Helper()
	c, err := Build(fsys, sources, opts)
	want := outcome(c, err)
	dir := NewDirCache(t.TempDir())
	mem := &countingCache{}
	coldMisses := 0
	for _, run := range []struct {
		name  string
		cache FactsCache
	}{{"cold directory cache", dir}, {"warm directory cache", dir}, {"cold memory cache", mem}, {"warm memory cache", mem}} {
		o := opts
		o.Facts = run.cache
		if got := outcome(Build(fsys, sources, o)); got != want {
			t.Fatalf("%s: closure differs from the uncached one:\n%s\nwant:\n%s", run.name, got, want)
		}
		if run.name == "cold memory cache" {
			coldMisses = mem.misses
		}
	}
	if mem.misses != coldMisses {
		t.Fatalf("warm memory cache: %d misses after %d cold ones: a file was parsed again", mem.misses, coldMisses)
	}
	return c, err
}

func TestCachedFactsKeepNoPath(t *testing.T) {
	// The same bytes at two paths: one cache entry, each problem named
	// at its own path.
	banned := "import helpers\nx = eval('1')\n"
	fsys := mapFS(map[string]string{"a.py": banned, "b/__init__.py": "", "b/c.py": banned, "k.py": "import a\nimport b.c\n", "helpers.py": ""})
	mem := &countingCache{}
	_, err := Build(fsys, []string{"k.py"}, Options{Facts: mem})
	got := problems(err)
	want := []string{`a.py:2:5: dynamic import: name "eval"`, `b/c.py:2:5: dynamic import: name "eval"`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("problems = %q, want %q", got, want)
	}
	// Three distinct contents (k.py, the banned source, the empty file)
	// among five files: b/c.py hits a.py's entry, b/__init__.py and
	// helpers.py share the empty file's.
	if mem.misses != 3 || mem.hits != 2 {
		t.Fatalf("%d misses and %d hits, want 3 and 2", mem.misses, mem.hits)
	}
	buildEveryWay(t, fsys, []string{"k.py"}, Options{})
}

func TestDirCacheReadsBackOnlyWholeEntriesOfItsKey(t *testing.T) {
	src := []byte("from pkg import mod as m\nimport a.b\n")
	facts, err := Analyze(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	key := hex.EncodeToString(sum[:])
	other := sha256.Sum256([]byte("other"))
	tests := []struct {
		name  string
		entry func(good []byte) []byte // nil: leave the stored entry as is
		hit   bool
	}{
		{"stored entry", nil, true},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, false},
		{"empty", func([]byte) []byte { return nil }, false},
		{"trailing data", func(b []byte) []byte { return append(b, []byte(`{}`)...) }, false},
		{"unknown field", func(b []byte) []byte { return []byte(strings.Replace(string(b), `"facts":`, `"extra":1,"facts":`, 1)) }, false},
		{"another key", func(b []byte) []byte { return []byte(strings.Replace(string(b), key, hex.EncodeToString(other[:]), 1)) }, false},
		{"no facts", func([]byte) []byte { return []byte(`{"sha256":"` + key + `"}`) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			c := NewDirCache(root)
			c.Store(sum, facts)
			p := filepath.Join(root, "pyfacts-"+CodeVersion(), key[:2], key+".json")
			good, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("entry not stored at %s: %v", p, err)
			}
			if tt.entry != nil {
				if err := os.WriteFile(p, tt.entry(good), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := c.Load(sum)
			if ok != tt.hit {
				t.Fatalf("Load hit = %v, want %v", ok, tt.hit)
			}
			if ok && !reflect.DeepEqual(got, facts) {
				t.Fatalf("Load = %+v, want %+v", got, facts)
			}
			if _, ok := c.Load(other); ok {
				t.Fatal("Load of a key never stored hit")
			}
		})
	}
}

func TestDirCacheOnAReadOnlyRootOnlyMisses(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes through directory permissions")
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(root, 0o755)
	fsys := mapFS(map[string]string{"k.py": "import helpers\n", "helpers.py": ""})
	c, err := Build(fsys, []string{"k.py"}, Options{Facts: NewDirCache(root)})
	if err != nil || len(c.Files) != 2 {
		t.Fatalf("closure over a read-only cache = %v, %v", c, err)
	}
}

func TestCodeVersionNamesTheAnalyzer(t *testing.T) {
	v := CodeVersion()
	if len(v) != 32 || strings.Trim(v, "0123456789abcdef") != "" {
		t.Fatalf("CodeVersion = %q, want 32 lowercase hex digits", v)
	}
	if CodeVersion() != v {
		t.Fatal("CodeVersion is not stable within a process")
	}
	// The embedded source is this package's: it holds this very test.
	data, err := fs.ReadFile(code, "factscache_test.go")
	if err != nil || !strings.Contains(string(data), "TestCodeVersionNamesTheAnalyzer") {
		t.Fatalf("embedded source lacks this file: %v", err)
	}
}

// The facts a file yields do not depend on where the file is: the same
// fixture under two snapshots' worth of paths gives one set of facts.
func TestAnalyzeIsPathFree(t *testing.T) {
	src := []byte("import cutlass.cute as cute\nfrom . import x\nk = cute.compile(f)\ndef f(:\n")
	a, errA := Analyze(src)
	b, errB := Analyze(append([]byte(nil), src...))
	if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("Analyze differs between two calls: %+v %v / %+v %v", a, errA, b, errB)
	}
	if len(a.Refusals) != 1 || !strings.HasPrefix(a.Refusals[0].Reason, "syntax error") || a.Refusals[0].Path != "" {
		t.Fatalf("refusals = %+v, want one syntax error with no path", a.Refusals)
	}
}
