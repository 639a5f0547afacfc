package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
)

func policy() Policy {
	return Policy{MinCalls: 32, RatePPM: DefaultRatePPM, ExpectedSlots: []string{"a.x", "b.y"}, WorldSize: 2}
}

func receipt(slot string, rank int) Receipt {
	return Receipt{Slot: slot, Rank: rank, PID: 100 + rank, WorldSize: 2, Calls: 40, N: 40, WorstFrac: "1.0", Bar: "0.995", Mode: "allclose"}
}

func full() []Receipt {
	return []Receipt{receipt("a.x", 0), receipt("a.x", 1), receipt("b.y", 0), receipt("b.y", 1)}
}

func TestGate(t *testing.T) {
	cases := []struct {
		name     string
		policy   func(*Policy)
		receipts func([]Receipt) []Receipt
		decision string
		reason   string
	}{
		{"every slot and rank covered", nil, nil, Pass, "2 slot(s) × 2 rank(s) audited"},
		{"no receipt", nil, func([]Receipt) []Receipt { return nil }, NoDecision, "no audit receipt"},
		{"a rank short", nil, func(r []Receipt) []Receipt { return r[:3] }, NoDecision, "3 receipts, want 4"},
		{"n under min_calls", nil, func(r []Receipt) []Receipt { r[2].N = 31; return r }, NoDecision, "b.y rank 0 judged 31 calls"},
		{"a violation", nil, func(r []Receipt) []Receipt {
			r[1].Violations, r[1].WorstFrac, r[1].FirstViolation = 3, "0.5", &Violation{Call: 7, Frac: "0.75", Reason: "x"}
			return r
		}, Fail, "audit violation: a.x rank 1 call 7: fraction 0.75, bar 0.995 (3 of 40 calls violate, worst 0.5)"},
		{"a violation beats short coverage", nil, func(r []Receipt) []Receipt { r[0].Violations = 1; return r[:1] }, Fail, "audit violation: a.x rank 0"},
		{"a compare error", nil, func(r []Receipt) []Receipt { r[3].CompareErrors = 1; return r }, Fail, "audit compare errors: b.y rank 1"},
		{"an unexpected slot", nil, func(r []Receipt) []Receipt { r[0].Slot = "c.z"; return r }, NoDecision, "not an expected slot"},
		{"a duplicate", nil, func(r []Receipt) []Receipt { r[1].Rank, r[1].PID = 0, 100; return r }, NoDecision, "a.x rank 0: duplicate"},
		{"two pids on a rank", nil, func(r []Receipt) []Receipt { r[2].PID = 999; return r }, NoDecision, "another receipt of the rank has pid 100"},
		{"a pid on two ranks", nil, func(r []Receipt) []Receipt { r[1].PID, r[3].PID = 100, 100; return r }, NoDecision, "pid 100 is also rank 0"},
		{"a rank outside the world", nil, func(r []Receipt) []Receipt { r[3].Rank = 2; return r }, NoDecision, "rank outside [0, 2)"},
		{"another world size", nil, func(r []Receipt) []Receipt { r[0].WorldSize = 4; return r }, NoDecision, "world size 4"},
		{"pid zero", nil, func(r []Receipt) []Receipt { r[0].PID = 0; return r }, NoDecision, "pid 0"},
		{"min_calls zero", func(p *Policy) { p.MinCalls = 0 }, nil, NoDecision, "min_calls 0"},
		{"unsorted slots", func(p *Policy) { p.ExpectedSlots = []string{"b.y", "a.x"} }, nil, NoDecision, "sorted and distinct"},
		{"rate over a million", func(p *Policy) { p.RatePPM = 1_000_001 }, nil, NoDecision, "rate_ppm"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, r := policy(), full()
			if c.policy != nil {
				c.policy(&p)
			}
			if c.receipts != nil {
				r = c.receipts(r)
			}
			d, reason := Gate(p, r)
			if d != c.decision || !strings.Contains(reason, c.reason) {
				t.Fatalf("Gate = %s %q, want %s with %q", d, reason, c.decision, c.reason)
			}
		})
	}
}

