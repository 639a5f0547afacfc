package plan

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/stack"
)

// goldenProposal is a proposal reference built from fixed digests, the
// same ones testdata/marginal_arm_plan_digest.py writes out by hand.
func goldenProposal(target, spec, artifact, payload, attribution string) *contribution.ProposalRef {
	return &contribution.ProposalRef{Type: contribution.KindProposal, SchemaVersion: 1, TargetID: target,
		TargetSpecDigest: d64(spec), ArtifactDigest: d64(artifact), SelectedPayloadDigest: d64(payload), AttributionDigest: d64(attribution)}
}

func goldenPlan(bStack, bTree, cStack, cTree string, t Transition) *MarginalArmPlan {
	b := Arm{StackDigest: d64(bStack), TreeDigest: d64(bTree)}
	return &MarginalArmPlan{SchemaVersion: 1, PolicyVersion: "stack-plan.v1",
		IncumbentStackDigest: d64(bStack), CandidateStackDigest: d64(cStack), Transition: t,
		BaselineBefore: b, Challenger: Arm{StackDigest: d64(cStack), TreeDigest: d64(cTree)}, BaselineAfter: b}
}

// goldenArmPlans are the cases of testdata/marginal_arm_plan_digest.py,
// by the names it prints. Each want is the digest that script printed: it
// builds upstream's payload (schema_version, policy_version, the two
// stack digests, transition, baseline_before, challenger, baseline_after)
// by hand and hashes it with Python's json and hashlib, so the Go
// payload's keys and encoding are checked against an independent
// computation rather than against themselves.
var goldenArmPlans = []struct {
	name string
	plan *MarginalArmPlan
	want string
}{
	{"same-target replacement", goldenPlan("1", "a", "2", "b", Transition{
		TargetID: "norm.rmsnorm", TargetSpecDigest: d64("5"),
		Replacement: goldenProposal("norm.rmsnorm", "5", "6", "7", "8"),
		Prior:       goldenProposal("norm.rmsnorm", "5", "9", "c", "d"),
		Displaced:   []string{},
	}), "fbccf756650cd2567324064eefadb4a3a833d4fb8c5440be1833f650a3235ee5"},
	{"atomic displaces members", goldenPlan("3", "e", "4", "f", Transition{
		TargetID: "collective.moe_epilogue.v1", TargetSpecDigest: d64("5"),
		Replacement: goldenProposal("collective.moe_epilogue.v1", "5", "6", "7", "8"),
		Prior:       stack.Ref(nil),
		Displaced:   []string{"collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"},
	}), "699d9660015c9cc75ff89b6d9724c1097c719d8d036491c116e25fb25084d5e6"},
}

func TestArmPlanDigestGolden(t *testing.T) {
	for _, tt := range goldenArmPlans {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.plan.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want {
				t.Errorf("digest %s, want %s (testdata/marginal_arm_plan_digest.py)", got, tt.want)
			}
		})
	}
}

// The payload hashed is exactly upstream's: these eight keys and no
// others, the arms as named objects of a stack and a tree digest.
func TestArmPlanPayloadKeys(t *testing.T) {
	b, err := identity.Envelope(identity.DomainMarginalArmPlan, goldenArmPlans[0].plan, identity.DefaultSchemaVersion)
	if err != nil {
		t.Fatal(err)
	}
	const want = `"payload":{"baseline_after":{"stack_digest":"` + "1111111111111111111111111111111111111111111111111111111111111111" + `","tree_digest":"` +
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `"},"baseline_before":{`
	if !strings.Contains(string(b), want) {
		t.Errorf("envelope %s\ndoes not begin its payload with %s", b, want)
	}
	for _, key := range []string{`"candidate_stack_digest":`, `"challenger":{"stack_digest":`, `"incumbent_stack_digest":`,
		`"policy_version":"stack-plan.v1"`, `"schema_version":1,"transition":{`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("envelope has no %s: %s", key, b)
		}
	}
	if strings.Contains(string(b), `"arms"`) || strings.Contains(string(b), `"role"`) {
		t.Errorf("envelope still carries an arms list or roles: %s", b)
	}
}

// When python3 is at hand, the script is run and must still print the
// digests the table carries, so the two can not drift apart unnoticed.
func TestArmPlanGoldenScriptAgrees(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH; the table carries the digests the script printed")
	}
	out, err := exec.Command(python, "testdata/marginal_arm_plan_digest.py").Output()
	if err != nil {
		t.Fatalf("running the golden script: %v", err)
	}
	var want []string
	for _, tt := range goldenArmPlans {
		want = append(want, tt.name+": "+tt.want)
	}
	if got := strings.TrimSpace(string(out)); got != strings.Join(want, "\n") {
		t.Errorf("script printed\n%s\nthe table carries\n%s", got, strings.Join(want, "\n"))
	}
}
