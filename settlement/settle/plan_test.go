package settle_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/settlement/settle"
)

var (
	currentStack = dg("incumbent-stack")
	currentTree  = dg("incumbent-tree")
)

// row describes one queued candidate for the plan tests.
type row struct {
	name        string
	target      string // default: "target." + name
	pos         settle.Position
	lane        settle.Lane
	members     []string
	speedup     string
	speedup2    string // the reproduction's, when it differs
	reservation string // default: from the name
	staleStack  bool
	staleTree   bool
	prior       string
	displaced   []settle.Displaced
}

// cand pairs two qualifications of the row's candidate.
func cand(t testing.TB, r row) *settle.Candidate {
	t.Helper()
	c, err := pairRow(r)
	if err != nil {
		t.Fatalf("pair %s: %v", r.name, err)
	}
	return c
}

func pairRow(r row) (*settle.Candidate, error) {
	a, b := qualPair()
	for _, q := range []*settle.Qualification{&a, &b} {
		q.SelectedDelta = dg("delta/" + r.name)
		q.Reservation = dg("reservation/" + r.name)
		if r.reservation != "" {
			q.Reservation = r.reservation
		}
		q.Finalized = r.pos
		q.Lane = settle.LaneRegistered
		if r.lane != "" {
			q.Lane = r.lane
		}
		q.Members = []string{"rmsnorm"}
		if r.members != nil {
			q.Members = r.members
		}
		q.AuditPolicy.ExpectedSlots = q.Members
		q.TargetID = "target." + r.name
		if r.target != "" {
			q.TargetID = r.target
		}
		q.Speedup = "1.1"
		if r.speedup != "" {
			q.Speedup = r.speedup
		}
		if r.staleStack {
			q.IncumbentStack = dg("older-stack")
		}
		if r.staleTree {
			q.IncumbentTree = dg("older-tree")
		}
		q.CandidateStack, q.CandidateTree = dg("candidate-stack/"+r.name), dg("candidate-tree/"+r.name)
		q.Proposal = dg("proposal/" + r.name)
		q.Transition = settle.Transition{Prior: r.prior, Displaced: r.displaced}
	}
	if r.speedup2 != "" {
		b.Speedup = r.speedup2
	}
	return settle.Pair(a, b)
}

func plan(t *testing.T, rows ...row) (*settle.Settlement, map[string]settle.Row) {
	t.Helper()
	var cs []*settle.Candidate
	for _, r := range rows {
		cs = append(cs, cand(t, r))
	}
	s, err := settle.Plan(cs, currentStack, currentTree)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]settle.Row{}
	for _, r := range s.Rows {
		byName[strings.TrimPrefix(r.TargetID, "target.")] = r
	}
	return s, byName
}

type verdict struct {
	outcome settle.Outcome
	reason  settle.Reason
}

