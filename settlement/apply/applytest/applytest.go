// Package applytest builds real settlement ledgers for the tests of the
// packages and commands that settle: a copy of the repository's
// incumbent recorded as the initial stack, bundles taken in through
// intake, planned against the incumbent from their published bytes as
// qualification plans them, and walked through screening and two
// independent qualifications (settletest.Pair) to qualified.
package applytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/settlement/settle/settletest"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// Fixture is a real ledger over a copy of the repository: the
// repository's incumbent recorded as the initial stack, and bundles taken
// in through intake and qualified through the ledger's state machine.
type Fixture struct {
	WS        string // the repository copy
	Path      string // the ledger file
	L         *ledger.Ledger
	Cat       *catalog.Catalog
	Payload   contribution.PayloadOptions
	Incumbent *stack.EvaluationStackManifest
	Cur       *ledger.Stack // the initial stack
}

// Payload are the validator's payload options.
var Payload = contribution.PayloadOptions{Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck, PatcherDigests: map[string]string{}}

// Workspace copies, from the repository at root, what the incumbent stack needs (under Bazel the data
// files are links, which bundles may not hold).
func Workspace(t testing.TB, root string) string {
	return testtree.Workspace(t, root, "catalog/targets.hcl", "stacks/incumbent.hcl", "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json", "kernels/contributions", "kernels/fixtures")
}

// New records the incumbent of the repository copy ws as the initial
// stack of a new ledger at path, under a tree digest of its own (the
// qualifications these fixtures record never materialize it).
func New(t testing.TB, ws, path string) *Fixture {
	t.Helper()
	return NewWithTree(t, ws, path, settletest.Digest("tree/incumbent"))
}

// NewWithTree is New with the incumbent's real tree digest, for tests
// whose qualifications materialize the incumbent and measure over it.
func NewWithTree(t testing.TB, ws, path, tree string) *Fixture {
	t.Helper()
	ctx := context.Background()
	f := &Fixture{WS: ws, Path: path, Payload: Payload}
	src, err := os.ReadFile(filepath.Join(ws, "stacks", "incumbent.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	sf, diags := stack.Parse("incumbent.hcl", src)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if f.Cat, err = catalog.Default(); err != nil {
		t.Fatal(err)
	}
	a, err := stack.Assemble(sf, stack.Sources{Workspace: ws}, f.Cat, Payload)
	if err != nil {
		t.Fatal(err)
	}
	f.Incumbent = a.Manifest.(*stack.EvaluationStackManifest)
	digest, err := f.Incumbent.Digest()
	if err != nil {
		t.Fatal(err)
	}
	f.L = OpenLedger(t, path)
	if f.Cur, err = f.L.InitStack(ctx, ledger.Stack{StackDigest: digest.String(), TreeDigest: tree, HCL: string(src)}); err != nil {
		t.Fatal(err)
	}
	return f
}

// OpenLedger opens (creating) the ledger at path, closed with the test.
func OpenLedger(t testing.TB, path string) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), path, ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// Intaken is a proposal taken in, with what its qualifications measure.
type Intaken struct {
	ID        int64
	Proposal  ledger.Proposal
	Candidate settletest.Candidate
	request   ledger.IntakeRequest
	snapshot  *bundle.Snapshot
}

// Again takes the bytes of in in again, for hotkey at block: another
// proposal of the same candidate bytes, without inspecting and planning
// them again (benchmarks queue many).
func (f *Fixture) Again(t testing.TB, in Intaken, hotkey string, block int64) Intaken {
	t.Helper()
	r := in.request
	r.Hotkey, r.Position = hotkey, ledger.Position{Block: block}
	res, err := f.L.Intake(context.Background(), in.snapshot, r)
	if err != nil {
		t.Fatal(err)
	}
	out := in
	out.ID, out.Proposal, out.request = res.Proposal.ID, *res.Proposal, r
	out.Candidate.Hotkey, out.Candidate.Finalized = hotkey, settle.Position{Block: uint64(block)}
	out.Candidate.Reservation = settletest.Digest("reservation/" + r.Position.String())
	out.Candidate.Members = append([]string(nil), in.Candidate.Members...)
	return out
}