func TestSeed(t *testing.T) {
	secret := []byte(strings.Repeat("k", MinSecretBytes))
	delta := strings.Repeat("ab", 32)
	got, err := Seed(secret, delta)
	if err != nil {
		t.Fatal(err)
	}
	// The spec's construction, spelled out: SHA-256 over the prefix, NUL,
	// the secret and the delta's digest bytes; its first 32 hex digits.
	raw, _ := hex.DecodeString(delta)
	sum := sha256.Sum256(append(append([]byte("cacheon.qualification.audit-seed.v1\x00"), secret...), raw...))
	if want := hex.EncodeToString(sum[:])[:32]; got != want || string(identity.DomainAuditSeed) != "cacheon.qualification.audit-seed.v1" {
		t.Fatalf("seed %s, want %s", got, want)
	}
	other, _ := Seed(append([]byte{'x'}, secret...), delta)
	if other == got {
		t.Fatal("the seed does not depend on the secret")
	}
	if SecretCommitment(secret) == SecretCommitment(append([]byte{'x'}, secret...)) {
		t.Fatal("the commitment does not depend on the secret")
	}
	for _, bad := range []struct {
		secret []byte
		delta  string
	}{{secret[:31], delta}, {secret, "ab"}, {secret, strings.Repeat("zz", 32)}} {
		if _, err := Seed(bad.secret, bad.delta); !reject.Is(err) {
			t.Errorf("Seed(%d bytes, %q) = %v, want a rejection", len(bad.secret), bad.delta, err)
		}
	}
}

// TestVerifySeed: the ABI screen's seed is the construction its doc
// states, depends on the secret and on the candidate, is non-negative,
// and is refused for a short secret or a malformed delta.
func TestVerifySeed(t *testing.T) {
	secret := []byte(strings.Repeat("k", MinSecretBytes))
	delta := strings.Repeat("ab", 32)
	got, err := VerifySeed(secret, delta)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(delta)
	sum := sha256.Sum256(append(append([]byte(string(identity.DomainVerifySeed)+"\x00"), secret...), raw...))
	want := int64(0)
	for _, b := range sum[:6] {
		want = want<<8 | int64(b)
	}
	if got != want || got < 0 {
		t.Fatalf("seed %d, want %d", got, want)
	}
	if other, _ := VerifySeed(append([]byte{'x'}, secret...), delta); other == got {
		t.Fatal("the seed does not depend on the secret")
	}
	if other, _ := VerifySeed(secret, strings.Repeat("cd", 32)); other == got {
		t.Fatal("the seed does not depend on the candidate")
	}
	for _, bad := range []struct {
		secret []byte
		delta  string
	}{{secret[:31], delta}, {secret, "ab"}, {secret, strings.Repeat("zz", 32)}} {
		if _, err := VerifySeed(bad.secret, bad.delta); !reject.Is(err) {
			t.Errorf("VerifySeed(%d bytes, %q) = %v, want a rejection", len(bad.secret), bad.delta, err)
		}
	}
}