func TestPlanOutcomes(t *testing.T) {
	at := func(block uint64, ev, sub uint32) settle.Position {
		return settle.Position{Block: block, EventIndex: ev, SubeventIndex: sub}
	}
	crown := verdict{settle.OutcomeCrown, "qualified_win"}
	cases := []struct {
		name string
		rows []row
		want map[string]verdict
	}{
		{"a stale incumbent stack holds", []row{{name: "old", staleStack: true}, {name: "new", pos: at(2, 0, 0)}},
			map[string]verdict{"old": {settle.OutcomeHold, "stale_incumbent"}, "new": crown}},
		{"a stale incumbent tree holds", []row{{name: "old", staleTree: true, speedup: "3"}, {name: "new", pos: at(2, 0, 0)}},
			map[string]verdict{"old": {settle.OutcomeHold, "stale_incumbent"}, "new": crown}},
		{"a stale discovery row holds", []row{{name: "disc", lane: settle.LaneDiscovery, staleStack: true}},
			map[string]verdict{"disc": {settle.OutcomeHold, "stale_incumbent"}}},
		{"a current discovery row earns a bounty and never wins", []row{
			{name: "disc", lane: settle.LaneDiscovery, speedup: "5", pos: at(1, 0, 0)}, {name: "reg", pos: at(2, 0, 0)}},
			map[string]verdict{"disc": {settle.OutcomeDiscoveryBounty, "qualified_discovery"}, "reg": crown}},
		{"the greatest conservative speedup wins, even when later", []row{
			{name: "early", pos: at(1, 0, 0), speedup: "1.2"}, {name: "late", pos: at(9, 0, 0), speedup: "1.3", members: []string{"silu"}}},
			map[string]verdict{"late": crown, "early": {settle.OutcomeHold, "incumbent_advanced"}}},
		{"a tie goes to the earlier block", []row{
			{name: "b11", pos: at(11, 0, 0)}, {name: "b10", pos: at(10, 5, 5)}},
			map[string]verdict{"b10": crown, "b11": {settle.OutcomeHold, "conflict_lost"}}},
		{"a tie in block goes to the earlier event", []row{
			{name: "e2", pos: at(10, 2, 0)}, {name: "e1", pos: at(10, 1, 9)}},
			map[string]verdict{"e1": crown, "e2": {settle.OutcomeHold, "conflict_lost"}}},
		{"a tie in event goes to the earlier subevent", []row{
			{name: "s4", pos: at(10, 1, 4)}, {name: "s3", pos: at(10, 1, 3)}},
			map[string]verdict{"s3": crown, "s4": {settle.OutcomeHold, "conflict_lost"}}},
		{"a tie in position goes to the smaller reservation digest", []row{
			{name: "hi", pos: at(10, 1, 3), reservation: "f" + dg("r")[1:]}, {name: "lo", pos: at(10, 1, 3), reservation: "0" + dg("r")[1:]}},
			map[string]verdict{"lo": crown, "hi": {settle.OutcomeHold, "conflict_lost"}}},
		{"overlapping members lose, disjoint ones requalify", []row{
			{name: "win", pos: at(1, 0, 0), speedup: "2", members: []string{"moe.a", "moe.b"}},
			{name: "overlap", pos: at(2, 0, 0), members: []string{"moe.b"}},
			{name: "disjoint", pos: at(3, 0, 0), members: []string{"silu"}},
			{name: "disc", pos: at(4, 0, 0), members: []string{"moe.a"}, lane: settle.LaneDiscovery},
			{name: "stale", pos: at(5, 0, 0), members: []string{"moe.a"}, staleStack: true}},
			map[string]verdict{"win": crown, "overlap": {settle.OutcomeHold, "conflict_lost"}, "disjoint": {settle.OutcomeHold, "incumbent_advanced"},
				"disc": {settle.OutcomeDiscoveryBounty, "qualified_discovery"}, "stale": {settle.OutcomeHold, "stale_incumbent"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, rows := plan(t, c.rows...)
			if len(rows) != len(c.want) {
				t.Fatalf("%d rows, want %d", len(rows), len(c.want))
			}
			for name, want := range c.want {
				if got := (verdict{rows[name].Outcome, rows[name].Reason}); got != want {
					t.Errorf("%s: %v, want %v", name, got, want)
				}
			}
			for i := 1; i < len(s.Rows); i++ {
				p, q := s.Rows[i-1].Finalized, s.Rows[i].Finalized
				if p.Block > q.Block || p.Block == q.Block && (p.EventIndex > q.EventIndex || p.EventIndex == q.EventIndex && p.SubeventIndex > q.SubeventIndex) {
					t.Errorf("rows %d and %d out of finalized order: %+v then %+v", i-1, i, p, q)
				}
			}
		})
	}
}

func TestPlanWithoutACurrentRegisteredRowChangesNothing(t *testing.T) {
	s, _ := plan(t, row{name: "disc", lane: settle.LaneDiscovery}, row{name: "stale", staleStack: true})
	if len(s.Events) != 0 || s.StandingClaim != nil || s.Winner != -1 {
		t.Fatalf("events %v, claim %v, winner %d: want none", s.Events, s.StandingClaim, s.Winner)
	}
	if s.NextStack != currentStack || s.NextTree != currentTree {
		t.Fatalf("next stack %s tree %s, want the current ones", s.NextStack, s.NextTree)
	}
	empty, err := settle.Plan(nil, currentStack, currentTree)
	if err != nil || len(empty.Rows) != 0 || len(empty.Events) != 0 {
		t.Fatalf("empty plan: %+v, %v", empty, err)
	}
}

func TestPlanCrownEvents(t *testing.T) {
	displaced := []settle.Displaced{{TargetID: "moe.a", Entry: dg("entry/moe.a")}, {TargetID: "moe.b", Entry: dg("entry/moe.b")}}
	s, _ := plan(t, row{name: "atomic", speedup: "1.0625", prior: dg("entry/prior"), displaced: displaced, pos: settle.Position{Block: 77}})
	w := s.Rows[s.Winner]
	type ev struct {
		typ     settle.EventType
		subject string
		target  string
		reason  settle.Reason
	}
	want := []ev{
		{settle.EventCrown, dg("proposal/atomic"), "target.atomic", "qualified_win"},
		{settle.EventRetirement, dg("entry/prior"), "target.atomic", "superseded"},
		{settle.EventNeutralization, dg("entry/moe.a"), "moe.a", "displaced"},
		{settle.EventNeutralization, dg("entry/moe.b"), "moe.b", "displaced"},
		{settle.EventAdoption, dg("proposal/atomic"), "target.atomic", "adopted"},
		{settle.EventStackTransition, dg("candidate-stack/atomic"), "target.atomic", "incumbent_updated"},
	}
	if len(s.Events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(s.Events), len(want), s.Events)
	}
	for i, e := range s.Events {
		if got := (ev{e.Type, e.SubjectDigest, e.TargetID, e.Reason}); got != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got, want[i])
		}
		if e.CandidateDigest != w.Candidate || e.FromStackDigest != currentStack || e.FromTreeDigest != currentTree ||
			e.ToStackDigest != dg("candidate-stack/atomic") || e.ToTreeDigest != dg("candidate-tree/atomic") {
			t.Errorf("event %d binds %+v, want the winner's transition", i, e)
		}
	}
	if s.NextStack != dg("candidate-stack/atomic") || s.NextTree != dg("candidate-tree/atomic") {
		t.Errorf("next stack %s, tree %s", s.NextStack, s.NextTree)
	}
	wantClaim := settle.StandingClaim{Arena: "b300-mainnet", TargetID: "target.atomic", TargetSpec: dg("target-spec"),
		Contribution: dg("proposal/atomic"), Hotkey: "5Hotkey", SpeedupPPM: 1_062_500, CrownedBlock: 77}
	if s.StandingClaim == nil || *s.StandingClaim != wantClaim {
		t.Errorf("standing claim %+v, want %+v", s.StandingClaim, wantClaim)
	}

	// Without a prior entry there is nothing to retire.
	s, _ = plan(t, row{name: "fresh"})
	var types []settle.EventType
	for _, e := range s.Events {
		types = append(types, e.Type)
	}
	if want := []settle.EventType{settle.EventCrown, settle.EventAdoption, settle.EventStackTransition}; !reflect.DeepEqual(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
}

