package fingerprint

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
)

// No two of the repository's distinct contributions (and the CUDA
// fixture) are copies of each other, in either order, by any rule.
func TestDistinctContributionsNeverMatch(t *testing.T) {
	prints := map[string]*Fingerprint{}
	for _, c := range contributions {
		prints[c] = fingerprintDir(t, bundleCopy(t, "contributions/"+c))
	}
	prints["cuda_fixture"] = fingerprintDir(t, cudaBundle(t))
	for a, pa := range prints {
		for b, pb := range prints {
			if a == b {
				continue
			}
			if v := Compare(pa, pb); v.Copy {
				t.Errorf("%s copies %s: %s", b, a, v.Reason)
			}
			if pa.NormalizedDeltaDigest == pb.NormalizedDeltaDigest {
				t.Errorf("%s and %s share a normalized delta", a, b)
			}
		}
	}
}

// A small genuine edit of a kernel's arithmetic changes the normalized
// delta, so it is no normalized_delta match; the rest of the file is
// unchanged, so symmetric containment still calls it a near-copy. That
// is the documented trade-off: a one-expression change does not make a
// contribution one's own.
func TestSmallArithmeticEditIsContainmentNotNormalized(t *testing.T) {
	orig := bundleCopy(t, "contributions/rmsnorm_triton")
	dup := filepath.Join(t.TempDir(), "edited")
	testtree.Copy(t, orig, dup)
	arithmeticEdit(t, dup)
	a, b := fingerprintDir(t, orig), fingerprintDir(t, dup)
	if a.NormalizedDeltaDigest == b.NormalizedDeltaDigest {
		t.Fatal("an arithmetic edit left the normalized delta unchanged")
	}
	v := Compare(a, b)
	if v.Rule != RuleContainment || !v.Copy {
		t.Fatalf("got copy %v by %q (%s), want a containment match", v.Copy, v.Rule, v.Reason)
	}
	for _, p := range v.Pairs {
		if p.Shared == p.Total {
			t.Errorf("%s: the edit removed no fingerprint", p)
		}
	}
}

// A copy padded with a substantial file of new code is not a
// containment copy (containment is symmetric), while a copy padded with a
// small file (under MinTokens) still is.
func TestContainmentIsSymmetric(t *testing.T) {
	orig := bundleCopy(t, "contributions/moe_epilogue_atomic_torch")
	base := fingerprintDir(t, orig)
	pad := func(t *testing.T, helper string) *Fingerprint {
		dup := filepath.Join(t.TempDir(), "padded")
		testtree.Copy(t, orig, dup)
		writeFile(t, dup, "kernels/epilogue.py", "from .helper import scale\n"+reorderTopLevel(t, readFile(t, dup, "kernels/epilogue.py")))
		writeFile(t, dup, "kernels/helper.py", helper)
		writeFile(t, dup, "kernels/__init__.py", "")
		return fingerprintDir(t, dup)
	}
	small := pad(t, "def scale(x):\n    return x * 2\n")
	if v := Compare(base, small); !v.Copy || v.Rule != RuleContainment {
		t.Errorf("small padding: copy %v by %q (%s), want containment", v.Copy, v.Rule, v.Reason)
	}
	var big strings.Builder
	for i := 0; i < 12; i++ {
		big.WriteString("def scale" + string(rune('a'+i)) + "(x, y, z):\n    w = x * y + z - 1\n    return torch.where(w > 0, w, y) / (z + 1)\n\n")
	}
	large := pad(t, "import torch\n\n"+big.String()+"def scale(x):\n    return x * 2\n")
	found := false
	for _, f := range large.Files {
		found = found || (f.Path == "kernels/helper.py" && f.Substantial())
	}
	if !found {
		t.Fatalf("the padding file is not a substantial selected file: %+v", large.Files)
	}
	if v := Compare(base, large); v.Copy {
		t.Errorf("substantial original padding: %s, want no copy", v.Reason)
	}
}

