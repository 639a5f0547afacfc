package fences

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/cacheon/engine/"

// fence is one rule: no package matched by from may reach, through its
// non-test imports, a package at or under any of forbidden, or at or
// under any of links; and, when only is set, no package of the module
// outside only (a whitelist, so a new top-level area is fenced out
// without editing the rule).
type fence struct {
	name      string
	from      []string // package patterns relative to the module root
	forbidden []string // package paths relative to the module root
	links     []string // full import paths outside the module (standard library or third party)
	only      []string // when set, the only module paths (relative to the root) from may reach
	why       string
}

// offlineVerify is the consumer's offline path: release verification and
// the image entrypoint, which verifies the release it runs from.
var offlineVerify = []string{"./release/verify", "./release/entrypoint"}

var bundleSide = []string{"./kernels/..."}

var fences = []fence{
	{name: "bundle-side", from: bundleSide, forbidden: []string{"stacks", "evaluator", "release"},
		why: "the bundle side (loading, hashing, scanning and inspecting a contribution) stands alone"},
	{name: "stack-side", from: []string{"./stacks/..."}, forbidden: []string{"evaluator", "release"},
		why: "stacks, plans and materialization are built before any release exists"},
	{name: "evaluator", from: []string{"./evaluator/..."}, forbidden: []string{"release"},
		why: "the evaluator judges bundles and never links the release pipeline"},
	{name: "settlement", from: []string{"./settlement/..."}, forbidden: []string{"release"},
		why: "settlement turns qualifications into crowns and may read the evaluator's reports, but a crown never depends on the release pipeline"},
	{name: "no-ledger-below-settlement", from: []string{"./catalog/...", "./kernels/...", "./stacks/...", "./evaluator/..."},
		forbidden: []string{"settlement"}, links: []string{"modernc.org/sqlite"},
		why: "a qualification is evidence anyone re-grades without the validator's ledger; only settlement keeps state"},
	{name: "weights-building-blocks-only", from: []string{"./settlement/weights"}, only: []string{"internal"},
		why: "the reward projection is a pure function of its JSON inputs, so an auditor re-runs it with the building blocks of internal/ alone"},
	{name: "consumer-not-producer", from: offlineVerify,
		forbidden: []string{"release/build", "release/sign", "release/store/remote", "release/publish", "release/rebuild"},
		why:       "the consumer checks a release with the projections and parsers the producer shares, never the producer itself"},
	{name: "review-record-no-ledger", from: append([]string{"./release/review"}, offlineVerify...),
		forbidden: []string{"settlement"}, links: []string{"modernc.org/sqlite"},
		why: "the review record is parsed and checked offline; only release/review/ledgercrown reads a crown from the validator's ledger"},
	{name: "offline-verify-no-network", from: offlineVerify,
		links: []string{"net/http"},
		why:   "offline verification reads a layout directory and a trusted key; an HTTP client on that path is attack surface it never needs"},
	{name: "offline-verify-no-tuf", from: offlineVerify,
		links: []string{"github.com/theupdateframework", "github.com/sigstore/sigstore-go/pkg/tuf"},
		why:   "trust comes from the key policy the consumer holds, never from a TUF trusted root fetched or cached by a client"},
	{name: "offline-verify-no-sigstore-clients", from: offlineVerify,
		links: []string{"github.com/sigstore/sigstore-go", "github.com/sigstore/rekor", "github.com/sigstore/rekor-tiles"},
		why:   "sigstore-go's bundle, verify and root packages link its Rekor client (net/http) and its TUF client; release/envelope reads a keyed bundle without them"},
	{name: "engine-binary-slim", from: []string{"./tools/cmd/cacheon-engine"},
		forbidden: []string{"settlement/ledger"},
		links:     []string{"modernc.org/sqlite", "github.com/sigstore/sigstore-go", "github.com/sigstore/rekor", "github.com/sigstore/rekor-tiles", "google.golang.org/grpc"},
		why:       "the rules' tool and the image's entrypoint build and serve an engine: the ledger (SQLite), signing, transparency logs and gRPC are most of the full cacheon's compile time, which every cold build of the rules and every rebuild of a release's entrypoint pays, and attack surface the image never runs"},
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

// at says whether pkg is one of paths or under one of them: full import
// paths, so "net/http" covers net/http/httptrace but not net/httpx.
func at(pkg string, paths []string) bool {
	for _, p := range paths {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
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

// outside says whether pkg is a package of the module that is not at or
// under any of only.
func outside(pkg string, only []string) bool {
	return strings.HasPrefix(pkg, module) && !under(pkg, only)
}

func TestImportFences(t *testing.T) {
	for _, f := range fences {
		t.Run(f.name, func(t *testing.T) {
			g := loadGraph(t, f.from)
			if len(g.roots) == 0 {
				t.Fatalf("go list matched no package for %v", f.from)
			}
			for _, r := range g.roots {
				bad := func(p string) bool {
					return under(p, f.forbidden) || at(p, f.links) || (f.only != nil && outside(p, f.only))
				}
				if c := g.chain(r, bad); c != nil {
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
	if !outside(module+"catalog", []string{"internal"}) || outside(module+"internal/identity", []string{"internal"}) || outside("math/big", []string{"internal"}) {
		t.Fatal("outside does not tell the module's packages outside a whitelist")
	}
	if under(module+"releases/x", []string{"release"}) {
		t.Fatal("a sibling with a longer name is not under the fence")
	}
	links := []struct {
		pkg  string
		want bool
	}{
		{"net/http", true},
		{"net/http/httptrace", true},
		{"net/httpx", false},
		{"net", false},
		{"github.com/theupdateframework/go-tuf/v2/metadata", true},
		{"github.com/sigstore/sigstore-go/pkg/tuf", true},
		{"github.com/sigstore/sigstore-go/pkg/tufx", false},
	}
	for _, l := range links {
		if got := at(l.pkg, []string{"net/http", "github.com/theupdateframework", "github.com/sigstore/sigstore-go/pkg/tuf"}); got != l.want {
			t.Errorf("at(%q) = %v, want %v", l.pkg, got, l.want)
		}
	}
	g.imports[module+"release/verify"] = []string{module + "release/store", "crypto"}
	g.imports[module+"release/store"] = []string{"net/http"}
	c = g.chain(module+"release/verify", func(p string) bool { return at(p, []string{"net/http"}) })
	if want := []string{module + "release/verify", module + "release/store", "net/http"}; strings.Join(c, " ") != strings.Join(want, " ") {
		t.Fatalf("chain %v, want %v", c, want)
	}
}

// layers is the house, top floor first: a package may import packages of
// its own top-level directory and of any floor below its own, never of a
// floor above. tools/ is the face (the CLI, cmd/, build tooling); the
// building blocks every layer uses are on the ground floor. A new
// top-level directory must be given a floor here before its imports pass.
var layers = [][]string{
	{"tools"},
	{"release"},
	{"settlement"},
	{"evaluator"},
	{"stacks"},
	{"kernels"},
	{"catalog", "models"},
	{"internal"},
}

// floor returns the index in layers of the top-level directory of a
// module package, or -1 for a package outside the module.
func floor(pkg string) (int, string, bool) {
	if !strings.HasPrefix(pkg, module) {
		return -1, "", true
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(pkg, module), "/")
	for i, l := range layers {
		for _, d := range l {
			if d == top {
				return i, top, true
			}
		}
	}
	return -1, top, false
}

// upward lists the imports in g that run from a floor to a floor above
// it, and the module packages whose top-level directory has no floor.
func upward(g *graph) []string {
	var bad []string
	for pkg, imports := range g.imports {
		from, top, ok := floor(pkg)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: its top-level directory %q has no floor in layers", pkg, top))
			continue
		}
		if from < 0 {
			continue
		}
		for _, imp := range imports {
			to, _, _ := floor(imp)
			if to >= 0 && to < from {
				bad = append(bad, fmt.Sprintf("%s imports %s, a floor above it", pkg, imp))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// TestLayersRunDown checks that every non-test import between the
// module's top-level directories runs down the floors of layers.
func TestLayersRunDown(t *testing.T) {
	g := loadGraph(t, []string{"./..."})
	if len(g.roots) == 0 {
		t.Fatal("go list matched no package")
	}
	for _, b := range upward(g) {
		t.Error(b)
	}
}

// TestUpwardFindsAnArrowUp checks the floor check itself on small graphs,
// so the layering cannot pass because the check is broken.
func TestUpwardFindsAnArrowUp(t *testing.T) {
	cases := []struct {
		name    string
		imports map[string][]string
		want    int
	}{
		{"down", map[string][]string{module + "tools/cli": {module + "release/verify", module + "internal/reject", "fmt"}}, 0},
		{"same floor", map[string][]string{module + "catalog": {module + "models"}}, 0},
		{"up", map[string][]string{module + "internal/identity": {module + "kernels/bundle"}}, 1},
		{"up to the face", map[string][]string{module + "stacks/plan": {module + "tools/cli"}}, 1},
		{"no floor", map[string][]string{module + "pkg/x": {"fmt"}}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := upward(&graph{imports: c.imports}); len(got) != c.want {
				t.Errorf("upward = %q, want %d findings", got, c.want)
			}
		})
	}
}