func TestEventChainLinks(t *testing.T) {
	displaced := []settle.Displaced{{TargetID: "moe.a", Entry: dg("entry/moe.a")}}
	s, _ := plan(t, row{name: "w", prior: dg("entry/prior"), displaced: displaced})
	if s.Events[0].PreviousEventDigest != "" || s.Events[0].Sequence != 1 {
		t.Fatalf("first event: sequence %d, previous %q", s.Events[0].Sequence, s.Events[0].PreviousEventDigest)
	}
	for i := 1; i < len(s.Events); i++ {
		prev, err := s.Events[i-1].Digest()
		if err != nil {
			t.Fatal(err)
		}
		if s.Events[i].PreviousEventDigest != prev.String() || s.Events[i].Sequence != uint64(i+1) {
			t.Fatalf("event %d: sequence %d, previous %q; want %d, %s", i, s.Events[i].Sequence, s.Events[i].PreviousEventDigest, i+1, prev)
		}
	}
	head, err := settle.VerifyChain(settle.Genesis, s.Events)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := s.Events[len(s.Events)-1].Digest()
	if head.Sequence != uint64(len(s.Events)) || head.Digest != last.String() {
		t.Fatalf("head %+v after %d events ending in %s", head, len(s.Events), last)
	}

	// Each edit of a stored event breaks the link after it, or the
	// sequence.
	edits := map[string]func(e *settle.Event){
		"reason":   func(e *settle.Event) { e.Reason = "other" },
		"subject":  func(e *settle.Event) { e.SubjectDigest = dg("other") },
		"target":   func(e *settle.Event) { e.TargetID = "other" },
		"to tree":  func(e *settle.Event) { e.ToTreeDigest = dg("other") },
		"sequence": func(e *settle.Event) { e.Sequence += 7 },
	}
	for name, edit := range edits {
		events := append([]settle.Event(nil), s.Events...)
		edit(&events[1])
		if _, err := settle.VerifyChain(settle.Genesis, events); err == nil {
			t.Errorf("editing the %s of event 1 leaves the chain valid", name)
		}
	}
	if _, err := settle.VerifyChain(settle.Genesis, s.Events[1:]); err == nil {
		t.Error("a chain missing its first event verifies from genesis")
	}

	// A plan continues an existing chain from its head.
	cont, err := settle.PlanFrom(head, []*settle.Candidate{cand(t, row{name: "next", staleStack: true}), cand(t, row{name: "w2"})}, currentStack, currentTree)
	if err != nil {
		t.Fatal(err)
	}
	if cont.Events[0].Sequence != head.Sequence+1 || cont.Events[0].PreviousEventDigest != head.Digest {
		t.Fatalf("continued chain starts at %d after %q, want %d after %s", cont.Events[0].Sequence, cont.Events[0].PreviousEventDigest, head.Sequence+1, head.Digest)
	}
	if _, err := settle.VerifyChain(settle.Genesis, append(append([]settle.Event(nil), s.Events...), cont.Events...)); err != nil {
		t.Fatalf("the two plans' events do not form one chain: %v", err)
	}
	if _, err := settle.PlanFrom(settle.Head{Sequence: 3}, nil, currentStack, currentTree); reasonOf(t, err) != "invalid_field:chain_head" {
		t.Errorf("a head past genesis without a digest: %v", err)
	}
}

