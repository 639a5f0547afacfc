package settle_test

import (
	"strings"
	"testing"

	"github.com/cacheon/engine/settlement/settle"
)

func TestPairRules(t *testing.T) {
	type q = settle.Qualification
	cases := []struct {
		name   string
		edit   func(a, b *q)
		reason settle.Reason
	}{
		{"a valid audited pair with exchanged lanes passes", func(a, b *q) {}, ""},
		{"an audited pair without lane orientation passes", func(a, b *q) { a.LaneOrientation, b.LaneOrientation = nil, nil }, ""},
		{"an unaudited pair with exchanged lanes passes", func(a, b *q) { unaudit(a); unaudit(b) }, ""},

		{"the same qualification twice", func(a, b *q) { *b = *a }, "one_qualification"},

		{"arena differs", func(a, b *q) { b.Arena = "other-arena" }, "reproduction_identity_mismatch:arena"},
		{"target differs", func(a, b *q) { b.TargetID = "silu.v1" }, "reproduction_identity_mismatch:target_id"},
		{"selected delta differs", func(a, b *q) { b.SelectedDelta = dg("other") }, "reproduction_identity_mismatch:selected_delta"},
		{"hotkey differs", func(a, b *q) { b.Hotkey = "5Other" }, "reproduction_identity_mismatch:hotkey"},
		{"incumbent stack differs", func(a, b *q) { b.IncumbentStack = dg("other") }, "reproduction_identity_mismatch:incumbent_stack"},
		{"incumbent tree differs", func(a, b *q) { b.IncumbentTree = dg("other") }, "reproduction_identity_mismatch:incumbent_tree"},
		{"candidate stack differs", func(a, b *q) { b.CandidateStack = dg("other") }, "reproduction_identity_mismatch:candidate_stack"},
		{"candidate tree differs", func(a, b *q) { b.CandidateTree = dg("other") }, "reproduction_identity_mismatch:candidate_tree"},

		{"lane differs", func(a, b *q) { b.Lane = settle.LaneDiscovery }, "lane_mismatch"},
		{"reservation differs", func(a, b *q) { b.Reservation = dg("other") }, "reservation_mismatch"},
		{"finalized block differs", func(a, b *q) { b.Finalized.Block++ }, "finalized_position_mismatch"},
		{"finalized event index differs", func(a, b *q) { b.Finalized.EventIndex++ }, "finalized_position_mismatch"},
		{"finalized subevent index differs", func(a, b *q) { b.Finalized.SubeventIndex++ }, "finalized_position_mismatch"},
		{"members differ", func(a, b *q) {
			b.Members = []string{"rmsnorm", "silu"}
			b.AuditPolicy.ExpectedSlots = b.Members
		}, "members_mismatch"},
		{"target spec differs", func(a, b *q) { b.TargetSpec = dg("other") }, "target_spec_mismatch"},
		{"arm differs", func(a, b *q) { b.Arm = dg("other") }, "arm_mismatch"},
		{"proposal differs", func(a, b *q) { b.Proposal = dg("other") }, "proposal_mismatch"},
		{"prior entry differs", func(a, b *q) { b.Transition.Prior = "" }, "transition_mismatch"},
		{"displaced entries differ", func(a, b *q) {
			b.Transition.Displaced = []settle.Displaced{{TargetID: "silu.v1", Entry: dg("silu-entry")}}
		}, "transition_mismatch"},
		{"speed evidence policy differs", func(a, b *q) {
			b.SpeedEvidencePolicy, b.LaneOrientation.SpeedPolicy = dg("other"), dg("other")
		}, "speed_evidence_policy_mismatch"},
		{"audit control differs", func(a, b *q) { b.AuditControl = dg("other") }, "audit_control_mismatch"},
		{"one side audited, the other not", func(a, b *q) { unaudit(b) }, "audit_control_mismatch"},

		{"shared authority", func(a, b *q) { b.Authority = a.Authority }, "shared_authority_digest:authority"},
		{"shared plan", func(a, b *q) { b.Plan = a.Plan }, "shared_authority_digest:plan"},
		{"shared attempt", func(a, b *q) { b.Attempt = a.Attempt }, "shared_authority_digest:attempt"},
		{"shared selection commitment", func(a, b *q) { b.SelectionCommitment = a.SelectionCommitment }, "shared_authority_digest:selection_commitment"},
		{"shared selection secret commitment", func(a, b *q) { b.SelectionSecretCommitment = a.SelectionSecretCommitment }, "shared_authority_digest:selection_secret_commitment"},
		{"shared selection evidence", func(a, b *q) { b.SelectionEvidence = a.SelectionEvidence }, "shared_authority_digest:selection_evidence"},
		{"one digest in two roles", func(a, b *q) { b.Plan = a.Authority }, "shared_authority_digest:authority=plan"},

		{"audits under one validator seed", func(a, b *q) { b.AuditPolicy.ValidatorSeed = a.AuditPolicy.ValidatorSeed }, "validator_seed_reused"},
		{"audits naming one evidence", func(a, b *q) { b.AuditEvidence = a.AuditEvidence }, "audit_evidence_reused"},

		{"orientation on one side only", func(a, b *q) { b.LaneOrientation = nil }, "lane_orientation_missing"},
		{"orientation on the other side only", func(a, b *q) { a.LaneOrientation = nil }, "lane_orientation_missing"},
		{"orientation under another lane control", func(a, b *q) { b.LaneOrientation.Control = dg("other") }, "lane_orientation_mismatch:control"},
		{"reproduction on the same lanes", func(a, b *q) { *b.LaneOrientation = *a.LaneOrientation }, "lanes_not_exchanged"},
		{"reproduction with a third baseline lane", func(a, b *q) { b.LaneOrientation.BaselineLane = dg("lane-z") }, "lanes_not_exchanged"},
		{"reproduction with a third candidate lane", func(a, b *q) { b.LaneOrientation.CandidateLane = dg("lane-z") }, "lanes_not_exchanged"},
		{"unaudited pair without orientation", func(a, b *q) {
			unaudit(a)
			unaudit(b)
			a.LaneOrientation, b.LaneOrientation = nil, nil
		}, "unaudited_without_lane_swap"},

		{"speedup of exactly one", func(a, b *q) { b.Speedup = "1" }, "speedup_not_above_one"},
		{"speedup below one", func(a, b *q) { a.Speedup = "0.999" }, "speedup_not_above_one"},
		{"speedup above one by less than a ppm", func(a, b *q) { b.Speedup = "1.0000009" }, "speedup_below_ppm_resolution"},
		{"speedup with a trailing zero", func(a, b *q) { b.Speedup = "1.20" }, "invalid_field:speedup"},
		{"speedup with an exponent", func(a, b *q) { b.Speedup = "12e-1" }, "invalid_field:speedup"},
		{"speedup with a sign", func(a, b *q) { b.Speedup = "+1.2" }, "invalid_field:speedup"},
		{"speedup with a leading zero", func(a, b *q) { b.Speedup = "01.2" }, "invalid_field:speedup"},
		{"speedup without an integer part", func(a, b *q) { b.Speedup = ".5" }, "invalid_field:speedup"},
		{"speedup ending in its point", func(a, b *q) { b.Speedup = "2." }, "invalid_field:speedup"},
		{"speedup too long", func(a, b *q) { b.Speedup = "1." + strings.Repeat("1", 80) }, "invalid_field:speedup"},

		{"lane unknown", func(a, b *q) { a.Lane = "side" }, "invalid_field:lane"},
		{"empty hotkey", func(a, b *q) { a.Hotkey = "" }, "invalid_field:hotkey"},
		{"all-zero reservation", func(a, b *q) { a.Reservation = strings.Repeat("0", 64) }, "invalid_field:reservation"},
		{"uppercase report digest", func(a, b *q) { a.Report = strings.ToUpper(a.Report) }, "invalid_field:report"},
		{"unsorted members", func(a, b *q) { a.Members = []string{"silu", "rmsnorm"} }, "invalid_field:members"},
		{"no members", func(a, b *q) { a.Members = nil }, "invalid_field:members"},
		{"candidate tree is the incumbent tree", func(a, b *q) { a.CandidateTree = a.IncumbentTree }, "invalid_field:candidate_tree"},
		{"displaced entry of the own target", func(a, b *q) {
			a.Transition.Displaced = []settle.Displaced{{TargetID: a.TargetID, Entry: dg("x")}}
		}, "invalid_field:transition"},
		{"displaced entries unsorted", func(a, b *q) {
			a.Transition.Displaced = []settle.Displaced{{TargetID: "silu.v1", Entry: dg("x")}, {TargetID: "gelu.v1", Entry: dg("y")}}
		}, "invalid_field:transition"},
		{"audit evidence without control", func(a, b *q) { a.AuditControl = "" }, "invalid_field:audit_control"},
		{"validator seed of 64 hex", func(a, b *q) { a.AuditPolicy.ValidatorSeed = dg("seed") }, "invalid_field:audit_policy.validator_seed"},
		{"audit of other slots", func(a, b *q) { a.AuditPolicy.ExpectedSlots = []string{"silu"} }, "invalid_field:audit_policy.expected_slots"},
		{"audit sample rate zero", func(a, b *q) { a.AuditPolicy.SampleRatePPM = 0 }, "invalid_field:audit_policy.sample_rate_ppm"},
		{"orientation on one lane", func(a, b *q) { a.LaneOrientation.CandidateLane = a.LaneOrientation.BaselineLane }, "invalid_field:lane_orientation.candidate_lane"},
		{"orientation under another speed policy", func(a, b *q) { a.LaneOrientation.SpeedPolicy = dg("other") }, "invalid_field:lane_orientation.speed_policy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := qualPair()
			c.edit(&a, &b)
			cand, err := settle.Pair(a, b)
			if got := reasonOf(t, err); got != c.reason {
				t.Fatalf("reason %q, want %q (error: %v)", got, c.reason, err)
			}
			if c.reason == "" && cand == nil {
				t.Fatal("no candidate")
			}
		})
	}
}