// The census names the earliest earlier proposal of another hotkey in
// the same namespace that a proposal copies.
func TestCensus(t *testing.T) {
	orig := bundleCopy(t, "contributions/silu_and_mul_triton")
	recommented := filepath.Join(t.TempDir(), "recommented")
	testtree.Copy(t, orig, recommented)
	edit(t, recommented, "kernels/silu_and_mul.py", "Each program handles", "My kernel. Each program handles")
	a := fingerprintDir(t, orig)
	b := fingerprintDir(t, recommented)
	other := fingerprintDir(t, bundleCopy(t, "contributions/silu_and_mul_torch"))
	got := Census([]Proposal{
		{ID: "p1", Hotkey: "alice", Namespace: "activation.silu_and_mul", Print: a},
		{ID: "p2", Hotkey: "alice", Namespace: "activation.silu_and_mul", Print: a},     // her own resubmission
		{ID: "p3", Hotkey: "bob", Namespace: "norm.rmsnorm", Print: a},                  // another namespace
		{ID: "p4", Hotkey: "carol", Namespace: "activation.silu_and_mul", Print: other}, // distinct work
		{ID: "p5", Hotkey: "bob", Namespace: "activation.silu_and_mul", Print: b},       // copies p1
		{ID: "p6", Hotkey: "alice", Namespace: "activation.silu_and_mul", Print: b},     // copies p5 (p1, p2 are hers)
		{ID: "p7", Hotkey: "dave", Namespace: "activation.silu_and_mul", Print: other},  // copies p4
	})
	want := []struct{ id, copyOf, rule string }{
		{"p1", "", ""}, {"p2", "", ""}, {"p3", "", ""}, {"p4", "", ""},
		{"p5", "p1", RuleNormalizedDelta}, {"p6", "p5", RulePayload}, {"p7", "p4", RulePayload},
	}
	var gotRows, wantRows [][3]string
	for _, f := range got {
		gotRows = append(gotRows, [3]string{f.ID, f.CopyOf, f.Rule})
		if (f.CopyOf == "") != (f.Reason == "") {
			t.Errorf("%s: copy of %q with reason %q", f.ID, f.CopyOf, f.Reason)
		}
	}
	for _, w := range want {
		wantRows = append(wantRows, [3]string{w.id, w.copyOf, w.rule})
	}
	if !reflect.DeepEqual(gotRows, wantRows) {
		t.Errorf("census\n got %v\nwant %v", gotRows, wantRows)
	}
}

// The reason is a stable function of the two fingerprints.
func TestReasonIsStable(t *testing.T) {
	orig := bundleCopy(t, "contributions/moe_epilogue_atomic_torch")
	dup := filepath.Join(t.TempDir(), "reordered")
	testtree.Copy(t, orig, dup)
	writeFile(t, dup, "kernels/epilogue.py", reorderTopLevel(t, readFile(t, dup, "kernels/epilogue.py")))
	a1, b1 := fingerprintDir(t, orig), fingerprintDir(t, dup)
	a2, b2 := fingerprintDir(t, orig), fingerprintDir(t, dup)
	v1, v2 := Compare(a1, b1), Compare(a2, b2)
	if v1.Reason != v2.Reason || !reflect.DeepEqual(v1.Pairs, v2.Pairs) {
		t.Fatalf("reasons differ:\n%s\n%s", v1.Reason, v2.Reason)
	}
	want := "containment: later kernels/epilogue.py in kernels/epilogue.py "
	if !strings.HasPrefix(v1.Reason, want) {
		t.Fatalf("reason %q, want prefix %q", v1.Reason, want)
	}
}

// Only the selected delta is fingerprinted: a module nothing imports, a
// README and the bundle id change none of the three identities, even
// when the unused module is another contribution's kernel.
func TestOnlySelectedFilesCount(t *testing.T) {
	orig := bundleCopy(t, "contributions/silu_and_mul_torch")
	padded := filepath.Join(t.TempDir(), "padded")
	testtree.Copy(t, orig, padded)
	writeFile(t, padded, "kernels/unused.py", readFile(t, bundleCopy(t, "contributions/rmsnorm_triton"), "kernels/rmsnorm.py"))
	writeFile(t, padded, "README.md", "Another README.\n")
	edit(t, padded, "manifest.toml", `bundle_id = "silu-and-mul-torch"`, `bundle_id = "padded"`)
	a, b := fingerprintDir(t, orig), fingerprintDir(t, padded)
	if a.ContentHash == b.ContentHash {
		t.Fatal("the padding did not change the content hash: the test tests nothing")
	}
	if a.SelectedPayloadDigest != b.SelectedPayloadDigest || a.NormalizedDeltaDigest != b.NormalizedDeltaDigest || !reflect.DeepEqual(a.Files, b.Files) {
		t.Errorf("unselected files changed the fingerprint:\n%+v\n%+v", a, b)
	}
}