// TestEventBodyIsTheDigestedObject pins the body's keys and shows a
// ledger that keeps only bodies recomputes the digest.
func TestEventBodyIsTheDigestedObject(t *testing.T) {
	s, _ := plan(t, row{name: "w"})
	e := s.Events[0]
	body, err := e.Body()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"candidate_digest":"%s","event_type":"CROWN","from_stack_digest":"%s","from_tree_digest":"%s","previous_event_digest":"","reason":"qualified_win","sequence":1,"subject_digest":"%s","target_id":"target.w","to_stack_digest":"%s","to_tree_digest":"%s"}`,
		e.CandidateDigest, currentStack, currentTree, dg("proposal/w"), dg("candidate-stack/w"), dg("candidate-tree/w"))
	if string(body) != want {
		t.Fatalf("body\n%s\nwant\n%s", body, want)
	}
	parsed, err := canonjson.Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	generic, err := identity.H(identity.DomainSettlementEvent, parsed)
	if err != nil {
		t.Fatal(err)
	}
	fromBytes, err := settle.EventDigest(body)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d != generic || d != fromBytes {
		t.Fatalf("event digest %s, generic %s, from bytes %s", d, generic, fromBytes)
	}
	var back settle.Event
	if err := json.Unmarshal(body, &back); err != nil || back != e {
		t.Fatalf("body does not read back into the event: %+v, %v", back, err)
	}
	if s.Events[1].PreviousEventDigest != d.String() {
		t.Fatalf("the next event links %s, want %s", s.Events[1].PreviousEventDigest, d)
	}
}

func TestPlanRefusesDuplicates(t *testing.T) {
	a := cand(t, row{name: "a"})
	if _, err := settle.Plan([]*settle.Candidate{a, a}, currentStack, currentTree); reasonOf(t, err) != "duplicate_candidate" {
		t.Fatalf("one candidate twice: %v", err)
	}
	b := cand(t, row{name: "b", reservation: dg("reservation/a")})
	if _, err := settle.Plan([]*settle.Candidate{b, a}, currentStack, currentTree); reasonOf(t, err) != "duplicate_reservation" {
		t.Fatalf("two candidates of one reservation: %v", err)
	}
	// Also when other rows sort between them.
	late := cand(t, row{name: "late", reservation: dg("reservation/a"), pos: settle.Position{Block: 9}})
	between := cand(t, row{name: "between", pos: settle.Position{Block: 5}})
	if _, err := settle.Plan([]*settle.Candidate{late, between, a}, currentStack, currentTree); reasonOf(t, err) != "duplicate_reservation" {
		t.Fatalf("two candidates of one reservation, apart in finalized order: %v", err)
	}
	if _, err := settle.Plan([]*settle.Candidate{a, nil}, currentStack, currentTree); err == nil {
		t.Fatal("a nil candidate is accepted")
	}
	if _, err := settle.Plan(nil, "stack", currentTree); reasonOf(t, err) != "invalid_field:current_stack" {
		t.Fatalf("a current stack that is not a digest: %v", err)
	}
}

// queue is n candidates over a few targets and members, a share of them
// stale or discovery, with speedups drawn so ties occur.
func queue(t testing.TB, rng *rand.Rand, n int) []*settle.Candidate {
	slots := []string{"a", "b", "c", "d", "e", "f"}
	var out []*settle.Candidate
	for i := 0; i < n; i++ {
		r := row{name: fmt.Sprintf("c%04d", i),
			pos:     settle.Position{Block: uint64(rng.Intn(n/4 + 1)), EventIndex: uint32(rng.Intn(3)), SubeventIndex: uint32(rng.Intn(2))},
			speedup: fmt.Sprintf("1.%d", 1+rng.Intn(9)),
			members: []string{slots[rng.Intn(len(slots))]}}
		switch rng.Intn(10) {
		case 0:
			r.staleStack = true
		case 1:
			r.lane = settle.LaneDiscovery
		}
		if rng.Intn(2) == 0 {
			r.prior = dg("prior/" + r.name)
		}
		out = append(out, cand(t, r))
	}
	return out
}

func TestPlanIsInvariantToInputOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 20; trial++ {
		cs := queue(t, rng, 2+rng.Intn(40))
		want, err := settle.Plan(cs, currentStack, currentTree)
		if err != nil {
			t.Fatal(err)
		}
		for perm := 0; perm < 10; perm++ {
			shuffled := append([]*settle.Candidate(nil), cs...)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			got, err := settle.Plan(shuffled, currentStack, currentTree)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d: a permutation of %d candidates plans differently (digest %s, want %s)", trial, len(cs), got.Digest, want.Digest)
			}
		}
	}
}

func TestPlanDigestCoversItsInputs(t *testing.T) {
	cs := []*settle.Candidate{cand(t, row{name: "x"}), cand(t, row{name: "y", members: []string{"silu"}, speedup: "1.3"})}
	base, err := settle.Plan(cs, currentStack, currentTree)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := settle.Plan(cs, dg("another-stack"), currentTree)
	if err != nil {
		t.Fatal(err)
	}
	fewer, err := settle.Plan(cs[:1], currentStack, currentTree)
	if err != nil {
		t.Fatal(err)
	}
	if base.Digest == stale.Digest || base.Digest == fewer.Digest || stale.Digest == fewer.Digest {
		t.Fatalf("plan digests collide: %s %s %s", base.Digest, stale.Digest, fewer.Digest)
	}
}

// BenchmarkPlan1000 plans 1,000 queued candidates against one incumbent.
func BenchmarkPlan1000(b *testing.B) {
	cs := queue(b, rand.New(rand.NewSource(7)), 1000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := settle.Plan(cs, currentStack, currentTree); err != nil {
			b.Fatal(err)
		}
	}
}
