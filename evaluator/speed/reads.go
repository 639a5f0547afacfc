package speed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/cacheon/engine/internal/reject"
)

// Role is a read's place in the schedule.
type Role string

// The roles of the speed reads: the incumbent engine, the candidate
// engine, and the incumbent again after the candidate.
const (
	B      Role = "B"
	C      Role = "C"
	BPrime Role = "B_prime"
)

// Window is one timed batch: the tokens it produced and the host seconds
// it took.
type Window struct {
	Tokens  int64
	Seconds float64
}

// Read is one engine's speed read: its conditioning (the batches just
// before the first timed one) and its timed windows, in order.
type Read struct {
	Role                Role
	ConditioningTokens  int64
	ConditioningSeconds float64
	Windows             []Window
}

// ErrEvidence is the class of every rejection of speed evidence: reads of
// the wrong shape, values out of range, a schedule the version does not
// run. It matches the rejection root (reject.ErrRejected).
var ErrEvidence = reject.New("speed evidence rejected")

// EvidenceError names which read and field was refused, and why.
type EvidenceError struct {
	Where  string // e.g. "reads[1].windows[0].seconds"
	Reason string
}

func (e *EvidenceError) Error() string {
	return fmt.Sprintf("speed evidence: %s: %s", e.Where, e.Reason)
}
func (e *EvidenceError) Unwrap() error { return ErrEvidence }

type readsFile struct {
	Reads []readJSON `json:"reads"`
}

type readJSON struct {
	Role                Role         `json:"role"`
	ConditioningTokens  *int64       `json:"conditioning_tokens"`
	ConditioningSeconds *string      `json:"conditioning_seconds"`
	Windows             []windowJSON `json:"windows"`
}

type windowJSON struct {
	Tokens  *int64  `json:"tokens"`
	Seconds *string `json:"seconds"`
}

// ParseReads reads `{"reads": [...]}` in read order: each read's role,
// conditioning tokens and seconds and its windows, seconds as decimal
// strings. Unknown fields are refused.
func ParseReads(data []byte) ([]Read, error) {
	var f readsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, &EvidenceError{Where: "(document)", Reason: err.Error()}
	}
	if dec.More() {
		return nil, &EvidenceError{Where: "(document)", Reason: "trailing data after the reads object"}
	}
	if f.Reads == nil {
		return nil, &EvidenceError{Where: "reads", Reason: "missing"}
	}
	reads := make([]Read, len(f.Reads))
	for i, r := range f.Reads {
		at := fmt.Sprintf("reads[%d]", i)
		if r.ConditioningTokens == nil {
			return nil, &EvidenceError{Where: at + ".conditioning_tokens", Reason: "missing"}
		}
		if r.ConditioningSeconds == nil {
			return nil, &EvidenceError{Where: at + ".conditioning_seconds", Reason: "missing"}
		}
		cs, err := ParseDecimal(*r.ConditioningSeconds)
		if err != nil {
			return nil, &EvidenceError{Where: at + ".conditioning_seconds", Reason: err.Error()}
		}
		reads[i] = Read{Role: r.Role, ConditioningTokens: *r.ConditioningTokens, ConditioningSeconds: cs}
		for j, w := range r.Windows {
			wat := fmt.Sprintf("%s.windows[%d]", at, j)
			if w.Tokens == nil {
				return nil, &EvidenceError{Where: wat + ".tokens", Reason: "missing"}
			}
			if w.Seconds == nil {
				return nil, &EvidenceError{Where: wat + ".seconds", Reason: "missing"}
			}
			s, err := ParseDecimal(*w.Seconds)
			if err != nil {
				return nil, &EvidenceError{Where: wat + ".seconds", Reason: err.Error()}
			}
			reads[i].Windows = append(reads[i].Windows, Window{Tokens: *w.Tokens, Seconds: s})
		}
	}
	return reads, nil
}

// MarshalReads writes reads in the shape ParseReads accepts.
func MarshalReads(reads []Read) ([]byte, error) {
	f := readsFileOut{Reads: []readOut{}}
	for _, r := range reads {
		o := readOut{Role: r.Role, ConditioningTokens: r.ConditioningTokens, ConditioningSeconds: Format(r.ConditioningSeconds), Windows: []windowOut{}}
		for _, w := range r.Windows {
			o.Windows = append(o.Windows, windowOut{Tokens: w.Tokens, Seconds: Format(w.Seconds)})
		}
		f.Reads = append(f.Reads, o)
	}
	return json.MarshalIndent(f, "", "  ")
}

type readsFileOut struct {
	Reads []readOut `json:"reads"`
}

type readOut struct {
	Role                Role        `json:"role"`
	ConditioningTokens  int64       `json:"conditioning_tokens"`
	ConditioningSeconds string      `json:"conditioning_seconds"`
	Windows             []windowOut `json:"windows"`
}

type windowOut struct {
	Tokens  int64  `json:"tokens"`
	Seconds string `json:"seconds"`
}

// checkRead refuses a read that cannot be graded: too few windows, a
// window with no tokens or no time, a conditioning with no time.
func checkRead(p Policy, i int, r Read) error {
	at := fmt.Sprintf("reads[%d]", i)
	need := p.MinWindows
	if need < 3 {
		need = 3
	}
	if len(r.Windows) < need {
		return &EvidenceError{Where: at + ".windows", Reason: fmt.Sprintf("%d windows, the policy needs at least %d", len(r.Windows), need)}
	}
	if r.ConditioningTokens <= 0 {
		return &EvidenceError{Where: at + ".conditioning_tokens", Reason: fmt.Sprintf("%d is not positive", r.ConditioningTokens)}
	}
	if !(r.ConditioningSeconds > 0) || math.IsInf(r.ConditioningSeconds, 0) {
		return &EvidenceError{Where: at + ".conditioning_seconds", Reason: fmt.Sprintf("%s is not a positive time", Format(r.ConditioningSeconds))}
	}
	for j, w := range r.Windows {
		if w.Tokens <= 0 {
			return &EvidenceError{Where: fmt.Sprintf("%s.windows[%d].tokens", at, j), Reason: fmt.Sprintf("%d is not positive", w.Tokens)}
		}
		if !(w.Seconds > 0) || math.IsInf(w.Seconds, 0) {
			return &EvidenceError{Where: fmt.Sprintf("%s.windows[%d].seconds", at, j), Reason: fmt.Sprintf("%s is not a positive time", Format(w.Seconds))}
		}
		if rate := float64(w.Tokens) / w.Seconds; math.IsInf(rate, 0) {
			return &EvidenceError{Where: fmt.Sprintf("%s.windows[%d]", at, j), Reason: "the rate overflows: no engine produces tokens that fast"}
		}
	}
	return nil
}

// Rate is what one read contributes to the grade.
type Rate struct {
	Role    Role
	Scored  float64   // median of the window rates, tokens per second
	Scatter float64   // median absolute deviation over the median: advisory
	Windows []float64 // per-window rates, in order
}

func rateOf(r Read) Rate {
	rates := make([]float64, len(r.Windows))
	for i, w := range r.Windows {
		rates[i] = float64(w.Tokens) / w.Seconds
	}
	m := Median(rates)
	dev := make([]float64, len(rates))
	for i, x := range rates {
		dev[i] = math.Abs(x - m)
	}
	return Rate{Role: r.Role, Scored: m, Scatter: Median(dev) / m, Windows: rates}
}
