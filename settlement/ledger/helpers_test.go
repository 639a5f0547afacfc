package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/kernels/bundle"
)

// writeBundle writes a small bundle whose bytes depend on seed and returns
// its directory.
func writeBundle(t testing.TB, seed string) string {
	t.Helper()
	return writeFiles(t, map[string]string{
		"manifest.toml":    "bundle_id = \"b\"\nabi_version = \"cacheon-op-abi-v0\"\n\n[[ops]]\nslot = \"norm.rmsnorm\"\nsource = \"kernels/op.py\"\nentry = \"run\"\n",
		"kernels/op.py":    "def run(x):\n    return x  # " + seed + "\n",
		"README.md":        "seed " + seed + "\n",
		"kernels/sub/a.py": "A = 1\n",
	})
}

// writeFiles writes files (slash-separated paths relative to the bundle
// root) as a new bundle directory and returns it.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func snapshot(t testing.TB, dir string) *bundle.Snapshot {
	t.Helper()
	s, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hex64 is a deterministic digest for test fields.
func hex64(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// ledgerPath returns a fresh ledger path whose publications can be removed
// after the test (they are read-only).
func ledgerPath(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { writable(dir) })
	return filepath.Join(dir, "ledger.db")
}

func writable(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
}

func openNew(t testing.TB, path string) *Ledger {
	t.Helper()
	l, err := Open(context.Background(), path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func request(hotkey string, block int64) IntakeRequest {
	return IntakeRequest{
		Hotkey:                hotkey,
		Position:              Position{Block: block},
		ArenaDigest:           hex64("arena"),
		TargetID:              "norm.rmsnorm",
		TargetSpecDigest:      hex64("spec"),
		SelectedPayloadDigest: hex64("payload" + hotkey),
		SelectedDeltaDigest:   hex64("delta" + hotkey),
	}
}

// stack returns a test stack for generation n.
func stack(n int) Stack {
	return Stack{StackDigest: hex64(fmt.Sprint("stack", n)), TreeDigest: hex64(fmt.Sprint("tree", n)), HCL: fmt.Sprintf("# stack %d\n", n)}
}

// crownSettlement is a settlement of the shape settle writes for a crown:
// CROWN, ADOPTION and STACK_TRANSITION events after head, the stack moving
// from generation n-1 to n, a crown and a standing claim.
func crownSettlement(t testing.TB, h Head, n int) Settlement {
	t.Helper()
	from, to := stack(n-1), stack(n)
	var events []Event
	for _, typ := range []string{"CROWN", "ADOPTION", "STACK_TRANSITION"} {
		e, err := NextEvent(h, typ, map[string]any{
			"candidate_digest":  hex64(fmt.Sprint("candidate", n)),
			"subject_digest":    hex64(fmt.Sprint("subject", n)),
			"target_id":         "norm.rmsnorm",
			"from_stack_digest": from.StackDigest, "to_stack_digest": to.StackDigest,
			"from_tree_digest": from.TreeDigest, "to_tree_digest": to.TreeDigest,
			"reason": "qualified_win",
		})
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
		h = e.Head()
	}
	crown := events[0].Sequence
	return Settlement{
		Events: events, FromStack: from.StackDigest, NewStack: &to,
		Crowns: []Crown{{EventSequence: crown, ArenaDigest: hex64("arena"), TargetID: "norm.rmsnorm", ContributionDigest: hex64(fmt.Sprint("contribution", n)), Hotkey: "hk", Speedup: "1.0224"}},
		StandingClaims: []StandingClaim{{ArenaDigest: hex64("arena"), TargetID: "norm.rmsnorm", TargetSpecDigest: hex64("spec"), ContributionDigest: hex64(fmt.Sprint("contribution", n)),
			Hotkey: "hk", SpeedupPPM: 1022400, CrownedBlock: int64(n), EvidenceDigest: hex64(fmt.Sprint("evidence", n)), EventSequence: crown}},
	}
}

func bundleSnapshot(dir string) (*bundle.Snapshot, error) { return bundle.Open(dir) }