func TestLoadSecret(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(good, []byte(strings.Repeat("s", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadSecret(good); err != nil || len(s) != 40 {
		t.Fatalf("LoadSecret(good) = %d bytes, %v", len(s), err)
	}
	if _, err := LoadSecret(short); !reject.Is(err) {
		t.Fatalf("LoadSecret(short) = %v, want a rejection", err)
	}
	if _, err := LoadSecret(dir); !reject.Is(err) {
		t.Fatalf("LoadSecret(dir) = %v, want a rejection", err)
	}
	a, err := LoadSecret("")
	b, err2 := LoadSecret("")
	if err != nil || err2 != nil || len(a) != MinSecretBytes || string(a) == string(b) {
		t.Fatalf("fresh secrets %x %x (%v %v)", a, b, err, err2)
	}
}

func TestShortestPrompt(t *testing.T) {
	p, err := ShortestPrompt(auditWorkload())
	if err != nil {
		t.Fatal(err)
	}
	// Two prompts of five tokens: the one whose canonical JSON hashes lower.
	h := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	a, b := h("[1,2,3,4,5]"), h("[9,8,7,6,5]")
	want := a
	if b < a {
		want = b
	}
	if p.Digest != want || len(p.Tokens) != 5 {
		t.Fatalf("prompt %v %s, want digest %s", p.Tokens, p.Digest, want)
	}
	if _, err := ShortestPrompt(&workload.Workload{Name: "empty"}); !reject.Is(err) {
		t.Fatalf("an empty workload: %v", err)
	}
}

func TestRegradeRecomputesTheGate(t *testing.T) {
	store, err := evidence.Open(filepath.Join(t.TempDir(), "evidence"), 0)
	if err != nil {
		t.Fatal(err)
	}
	p := policy()
	d, r := Gate(p, full())
	ev := &Evidence{Schema: Schema, Decision: d, Reason: r, DecidedBy: ByGate, Policy: p, Receipts: full()}
	ref, err := Publish(store, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Regrade(store, ref); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(*Evidence)
		want   string
	}{
		{"a receipt hides a violation", func(e *Evidence) { e.Receipts[0].Violations = 1 }, "the receipts grade FAIL"},
		{"a PASS before the gate", func(e *Evidence) { e.DecidedBy = ByEngine }, "a PASS decided by the engine"},
		{"an unknown decider", func(e *Evidence) { e.DecidedBy = "lead" }, "decided_by"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := *ev
			bad.Receipts = full()
			c.mutate(&bad)
			ref, err := Publish(store, &bad)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Regrade(store, ref); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Regrade = %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Regrade(store, evidence.Ref{Domain: "cacheon.qualification.report", Schema: Schema}); err == nil {
		t.Fatal("regraded a reference to another kind of artifact")
	}
}

// TestTheSampleIsNotInTheEnvironment: the audit session's environment
// (what its os.environ and /proc/self/environ hold, which the candidate's
// code can read) names no seed or rate; they are the first request line.
func TestTheSampleIsNotInTheEnvironment(t *testing.T) {
	t.Parallel()
	seed := strings.Repeat("ab", 16)
	env := sessionEnv("/records", []string{"norm.rmsnorm"}, "norm.rmsnorm=2")
	for _, kv := range env {
		if strings.Contains(kv, seed) || strings.Contains(kv, "RATE") || strings.Contains(kv, "SEED") {
			t.Errorf("the session environment carries %q", kv)
		}
	}
	var secret struct {
		Seed   string `json:"audit_seed"`
		Rate   int    `json:"audit_rate_ppm"`
		Budget int64  `json:"audit_budget_bytes"`
	}
	if err := json.Unmarshal(secretLine(seed, 250_000, 1<<20), &secret); err != nil || secret.Seed != seed || secret.Rate != 250_000 || secret.Budget != 1<<20 {
		t.Fatalf("secret line %+v, %v", secret, err)
	}
}

// TestTheControlBindsTheBudget: the budget decides how many calls are
// judged, so two audits with different budgets have different controls
// and settlement will not pair them; evidence from before the budget was
// bound (no budget_bytes) keeps the control it was published with and
// its canonical bytes.
func TestTheControlBindsTheBudget(t *testing.T) {
	ev := &Evidence{Schema: Schema, Policy: Policy{MinCalls: 32, RatePPM: DefaultRatePPM, ExpectedSlots: []string{"norm.rmsnorm"}, WorldSize: 1},
		Prompt: strings.Repeat("ab", 32), PromptTokens: 5, Repetitions: 33, NewTokens: NewTokens, Receipts: []Receipt{}}
	before, err := identity.H(identity.DomainAuditControl, map[string]any{
		"schema": Schema, "min_calls": int64(32), "rate_ppm": int64(DefaultRatePPM), "expected_slots": []any{"norm.rmsnorm"},
		"world_size": int64(1), "prompt": ev.Prompt, "prompt_tokens": int64(5), "repetitions": int64(33), "new_tokens": int64(NewTokens),
	})
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := ev.Control()
	if err != nil || legacy != before.String() {
		t.Fatalf("the control of evidence without a budget is %s (%v), it was %s", legacy, err, before)
	}
	data, err := ev.Canonical()
	if err != nil || strings.Contains(string(data), "budget_bytes") {
		t.Fatalf("evidence without a budget marshals as %s (%v)", data, err)
	}
	seen := map[string]int64{legacy: 0}
	for _, b := range []int64{DefaultBudgetBytes, 96 << 10} {
		e := *ev
		e.Policy.BudgetBytes = b
		c, err := e.Control()
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[c]; ok {
			t.Fatalf("budgets %d and %d give one control %s", b, other, c)
		}
		seen[c] = b
	}
	for _, b := range []int64{-1, MaxBudgetBytes + 1} {
		p := Policy{MinCalls: 1, RatePPM: 1, ExpectedSlots: []string{"a"}, WorldSize: 1, BudgetBytes: b}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "budget_bytes") {
			t.Errorf("budget %d: %v", b, err)
		}
	}
}