// Intake takes bundle name in for hotkey at block and plans its
// candidate against the incumbent from the published bytes, as
// qualification does.
func (f *Fixture) Intake(t testing.TB, name, hotkey string, block int64) Intaken {
	t.Helper()
	ctx := context.Background()
	snap, err := bundle.Open(filepath.Join(f.WS, "kernels", "contributions", name))
	if err != nil {
		t.Fatal(err)
	}
	in, err := contribution.InspectSnapshot(snap, contribution.Options{Catalog: f.Cat, Payload: f.Payload})
	if err != nil {
		t.Fatal(err)
	}
	arena := f.Incumbent.ArenaDigest.String()
	req := ledger.IntakeRequest{Hotkey: hotkey, Position: ledger.Position{Block: block}, ArenaDigest: arena,
		TargetID: in.Target.TargetID, TargetSpecDigest: in.Target.TargetSpecDigest.String(),
		SelectedPayloadDigest: in.SelectedPayloadDigest.String(), SelectedDeltaDigest: in.SelectedDeltaDigest.String()}
	res, err := f.L.Intake(ctx, snap, req)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := contribution.Inspect(res.Publication, contribution.Options{Catalog: f.Cat, Payload: f.Payload})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := contribution.NewProposalRef(pin, plan.LocalAttribution(pin.ContentHash))
	if err != nil {
		t.Fatal(err)
	}
	cand, err := plan.Plan(f.Cat, f.Incumbent, ref)
	if err != nil {
		t.Fatal(err)
	}
	stackDigest, err := cand.Stack.Digest()
	if err != nil {
		t.Fatal(err)
	}
	refDigest, err := ref.RefDigest()
	if err != nil {
		t.Fatal(err)
	}
	cs, rd := stackDigest.String(), refDigest.String()
	tr := settle.Transition{Displaced: []settle.Displaced{}}
	if cand.Transition.Prior != nil {
		prior, err := cand.Transition.Prior.RefDigest()
		if err != nil {
			t.Fatal(err)
		}
		tr.Prior = prior.String()
	}
	for _, id := range cand.Transition.Displaced {
		e, _ := f.Incumbent.Entry(id)
		d, err := e.RefDigest()
		if err != nil {
			t.Fatal(err)
		}
		tr.Displaced = append(tr.Displaced, settle.Displaced{TargetID: id, Entry: d.String()})
	}
	target, _ := f.Cat.Target(in.Target.TargetID)
	members := append([]string(nil), target.Members...)
	sort.Strings(members)
	p := res.Proposal
	return Intaken{ID: p.ID, Proposal: *p, request: req, snapshot: snap, Candidate: settletest.Candidate{
		Arena: arena, Reservation: settletest.Digest("reservation/" + p.Position.String()),
		Finalized: settle.Position{Block: uint64(block)}, Hotkey: hotkey, TargetID: in.Target.TargetID,
		TargetSpec: in.Target.TargetSpecDigest.String(), Members: members, SelectedDelta: in.SelectedDeltaDigest.String(),
		Arm: settletest.Digest("arm/" + cs), IncumbentStack: f.Cur.StackDigest, IncumbentTree: f.Cur.TreeDigest,
		CandidateStack: cs, CandidateTree: settletest.Digest("tree/" + cs), Proposal: rd, Transition: tr,
		Speedups: [2]string{"1.3", "1.25"},
	}}
}

