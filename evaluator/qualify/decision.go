// Package qualify runs one qualification: a candidate's single target
// transition measured over the incumbent on isolated lanes, each stage
// leaving a receipt, the verdict graded only from the controller's own
// measurements, and the evidence kept so anyone can re-grade it.
package qualify

import (
	"errors"
	"fmt"

	"github.com/cacheon/engine/evaluator/engine"
)

// Decision is a stage's or a qualification's outcome.
type Decision string

// Decisions. NO_DECISION is infrastructure trouble (an incumbent engine
// that failed, a lane that vanished, a budget spent): never a loss, never
// a crown.
const (
	Pass       Decision = "PASS"
	Fail       Decision = "FAIL"
	NoDecision Decision = "NO_DECISION"
)

// ExitCode is the command's exit status for a decision: 0 PASS, 2 FAIL,
// 3 NO_DECISION (1 is left to usage and infrastructure errors).
func (d Decision) ExitCode() int {
	switch d {
	case Pass:
		return 0
	case Fail:
		return 2
	default:
		return 3
	}
}

// Outcome is a decision with its reason.
type Outcome struct {
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason"`
}

// attribute turns an engine's failure into an outcome: what the
// candidate's engine does wrong is the candidate's FAIL; anything else
// (the incumbent's engine, the sandbox, the host) is NO_DECISION.
func attribute(role string, candidate bool, err error) Outcome {
	var f *engine.Fault
	if candidate && errors.As(err, &f) {
		return Outcome{Fail, fmt.Sprintf("%s engine: %v", role, err)}
	}
	return Outcome{NoDecision, fmt.Sprintf("%s engine: %v", role, err)}
}
