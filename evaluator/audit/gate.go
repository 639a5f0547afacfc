package audit

import (
	"fmt"
	"slices"
	"strconv"
)

// Decisions of the audit.
const (
	Pass       = "PASS"
	Fail       = "FAIL"
	NoDecision = "NO_DECISION"
)

// Policy is the sealed slot-audit policy of spec §5.3.
type Policy struct {
	MinCalls int `json:"min_calls"`
	// RatePPM is the share of calls recorded, in parts per million
	// (1,000,000: every call).
	RatePPM int `json:"rate_ppm"`
	// ExpectedSlots are the target's member slots, sorted.
	ExpectedSlots []string `json:"expected_slots"`
	WorldSize     int      `json:"world_size"`
	// BudgetBytes bounds the bytes the recorder keeps on disk, shared
	// equally between the expected slots (docs/reference/audit.md, "The
	// budget"). Zero only in evidence recorded before the budget was part
	// of the policy (its recorder held a fixed 1 GiB); omitted there, so
	// that evidence keeps its bytes and its audit control.
	BudgetBytes int64 `json:"budget_bytes,omitempty"`
}

// Defaults of the policy.
const (
	DefaultMinCalls = 32
	DefaultRatePPM  = 1_000_000
	// DefaultBudgetBytes is the recorder's budget unless the audit names
	// another: the 1 GiB the records were always bounded by.
	DefaultBudgetBytes int64 = 1 << 30
	// MaxBudgetBytes bounds what a policy may ask the recorder to write
	// and the judge to read.
	MaxBudgetBytes int64 = 1 << 34
)

// Validate checks the policy's own fields.
func (p Policy) Validate() error {
	switch {
	case p.MinCalls < 1:
		return fmt.Errorf("audit policy: min_calls %d must be at least 1", p.MinCalls)
	case p.RatePPM < 1 || p.RatePPM > 1_000_000:
		return fmt.Errorf("audit policy: rate_ppm %d must lie in [1, 1000000]", p.RatePPM)
	case len(p.ExpectedSlots) == 0:
		return fmt.Errorf("audit policy: no expected slot")
	case p.WorldSize < 1:
		return fmt.Errorf("audit policy: world_size %d must be at least 1", p.WorldSize)
	case p.BudgetBytes < 0 || p.BudgetBytes > MaxBudgetBytes:
		return fmt.Errorf("audit policy: budget_bytes %d must lie in [1, %d] (0 only in evidence from before the budget was bound)", p.BudgetBytes, MaxBudgetBytes)
	case !slices.IsSorted(p.ExpectedSlots) || len(slices.Compact(slices.Clone(p.ExpectedSlots))) != len(p.ExpectedSlots):
		return fmt.Errorf("audit policy: expected slots %v must be sorted and distinct", p.ExpectedSlots)
	}
	return nil
}

// Receipt is the judgement of one expected slot on one rank. Fractions
// are decimal strings (Python's shortest repr of the double), so the
// receipt's bytes do not depend on a float printer.
type Receipt struct {
	Slot          string `json:"slot"`
	Rank          int    `json:"rank"`
	PID           int    `json:"pid"`
	WorldSize     int    `json:"world_size"`
	Calls         int    `json:"calls"` // calls the engine made at the slot
	N             int    `json:"n"`     // recorded calls judged
	Violations    int    `json:"violations"`
	CompareErrors int    `json:"compare_errors"`
	WorstFrac     string `json:"worst_frac"`
	Bar           string `json:"bar"`
	Mode          string `json:"mode"`
	// FirstViolation is the first violating (or unjudgeable) call.
	FirstViolation *Violation     `json:"first_violation"`
	Origins        map[string]int `json:"origins"` // which row ran the recorded calls
}

// Violation names one call the audit failed.
type Violation struct {
	Call   int    `json:"call"`
	Frac   string `json:"frac"`
	Reason string `json:"reason"`
}

