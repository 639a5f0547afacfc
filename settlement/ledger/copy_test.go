package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/kernels/fingerprint"
)

// rmsKernel is a substantial kernel (well over fingerprint.MinTokens), so
// containment takes part.
const rmsKernel = `import torch


def _mean_square(x, hidden):
    acc = torch.zeros(x.shape[:-1], dtype=torch.float32, device=x.device)
    for i in range(hidden):
        v = x[..., i].to(torch.float32)
        acc = acc + v * v
    return acc / hidden


def run(x, weight, eps):
    hidden = x.shape[-1]
    ms = _mean_square(x, hidden)
    inv = torch.rsqrt(ms + eps).unsqueeze(-1)
    out = x.to(torch.float32) * inv
    out = out * weight.to(torch.float32)
    return out.to(x.dtype)
`

// otherKernel is an honest, different kernel for the same target.
const otherKernel = `import torch


def run(x, weight, eps):
    variance = x.float().pow(2).mean(dim=-1, keepdim=True)
    scaled = x.float() * torch.rsqrt(variance + eps)
    if weight is None:
        return scaled.type_as(x)
    gain = weight.float().reshape([1] * (x.dim() - 1) + [-1])
    clipped = torch.clamp(scaled * gain, min=-65504.0, max=65504.0)
    return clipped.type_as(x)
`

// seedKernel stands for a contribution of the project's own.
const seedKernel = `import torch


def run(x, weight, eps):
    rows = x.reshape(-1, x.shape[-1]).float()
    norms = rows.norm(dim=-1, keepdim=True) / (rows.shape[-1] ** 0.5)
    out = rows / (norms + eps) * weight.float()
    return out.reshape(x.shape).to(x.dtype)
`

// kernelBundle writes a bundle whose op source kernels/op.py is src, with
// a README that does not enter any identity but the content hash.
func kernelBundle(t testing.TB, src, readme string) string {
	t.Helper()
	return writeFiles(t, map[string]string{
		"manifest.toml": "bundle_id = \"b\"\nabi_version = \"cacheon-op-abi-v0\"\n\n[[ops]]\nslot = \"norm.rmsnorm\"\nsource = \"kernels/op.py\"\nentry = \"run\"\n",
		"kernels/op.py": src,
		"README.md":     readme,
	})
}

// inspected reads dir as intake does and returns its snapshot and a
// request carrying the identities and the fingerprint of those bytes.
func inspected(t testing.TB, dir, hotkey string, block int64) (*bundle.Snapshot, IntakeRequest) {
	t.Helper()
	snap := snapshot(t, dir)
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	in, err := contribution.InspectSnapshot(snap, contribution.Options{Catalog: cat,
		Payload: contribution.PayloadOptions{Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck}})
	if err != nil {
		t.Fatalf("inspect %s: %v", dir, err)
	}
	fp, err := fingerprint.Of(in)
	if err != nil {
		t.Fatal(err)
	}
	return snap, IntakeRequest{Hotkey: hotkey, Position: Position{Block: block}, ArenaDigest: hex64("arena"),
		TargetID: in.Target.TargetID, TargetSpecDigest: in.Target.TargetSpecDigest.String(),
		SelectedPayloadDigest: in.SelectedPayloadDigest.String(), SelectedDeltaDigest: in.SelectedDeltaDigest.String(), Print: fp}
}

func seedOf(t testing.TB, name, src string) Seed {
	t.Helper()
	_, r := inspected(t, kernelBundle(t, src, ""), "project", 1)
	return Seed{Name: name, Print: r.Print}
}

// recomment changes the kernel's layout and comments, not its code.
func recomment(src string) string {
	return "# my own rmsnorm\n" + strings.ReplaceAll(src, "    ", "\t") + "# tuned\n"
}

// oneEdit changes one expression of the kernel's arithmetic: a copy with
// a different normalized delta that containment still catches.
func oneEdit(t testing.TB, src string) string {
	t.Helper()
	const from, to = "return acc / hidden", "return acc * (1.0 / hidden)"
	if !strings.Contains(src, from) {
		t.Fatalf("%q not in the kernel", from)
	}
	return strings.Replace(src, from, to, 1)
}

