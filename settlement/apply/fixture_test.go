package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/settlement/settle"
	"github.com/cacheon/engine/settlement/settle/settletest"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
	"github.com/cacheon/engine/tools/canonjson"
	"github.com/cacheon/engine/tools/testtree"
)

// fixture is a real ledger over a copy of the repository: the
// repository's incumbent recorded as the initial stack, and bundles taken
// in through intake and qualified through the ledger's state machine.
type fixture struct {
	ws        string
	path      string
	l         *ledger.Ledger
	cat       *catalog.Catalog
	payload   contribution.PayloadOptions
	incumbent *stack.EvaluationStackManifest
	cur       *ledger.Stack
}

var payload = contribution.PayloadOptions{Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck, PatcherDigests: map[string]string{}}

// workspace copies what the incumbent stack needs (under Bazel the data
// files are links, which bundles may not hold).
func workspace(t testing.TB) string {
	return testtree.Workspace(t, "../..", "catalog/targets.hcl", "stacks/incumbent.hcl", "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json", "kernels/contributions", "kernels/fixtures")
}

func newFixture(t testing.TB, ws, path string) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{ws: ws, path: path, payload: payload}
	src, err := os.ReadFile(filepath.Join(ws, "stacks", "incumbent.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	sf, diags := stack.Parse("incumbent.hcl", src)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if f.cat, err = catalog.Default(); err != nil {
		t.Fatal(err)
	}
	a, err := stack.Assemble(sf, stack.Sources{Workspace: ws}, f.cat, payload)
	if err != nil {
		t.Fatal(err)
	}
	f.incumbent = a.Manifest.(*stack.EvaluationStackManifest)
	digest, err := f.incumbent.Digest()
	if err != nil {
		t.Fatal(err)
	}
	f.l = openLedger(t, path)
	if f.cur, err = f.l.InitStack(ctx, ledger.Stack{StackDigest: digest, TreeDigest: settletest.Digest("tree/incumbent"), HCL: string(src)}); err != nil {
		t.Fatal(err)
	}
	return f
}

func openLedger(t testing.TB, path string) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), path, ledger.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// intaken is a proposal taken in, with what its qualifications measure.
type intaken struct {
	id        int64
	proposal  ledger.Proposal
	candidate settletest.Candidate
}

// intake takes bundle name in for hotkey at block and plans its
// candidate against the incumbent from the published bytes, as
// qualification does.
func (f *fixture) intake(t testing.TB, name, hotkey string, block int64) intaken {
	t.Helper()
	ctx := context.Background()
	snap, err := bundle.Open(filepath.Join(f.ws, "kernels", "contributions", name))
	if err != nil {
		t.Fatal(err)
	}
	in, err := contribution.InspectSnapshot(snap, contribution.Options{Catalog: f.cat, Payload: f.payload})
	if err != nil {
		t.Fatal(err)
	}
	arena := f.incumbent.ArenaDigest
	res, err := f.l.Intake(ctx, snap, ledger.IntakeRequest{Hotkey: hotkey, Position: ledger.Position{Block: block}, ArenaDigest: arena,
		TargetID: in.Target.TargetID, TargetSpecDigest: in.Target.TargetSpecDigest,
		SelectedPayloadDigest: in.SelectedPayloadDigest, SelectedDeltaDigest: in.SelectedDeltaDigest})
	if err != nil {
		t.Fatal(err)
	}
	pin, err := contribution.Inspect(res.Publication, contribution.Options{Catalog: f.cat, Payload: f.payload})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := contribution.NewProposalRef(pin, plan.LocalAttribution(res.Proposal.ContentHash))
	if err != nil {
		t.Fatal(err)
	}
	cand, err := plan.Plan(f.cat, f.incumbent, ref)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := cand.Stack.Digest()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := ref.RefDigest()
	if err != nil {
		t.Fatal(err)
	}
	tr := settle.Transition{Displaced: []settle.Displaced{}}
	if cand.Transition.Prior != nil {
		if tr.Prior, err = cand.Transition.Prior.RefDigest(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range cand.Transition.Displaced {
		e, _ := f.incumbent.Entry(id)
		d, err := e.RefDigest()
		if err != nil {
			t.Fatal(err)
		}
		tr.Displaced = append(tr.Displaced, settle.Displaced{TargetID: id, Entry: d})
	}
	target, _ := f.cat.Target(in.Target.TargetID)
	members := append([]string(nil), target.Members...)
	sort.Strings(members)
	p := res.Proposal
	return intaken{id: p.ID, proposal: *p, candidate: settletest.Candidate{
		Arena: arena, Reservation: settletest.Digest("reservation/" + p.Position.String()),
		Finalized: settle.Position{Block: uint64(block)}, Hotkey: hotkey, TargetID: in.Target.TargetID,
		TargetSpec: in.Target.TargetSpecDigest, Members: members, SelectedDelta: in.SelectedDeltaDigest,
		Arm: settletest.Digest("arm/" + cs), IncumbentStack: f.cur.StackDigest, IncumbentTree: f.cur.TreeDigest,
		CandidateStack: cs, CandidateTree: settletest.Digest("tree/" + cs), Proposal: rd, Transition: tr,
		Speedups: [2]string{"1.3", "1.25"},
	}}
}

// qualify walks proposal id through screening and two qualifications
// whose settlement views are a and b, to qualified.
func (f *fixture) qualify(t testing.TB, id int64, a, b settle.Qualification) {
	t.Helper()
	ctx := context.Background()
	step := func(to ledger.Status) {
		t.Helper()
		if err := f.l.Transition(ctx, id, to, ""); err != nil {
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
		if _, err := f.l.RecordAttempt(ctx, id, at); err != nil {
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

// queue takes bundle name in and qualifies it with an independent pair.
func (f *fixture) queue(t testing.TB, name, hotkey string, block int64, edit func(*settletest.Candidate)) intaken {
	t.Helper()
	in := f.intake(t, name, hotkey, block)
	if edit != nil {
		edit(&in.candidate)
	}
	a, b := settletest.Pair(hotkey+in.proposal.Position.String(), in.candidate)
	f.qualify(t, in.id, a, b)
	return in
}

func (f *fixture) options() apply.Options {
	return apply.Options{Workspace: f.ws, Payload: f.payload}
}