// Gate is the host gate of spec §5.3 over the receipts: coverage must be
// exactly slots × ranks (one pid per rank and one rank per pid, no
// duplicate), every n at least min_calls, and no violation or compare
// error anywhere. Receipts are the validator's judge's own words, so a
// malformed set of them is NO_DECISION, never the candidate's failure;
// a violation or a compare error is FAIL. It reads
// nothing but its arguments, so a regrade reaches the same answer.
func Gate(p Policy, receipts []Receipt) (string, string) {
	if err := p.Validate(); err != nil {
		return NoDecision, err.Error()
	}
	if len(receipts) == 0 {
		return NoDecision, "no audit receipt"
	}
	seen := map[[2]string]bool{}
	pidOf, rankOf := map[int]int{}, map[int]int{}
	for _, r := range receipts {
		where := fmt.Sprintf("receipt %s rank %d", r.Slot, r.Rank)
		switch {
		case !slices.Contains(p.ExpectedSlots, r.Slot):
			return NoDecision, fmt.Sprintf("%s: not an expected slot (%v)", where, p.ExpectedSlots)
		case r.PID < 1:
			return NoDecision, fmt.Sprintf("%s: pid %d", where, r.PID)
		case r.Rank < 0 || r.Rank >= p.WorldSize:
			return NoDecision, fmt.Sprintf("%s: rank outside [0, %d)", where, p.WorldSize)
		case r.WorldSize != p.WorldSize:
			return NoDecision, fmt.Sprintf("%s: world size %d, the policy's is %d", where, r.WorldSize, p.WorldSize)
		}
		key := [2]string{r.Slot, strconv.Itoa(r.Rank)}
		if seen[key] {
			return NoDecision, where + ": duplicate"
		}
		seen[key] = true
		if pid, ok := pidOf[r.Rank]; ok && pid != r.PID {
			return NoDecision, fmt.Sprintf("%s: pid %d, another receipt of the rank has pid %d", where, r.PID, pid)
		}
		if rank, ok := rankOf[r.PID]; ok && rank != r.Rank {
			return NoDecision, fmt.Sprintf("%s: pid %d is also rank %d", where, r.PID, rank)
		}
		pidOf[r.Rank], rankOf[r.PID] = r.PID, r.Rank
	}
	// Violations first: a wrong output is the strongest finding.
	for _, r := range receipts {
		if r.Violations > 0 {
			v := r.FirstViolation
			if v == nil {
				return Fail, fmt.Sprintf("audit violation: %s rank %d: %d of %d calls, worst fraction %s (bar %s)", r.Slot, r.Rank, r.Violations, r.N, r.WorstFrac, r.Bar)
			}
			return Fail, fmt.Sprintf("audit violation: %s rank %d call %d: fraction %s, bar %s (%d of %d calls violate, worst %s): %s",
				r.Slot, r.Rank, v.Call, v.Frac, r.Bar, r.Violations, r.N, r.WorstFrac, v.Reason)
		}
	}
	for _, r := range receipts {
		if r.CompareErrors > 0 {
			reason := ""
			if r.FirstViolation != nil {
				reason = fmt.Sprintf(" (call %d: %s)", r.FirstViolation.Call, r.FirstViolation.Reason)
			}
			return Fail, fmt.Sprintf("audit compare errors: %s rank %d: the stock result could not be recomputed on %d recorded calls%s",
				r.Slot, r.Rank, r.CompareErrors, reason)
		}
	}
	if want := len(p.ExpectedSlots) * p.WorldSize; len(seen) != want {
		return NoDecision, fmt.Sprintf("audit coverage: %d receipts, want %d (slots × ranks)", len(seen), want)
	}
	for _, r := range receipts {
		if r.N < p.MinCalls {
			return NoDecision, fmt.Sprintf("audit coverage: %s rank %d judged %d calls (%d made), fewer than min_calls %d", r.Slot, r.Rank, r.N, r.Calls, p.MinCalls)
		}
	}
	return Pass, fmt.Sprintf("%d slot(s) × %d rank(s) audited, no violation", len(p.ExpectedSlots), p.WorldSize)
}