func TestIntakeRefusesCopiesNamingWhatTheyCopy(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	seeds := []Seed{seedOf(t, "//kernels/contributions:seed_rmsnorm", seedKernel)}
	steps := []struct {
		name   string
		src    string
		readme string
		hotkey string
		block  int64
		arena  string // "" the test arena
		status Status
		reason string
	}{
		{"an honest kernel", rmsKernel, "first\n", "hkA", 10, "", Published, ReasonPublished},
		{"an exact copy by another hotkey", rmsKernel, "mine now\n", "hkB", 11, "", Failed, "copy_of:1:payload"},
		{"its author resubmitting", rmsKernel, "again\n", "hkA", 12, "", Published, ReasonPublished},
		{"a reformatted copy", recomment(rmsKernel), "", "hkC", 13, "", Failed, "copy_of:1:normalized_delta"},
		{"a copy with one expression edited", oneEdit(t, rmsKernel), "", "hkC", 14, "", Failed, "copy_of:1:containment"},
		{"an honest different kernel", otherKernel, "", "hkD", 15, "", Published, ReasonPublished},
		{"a copy of a seed contribution", seedKernel, "", "hkE", 16, "", Failed, "copy_of:seed://kernels/contributions:seed_rmsnorm:payload"},
		{"the same bytes in another arena", rmsKernel, "mine now\n", "hkB", 17, hex64("other arena"), Published, ReasonPublished},
	}
	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			snap, r := inspected(t, kernelBundle(t, s.src, s.readme), s.hotkey, s.block)
			if s.arena != "" {
				r.ArenaDigest = s.arena
			}
			r.Seeds = seeds
			res, err := l.Intake(ctx, snap, r)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Proposal
			if p.ID != int64(i+1) || p.Status != s.status || p.Reason != s.reason || !p.Fingerprinted {
				t.Fatalf("proposal %d: %s (%s), fingerprinted %v; want %d %s (%s)", p.ID, p.Status, p.Reason, p.Fingerprinted, i+1, s.status, s.reason)
			}
			// A copy's bytes are published all the same: they are the
			// evidence of the verdict.
			if !p.Published || res.Publication == "" {
				t.Errorf("the bytes were not published")
			}
			v, err := l.CopyVerdict(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if (v != nil) != (s.status == Failed) || v != nil && (v.Reason() != s.reason || v.Detail == "" || !strings.HasPrefix(v.Detail, v.Rule+": ")) {
				t.Errorf("copy verdict %+v", v)
			}
			// The verdict is durable: it reads back after a reopen.
			got, err := l.Proposal(ctx, p.ID)
			if err != nil || got.Status != s.status || got.Reason != s.reason {
				t.Errorf("read back %+v (%v)", got, err)
			}
		})
	}
	if r, err := l.Check(ctx); err != nil || !r.OK() || r.Counts.CopyVerdicts != 4 {
		t.Errorf("check %+v (%v)", r, err)
	}
	// A verdict edited behind the ledger's back no longer explains its
	// proposal's failure.
	if _, err := l.db.Exec(`UPDATE copy_verdicts SET rule = 'containment' WHERE proposal_id = 2`); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Check(ctx); !errors.Is(err, ErrRefused) || r.OK() || !strings.Contains(r.Problems[0], "proposal 2: its copy verdict copy_of:1:containment stands, yet it is failed (copy_of:1:payload)") {
		t.Errorf("check of an edited verdict: %+v (%v)", r, err)
	}
}

