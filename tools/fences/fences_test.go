package fences

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/cacheon/engine/"

// fence is one rule: no package matched by from may reach, through its
// non-test imports, a package at or under any of forbidden.
type fence struct {
	name      string
	from      []string // package patterns relative to the module root
	forbidden []string // package paths relative to the module root
	why       string
}

var bundleSide = []string{"./kernels/bundle", "./tools/pyparse", "./kernels/..."}

var fences = []fence{
	{"bundle-side", bundleSide, []string{"stacks", "evaluator", "release"},
		"the bundle side (loading, hashing, scanning and inspecting a contribution) stands alone"},
	{"stack-side", []string{"./stacks/..."}, []string{"evaluator", "release"},
		"stacks, plans and materialization are built before any release exists"},
	{"evaluator", []string{"./evaluator/..."}, []string{"release"},
		"the evaluator judges bundles and never links the release pipeline"},
}

// graph is the import graph go list reports: each package's direct
// non-test imports, and which packages the patterns matched.
type graph struct {
	imports map[string][]string
	roots   []string
}

func loadGraph(t *testing.T, patterns []string) *graph {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the import fences need the go command on PATH to list the import graph (absent here, as under Bazel)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skipf("the import fences need the module source tree (no go.mod at %s)", root)
	}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.DepOnly}}{{range .Imports}} {{.}}{{end}}"}, patterns...)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := &graph{imports: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		g.imports[f[0]] = f[2:]
		if f[1] == "false" {
			g.roots = append(g.roots, f[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(g.roots)
	return g
}

// chain returns the shortest import chain from pkg to a package for which
// bad is true, or nil when there is none.
func (g *graph) chain(pkg string, bad func(string) bool) []string {
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != pkg && bad(p) {
			var c []string
			for ; p != ""; p = prev[p] {
				c = append([]string{p}, c...)
			}
			return c
		}
		for _, q := range g.imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return nil
}

func under(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		full := module + p
		if pkg == full || strings.HasPrefix(pkg, full+"/") {
			return true
		}
	}
	return false
}

func TestImportFences(t *testing.T) {
	for _, f := range fences {
		t.Run(f.name, func(t *testing.T) {
			g := loadGraph(t, f.from)
			if len(g.roots) == 0 {
				t.Fatalf("go list matched no package for %v", f.from)
			}
			for _, r := range g.roots {
				if c := g.chain(r, func(p string) bool { return under(p, f.forbidden) }); c != nil {
					t.Errorf("%s reaches %s (%s):\n  %s", r, c[len(c)-1], f.why, strings.Join(c, "\n  -> "))
				}
			}
		})
	}
}

// TestFenceChain checks the chain search itself on a small graph, so a
// fence cannot pass because the search is broken.
func TestFenceChain(t *testing.T) {
	g := &graph{imports: map[string][]string{
		module + "kernels/scan":   {"fmt", module + "tools/manifest"},
		module + "tools/manifest": {module + "tools/helper"},
		module + "tools/helper":   {module + "release/store"},
	}}
	c := g.chain(module+"kernels/scan", func(p string) bool { return under(p, []string{"release"}) })
	want := []string{module + "kernels/scan", module + "tools/manifest", module + "tools/helper", module + "release/store"}
	if strings.Join(c, " ") != strings.Join(want, " ") {
		t.Fatalf("chain %v, want %v", c, want)
	}
	if c := g.chain(module+"kernels/scan", func(p string) bool { return under(p, []string{"evaluator"}) }); c != nil {
		t.Fatalf("unexpected chain %v", c)
	}
	if under(module+"releases/x", []string{"release"}) {
		t.Fatal("a sibling with a longer name is not under the fence")
	}
}