// Qualify walks proposal id through screening and two qualifications
// whose settlement views are a and b, to qualified.
func (f *Fixture) Qualify(t testing.TB, id int64, a, b settle.Qualification) {
	t.Helper()
	ctx := context.Background()
	step := func(to ledger.Status) {
		t.Helper()
		if err := f.L.Transition(ctx, id, to, ""); err != nil {
			t.Fatal(err)
		}
	}
	record := func(stage string, q *settle.Qualification) {
		t.Helper()
		at := ledger.Attempt{Stage: stage, Decision: "PASS", Reason: "passed",
			ReportDigest: settletest.Digest("screen report"), EvidenceAddress: settletest.Digest("screen evidence")}
		if q != nil {
			view, err := canonjson.Marshal(q)
			if err != nil {
				t.Fatal(err)
			}
			at.ReportDigest, at.EvidenceAddress, at.Settlement = q.Report, q.Report, view
		}
		if _, err := f.L.RecordAttempt(ctx, id, at); err != nil {
			t.Fatal(err)
		}
	}
	step(ledger.Screening)
	record(ledger.StageScreen, nil)
	step(ledger.Promoted)
	step(ledger.Qualifying)
	record(ledger.StageQualification, &a)
	step(ledger.ReproductionPending)
	step(ledger.Qualifying)
	record(ledger.StageQualification, &b)
	step(ledger.Qualified)
}

// Queue takes bundle name in and qualifies it with an independent pair.
func (f *Fixture) Queue(t testing.TB, name, hotkey string, block int64, edit func(*settletest.Candidate)) Intaken {
	t.Helper()
	in := f.Intake(t, name, hotkey, block)
	if edit != nil {
		edit(&in.Candidate)
	}
	a, b := settletest.Pair(hotkey+in.Proposal.Position.String(), in.Candidate)
	f.Qualify(t, in.ID, a, b)
	return in
}

// Options are the settle options for the fixture's workspace.
func (f *Fixture) Options() apply.Options {
	return apply.Options{Workspace: f.WS, Payload: f.Payload}
}

// Atomic is the repository's atomic contribution: the pair of
// collective.moe_epilogue.v1, whose catalog target displaces both of its
// member targets.
const Atomic = "moe_epilogue_atomic_torch"

// Member writes, in the workspace ws, a singleton contribution at the
// slot target slot (one of Atomic's members) taken from Atomic: its
// manifest keeps the one op row of that slot and names no competition,
// so it resolves to the slot's own target, which Atomic displaces. It
// returns the bundle's name, for Intake. The repository ships no
// singleton contribution at either member, and a crown there is what a
// later atomic crown neutralizes.
func Member(t testing.TB, ws, slot string) string {
	t.Helper()
	name := strings.ReplaceAll(slot, ".", "_") + "_member"
	dir := filepath.Join(ws, "kernels", "contributions", name)
	testtree.Copy(t, filepath.Join(ws, "kernels", "contributions", Atomic), dir)
	entry := slot[strings.LastIndex(slot, ".")+1:]
	manifest := fmt.Sprintf(`# The %s row of %s alone: a singleton contribution.

bundle_id = %q
abi_version = "cacheon-op-abi-v0"

[[ops]]
slot = %q
source = "kernels/epilogue.py"
entry = %q
dtypes = ["bfloat16", "float16", "float32"]
metadata = "metadata/epilogue.json"
`, slot, Atomic, strings.ReplaceAll(name, "_", "-"), slot, entry)
	metadata := fmt.Sprintf("{\n  \"op\": %q,\n  \"dtypes\": [\"bfloat16\", \"float16\", \"float32\"],\n  \"max_last_dim\": 16384\n}\n", slot)
	for rel, body := range map[string]string{"manifest.toml": manifest, "metadata/epilogue.json": metadata, "README.md": "# " + name + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// Advance makes the ledger's current stack the incumbent later Intake
// calls plan against, as qualifying against the new incumbent after a
// crown does.
func (f *Fixture) Advance(t testing.TB) {
	t.Helper()
	cur, err := f.L.CurrentStack(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sf, diags := stack.Parse("current.hcl", []byte(cur.HCL))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	a, err := stack.Assemble(sf, stack.Sources{Workspace: f.WS}, f.Cat, f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	f.Incumbent, f.Cur = a.Manifest.(*stack.EvaluationStackManifest), cur
}