func TestClearCopyReturnsAWrongVerdictToPublishedUntilSettlement(t *testing.T) {
	ctx := context.Background()
	path := ledgerPath(t)
	l := openNew(t, path)
	take := func(src, readme, hotkey string, block int64) *Proposal {
		t.Helper()
		snap, r := inspected(t, kernelBundle(t, src, readme), hotkey, block)
		res, err := l.Intake(ctx, snap, r)
		if err != nil {
			t.Fatal(err)
		}
		return res.Proposal
	}
	take(rmsKernel, "", "hkA", 10)
	copied := take(rmsKernel, "copy\n", "hkB", 11)
	second := take(oneEdit(t, rmsKernel), "", "hkC", 12)
	honest := take(otherKernel, "", "hkD", 13)
	if copied.Status != Failed || second.Status != Failed || honest.Status != Published {
		t.Fatalf("setup: %s %s %s", copied.Status, second.Status, honest.Status)
	}

	refused := []struct {
		name, reason, want string
		id                 int64
	}{
		{"no reason", " ", "one non-empty line", copied.ID},
		{"a reason of two lines", "a\nb", "one non-empty line", copied.ID},
		{"a proposal without a copy verdict", "wrong", "has no copy verdict", honest.ID},
		{"no such proposal", "wrong", "no proposal 99", 99},
	}
	for _, c := range refused {
		if _, _, err := l.ClearCopy(ctx, c.id, c.reason); !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.want)
		}
	}

	p, ev, err := l.ClearCopy(ctx, copied.ID, "the README says the authors share one team")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != Published || p.Reason != "copy_cleared:1" || ev.Sequence != 1 || ev.EventType != EventCopyCleared {
		t.Fatalf("cleared: %+v, event %+v", p, ev)
	}
	for _, want := range []string{`"verdict":"copy_of:1:payload"`, `"proposal_id":2`, `"reason":"the README says the authors share one team"`, `"content_hash":"` + copied.ContentHash} {
		if !strings.Contains(string(ev.Body), want) {
			t.Errorf("event body %s lacks %s", ev.Body, want)
		}
	}
	if _, _, err := l.ClearCopy(ctx, copied.ID, "again"); !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), "already cleared by intake event 1") {
		t.Errorf("clearing twice: %v", err)
	}
	if r, err := l.Check(ctx); err != nil || !r.OK() {
		t.Errorf("check after clearing: %+v (%v)", r, err)
	}
	// Cleared, it goes on like any published proposal.
	if err := l.Transition(ctx, copied.ID, Screening, ""); err != nil {
		t.Errorf("screening a cleared proposal: %v", err)
	}

	// Settlement decides a later proposal at the target: the other
	// verdict can no longer be cleared.
	later := qualifiedProposal(t, l, "z", 20)
	if _, err := l.Commit(ctx, Settlement{Outcomes: []Outcome{{ProposalID: later, PlanDigest: hex64("plan"), CandidateDigest: hex64("cand"), Outcome: OutcomeHold, Reason: "stale_incumbent"}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.ClearCopy(ctx, second.ID, "wrong"); !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), "settlement already decided proposal") {
		t.Errorf("clearing after settlement: %v", err)
	}

	// The intake chain is verified on open and stays apart from the
	// settlement chain.
	l.Close()
	l, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if evs, err := l.IntakeEvents(ctx, 1, 0); err != nil || len(evs) != 1 || evs[0].Digest != ev.Digest {
		t.Errorf("intake events %+v (%v)", evs, err)
	}
	if h, err := l.Head(ctx); err != nil || h.Sequence != 0 {
		t.Errorf("the settlement chain holds %+v (%v)", h, err)
	}
	if _, err := rawDB(t, path).Exec(`UPDATE intake_events SET body = replace(body, 'team', 'tram')`); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "intake chain") {
		t.Errorf("an edited intake event: %v", err)
	}
}

