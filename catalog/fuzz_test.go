package catalog

import (
	"flag"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// maxFuzzSnippet bounds the fuzzed source. The fuzzing engine minimizes
// every input that finds new coverage before it fuzzes on, for up to
// -fuzzminimizetime (a minute by default), and its minimizer tries a
// number of candidates quadratic in the input's length, each a full
// parse, validation and digest (about a millisecond here). Seeded with the
// whole 18 KB default catalog, the first new input kept every worker
// minimizing for the rest of the run: 0 execs/sec. The fuzzed bytes are
// therefore a short snippet appended to ruleBase, a small valid catalog,
// so every input still reaches the cross-block rules and the identities,
// and minimization tries at most a hundred candidates unless the command
// line says otherwise.
const maxFuzzSnippet = 1024

// boundMinimization sets -fuzzminimizetime to 100 runs when the command
// line leaves it at its default.
func boundMinimization(f *testing.F) {
	set := false
	flag.Visit(func(fl *flag.Flag) { set = set || fl.Name == "test.fuzzminimizetime" })
	if !set {
		if err := flag.Set("test.fuzzminimizetime", "100x"); err != nil {
			f.Logf("cannot bound minimization: %v", err)
		}
	}
}

// FuzzParse feeds arbitrary source to the loader: it must never panic,
// and whatever loads must carry well-formed identities.
func FuzzParse(f *testing.F) {
	boundMinimization(f)
	f.Add([]byte(""))
	f.Add([]byte(precedenceCatalog))
	f.Add([]byte("\nfeature_set \"more\" {\n  features = [\"entry\", \"variants\"]\n}\n" + slotTarget("a.one", "")))
	for _, rc := range ruleCases {
		if len(rc.snippet) <= maxFuzzSnippet && len(rc.replace) == 0 {
			f.Add([]byte(rc.snippet))
		}
	}
	f.Fuzz(func(t *testing.T, snippet []byte) {
		if len(snippet) > maxFuzzSnippet {
			return
		}
		src := append([]byte(ruleBase), snippet...)
		c, diags := Parse(src, "fuzz.hcl")
		if diags.HasErrors() {
			if c != nil {
				t.Fatal("catalog returned together with errors")
			}
			return
		}
		if !identity.IsHex64(c.Digest().String()) {
			t.Fatalf("digest %q", c.Digest())
		}
		snap, err := canonjson.Parse(c.Snapshot())
		if err != nil {
			t.Fatalf("snapshot is not canonical JSON: %v", err)
		}
		if d := identity.MustH(identity.DomainTargetCatalog, snap); d != c.Digest() {
			t.Fatalf("snapshot hashes to %s, digest is %s", d, c.Digest())
		}
		for _, id := range c.TargetIDs() {
			// A target with everything it requires is always a valid active set.
			active := append([]string{id}, c.RequiresClosure(id)...)
			if _, err := c.OrderedActiveTargets(active); err != nil {
				t.Fatalf("%v with its requirements is not a valid active set: %v", id, err)
			}
		}
	})
}

// The default catalog, too big to fuzz from, still loads through the same
// checks the fuzzer applies.
func TestDefaultCatalogIdentities(t *testing.T) {
	c, diags := Parse(DefaultSource(), DefaultFile)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	snap, err := canonjson.Parse(c.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if d := identity.MustH(identity.DomainTargetCatalog, snap); d != c.Digest() {
		t.Fatalf("snapshot hashes to %s, digest is %s", d, c.Digest())
	}
}