func unaudit(q *settle.Qualification) {
	q.AuditControl, q.AuditPolicy, q.AuditEvidence = "", nil, ""
}

func TestPairConservativeSpeedupIsTheExactMinimum(t *testing.T) {
	cases := []struct {
		a, b, want string
		ppm        int64
	}{
		{"1.25", "1.2", "1.2", 1_200_000},
		{"1.2", "1.25", "1.2", 1_200_000},
		// 17 significant digits that float64 rounds to one value (1.5):
		// the exact comparison still picks the smaller.
		{"1.5000000000000002", "1.5000000000000001", "1.5000000000000001", 1_500_000},
		{"1.0000009", "2", "", 1_000_000},
		{"1.0000019999999999", "3", "1.0000019999999999", 1_000_001},
		{"2", "2", "2", 2_000_000},
		{"1.2345678", "1.23456781", "1.2345678", 1_234_567},
	}
	for _, c := range cases {
		t.Run(c.a+"_"+c.b, func(t *testing.T) {
			a, b := qualPair()
			a.Speedup, b.Speedup = c.a, c.b
			cand, err := settle.Pair(a, b)
			if c.ppm <= 1_000_000 {
				if got := reasonOf(t, err); got != "speedup_below_ppm_resolution" {
					t.Fatalf("reason %q, want speedup_below_ppm_resolution", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cand.Speedup() != c.want || cand.SpeedupPPM() != c.ppm {
				t.Fatalf("conservative speedup %s (%d ppm), want %s (%d ppm)", cand.Speedup(), cand.SpeedupPPM(), c.want, c.ppm)
			}
		})
	}
}

func TestPairNamesTheCandidateByItsReproductionIdentity(t *testing.T) {
	a, b := qualPair()
	cand, err := settle.Pair(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want, err := a.ReproductionIdentity().Digest()
	if err != nil {
		t.Fatal(err)
	}
	if cand.Digest() != want || cand.Identity() != b.ReproductionIdentity() {
		t.Fatalf("candidate %s, want the reproduction identity digest %s", cand.Digest(), want)
	}
	// The identity digest covers every identity field.
	other := a.ReproductionIdentity()
	other.CandidateTree = dg("other")
	if d, _ := other.Digest(); d == want {
		t.Fatal("a different candidate tree gives the same reproduction identity digest")
	}
}

// TestPairIsSymmetric: which qualification came first changes nothing
// the plan reads, and a broken rule is broken either way round.
func TestPairIsSymmetric(t *testing.T) {
	a, b := qualPair()
	ab, err := settle.Pair(a, b)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := settle.Pair(b, a)
	if err != nil {
		t.Fatal(err)
	}
	if ab.Digest() != ba.Digest() || ab.Speedup() != ba.Speedup() || ab.SpeedupPPM() != ba.SpeedupPPM() {
		t.Fatalf("Pair(a, b) = %s at %s, Pair(b, a) = %s at %s", ab.Digest(), ab.Speedup(), ba.Digest(), ba.Speedup())
	}
	b.LaneOrientation.CandidateLane = dg("lane-z")
	for _, p := range [][2]settle.Qualification{{a, b}, {b, a}} {
		if _, err := settle.Pair(p[0], p[1]); reasonOf(t, err) != "lanes_not_exchanged" {
			t.Fatalf("lanes not exchanged: %v", err)
		}
	}
}

// TestCandidateSharesNoMemoryWithItsInputs: editing the qualifications
// after Pair, or what a candidate's accessors return, leaves the candidate
// as it was checked.
func TestCandidateSharesNoMemoryWithItsInputs(t *testing.T) {
	a, b := qualPair()
	a.Transition.Displaced = []settle.Displaced{{TargetID: "silu.v1", Entry: dg("silu")}}
	b.Transition.Displaced = []settle.Displaced{{TargetID: "silu.v1", Entry: dg("silu")}}
	c, err := settle.Pair(a, b)
	if err != nil {
		t.Fatal(err)
	}
	a.Members[0] = "edited"
	a.AuditPolicy.ValidatorSeed = "edited"
	a.LaneOrientation.BaselineLane = "edited"
	a.Transition.Displaced[0].Entry = "edited"
	c.Members()[0] = "edited"
	c.Transition().Displaced[0].Entry = "edited"
	c.First().Members[0] = "edited"
	first := c.First()
	if first.Members[0] != "rmsnorm" || first.AuditPolicy.ValidatorSeed == "edited" || first.LaneOrientation.BaselineLane == "edited" ||
		c.Transition().Displaced[0].Entry != dg("silu") {
		t.Fatalf("the candidate changed after Pair: %+v", first)
	}
}