func TestIntakeRequestFingerprintMustBeOfTheBytes(t *testing.T) {
	ctx := context.Background()
	l := openNew(t, ledgerPath(t))
	_, other := inspected(t, kernelBundle(t, otherKernel, ""), "hk", 1)
	snap, r := inspected(t, kernelBundle(t, rmsKernel, ""), "hk", 1)
	cases := []struct {
		name string
		edit func(r *IntakeRequest)
		want string
	}{
		{"another payload's fingerprint", func(r *IntakeRequest) { r.Print = other.Print }, "the fingerprint is of selected payload"},
		{"a refused bundle with a fingerprint", func(r *IntakeRequest) { r.Refusal = "rejected_at_manifest: x" }, "a refused bundle has no fingerprint"},
		{"a seed without a fingerprint", func(r *IntakeRequest) { r.Seeds = []Seed{{Name: "s"}} }, "a seed contribution needs"},
		{"another content's fingerprint", func(r *IntakeRequest) {
			fp := *r.Print
			fp.ContentHash = identity.MustParse(hex64("x"))
			r.Print = &fp
		}, "the fingerprint is of content hash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := r
			c.edit(&req)
			if _, err := l.Intake(ctx, snap, req); !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want a refusal saying %q", err, c.want)
			}
		})
	}
}

// A ledger at schema 2 (before anti-copy) opens, migrates to the current
// schema and keeps its proposals: they carry no fingerprint, so they take
// no part in the comparison, and proposals after them are checked.
func TestASchema2LedgerMigratesToAntiCopy(t *testing.T) {
	ctx := context.Background()
	path := ledgerPath(t)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.Exec(`CREATE TABLE schema_version (version INTEGER PRIMARY KEY CHECK (version >= 1), name TEXT NOT NULL, sha256 TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:2] {
		if _, err := db.Exec(m.sql); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if _, err := db.Exec(`INSERT INTO schema_version (version, name, sha256) VALUES (?, ?, ?)`, m.version, m.name, m.sha256); err != nil {
			t.Fatal(err)
		}
	}
	// A proposal as schema 2 recorded it: the bytes of the one taken in
	// below by another hotkey.
	dir := kernelBundle(t, rmsKernel, "")
	snap, r := inspected(t, dir, "hkB", 11)
	content, committed, err := snap.ContentHashes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO proposals (arena_digest, content_hash, committed_content_hash, hotkey, block, event_index, subevent_index,
		target_id, target_spec_digest, selected_payload_digest, selected_delta_digest, published, status, reason)
		VALUES (?, ?, ?, 'hkA', 10, 0, 0, ?, ?, ?, ?, 0, 'published', 'published')`,
		r.ArenaDigest, content.String(), committed.String(), r.TargetID, r.TargetSpecDigest, r.SelectedPayloadDigest, r.SelectedDeltaDigest); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO proposal_transitions (proposal_id, seq, from_status, to_status, reason) VALUES (1, 1, '', 'published', 'published')`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	l := openNew(t, path)
	rep, err := l.Check(ctx)
	if err != nil || !rep.OK() || rep.SchemaVersion != SchemaVersion() || SchemaVersion() < 3 || rep.Counts.Proposals != 1 {
		t.Fatalf("after the migration: %+v (%v)", rep, err)
	}
	// Schema 4 bound the rows it found in one schema_upgrade record, and
	// schema 7 the transitions in another.
	if recs, err := eventsOf(ctx, l.db, recordChain, 1, 0); err != nil || len(recs) != 2 || recs[0].EventType != RecordSchemaUpgrade ||
		recs[1].EventType != RecordSchemaUpgrade || !strings.Contains(string(recs[1].Body), `"proposal_transitions":{"1/1"`) {
		t.Fatalf("row records after the migration: %v (%v)", recs, err)
	}
	old, err := l.Proposal(ctx, 1)
	if err != nil || old.Fingerprinted || old.Status != Published || old.Hotkey != "hkA" {
		t.Fatalf("the schema 2 proposal reads %+v (%v)", old, err)
	}
	res, err := l.Intake(ctx, snap, r)
	if err != nil || res.Proposal.Status != Published || !res.Proposal.Fingerprinted {
		t.Fatalf("intake after the migration: %+v (%v)", res, err)
	}
	// From here on the new proposal's fingerprint takes part.
	snap, r = inspected(t, kernelBundle(t, rmsKernel, "copy\n"), "hkC", 12)
	if res, err := l.Intake(ctx, snap, r); err != nil || res.Proposal.Reason != "copy_of:2:payload" {
		t.Fatalf("a copy of the new proposal: %+v (%v)", res, err)
	}
}
