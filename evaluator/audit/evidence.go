package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// Schema names the audit evidence format.
const Schema = "cacheon.qualification-audit.v1"

// ArtifactAudit is the evidence-store domain of audit evidence.
const ArtifactAudit = "cacheon.qualification.audit"

// Evidence is what the audit did and decided: the AuditWitness of spec
// §5.6. The seed itself is not kept: it follows from the secret (whose
// commitment is) and the selected delta, once the secret is revealed.
type Evidence struct {
	Schema           string `json:"schema"`
	Decision         string `json:"decision"`
	Reason           string `json:"reason"`
	DecidedBy        string `json:"decided_by"` // engine, records, judge or gate
	Policy           Policy `json:"policy"`
	SecretCommitment string `json:"secret_commitment"`
	SelectedDelta    string `json:"selected_delta"`
	// Prompt is the SHA-256 of the audit prompt's canonical JSON token list.
	Prompt       string    `json:"prompt"`
	PromptTokens int       `json:"prompt_tokens"`
	Repetitions  int       `json:"repetitions"`
	NewTokens    int       `json:"new_tokens"`
	Receipts     []Receipt `json:"receipts"`
	RecordErrors []string  `json:"record_errors,omitempty"`
	// Wall times, in seconds as decimal strings.
	Seconds       string `json:"seconds"`
	EngineSeconds string `json:"engine_seconds"`
	JudgeSeconds  string `json:"judge_seconds"`
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// Canonical is the evidence's canonical JSON.
func (e *Evidence) Canonical() ([]byte, error) { return canonjson.Marshal(e) }

// Publish writes the evidence to the store.
func Publish(store *evidence.Store, e *Evidence) (evidence.Ref, error) {
	data, err := e.Canonical()
	if err != nil {
		return evidence.Ref{}, fmt.Errorf("audit evidence: %w", err)
	}
	return store.Put(ArtifactAudit, "application/json", Schema, data)
}

// Parse reads stored audit evidence, refusing unknown fields.
func Parse(data []byte) (*Evidence, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e Evidence
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("audit evidence: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("audit evidence: trailing data")
	}
	if e.Schema != Schema {
		return nil, fmt.Errorf("audit evidence: schema %q, want %q", e.Schema, Schema)
	}
	return &e, nil
}

// Regrade reads the evidence ref names and recomputes its decision: a
// decision of the gate from the retained receipts, bit for bit; one made
// before the gate (the engine, the records, the judge) must not have
// receipts that the gate would pass, and a PASS only the gate can give.
func Regrade(store *evidence.Store, ref evidence.Ref) (*Evidence, error) {
	if ref.Domain != ArtifactAudit || ref.Schema != Schema {
		return nil, fmt.Errorf("audit regrade: reference is a %s/%s, not audit evidence", ref.Domain, ref.Schema)
	}
	data, err := store.Get(ref)
	if err != nil {
		return nil, err
	}
	e, err := Parse(data)
	if err != nil {
		return nil, err
	}
	switch e.DecidedBy {
	case ByGate:
		d, r := Gate(e.Policy, e.Receipts)
		if d != e.Decision || r != e.Reason {
			return e, fmt.Errorf("audit regrade: the receipts grade %s (%s), the evidence says %s (%s)", d, r, e.Decision, e.Reason)
		}
	case ByEngine, ByRecords, ByJudge:
		if e.Decision == Pass {
			return e, fmt.Errorf("audit regrade: a PASS decided by the %s, not the gate", e.DecidedBy)
		}
		if e.Decision != Fail && e.Decision != NoDecision {
			return e, fmt.Errorf("audit regrade: decision %q", e.Decision)
		}
	default:
		return e, fmt.Errorf("audit regrade: decided_by %q", e.DecidedBy)
	}
	return e, nil
}

// Control is the audit control digest: H(DomainAuditControl, what two
// audits of one candidate must share), that is the evidence schema, the
// policy without its seed (min_calls, rate_ppm, expected_slots,
// world_size, budget_bytes) and the audit schedule (the prompt, its length, the
// repetitions and the new tokens, all drawn from the workload). Two
// independent audits of one candidate have equal controls and different
// seeds; settlement refuses a pair whose controls differ. It is a
// function of the evidence alone, so a regrade recomputes it.
func (e *Evidence) Control() (string, error) {
	slots := make([]any, len(e.Policy.ExpectedSlots))
	for i, s := range e.Policy.ExpectedSlots {
		slots[i] = s
	}
	payload := map[string]any{
		"schema": e.Schema, "min_calls": int64(e.Policy.MinCalls), "rate_ppm": int64(e.Policy.RatePPM),
		"expected_slots": slots, "world_size": int64(e.Policy.WorldSize),
		"prompt": e.Prompt, "prompt_tokens": int64(e.PromptTokens), "repetitions": int64(e.Repetitions), "new_tokens": int64(e.NewTokens),
	}
	// The budget decides how many calls are judged, so two audits that
	// settlement pairs must share it. Evidence from before the budget was
	// bound has none, and keeps the control it was published with.
	if e.Policy.BudgetBytes != 0 {
		payload["budget_bytes"] = e.Policy.BudgetBytes
	}
	d, err := identity.H(identity.DomainAuditControl, payload)
	if err != nil {
		return "", fmt.Errorf("audit control: %w", err)
	}
	return d.String(), nil
}
