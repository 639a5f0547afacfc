package ledger

import "fmt"

// Status is a reservation status of an intake proposal.
type Status string

// The reservation statuses. Active ones are on the way to a verdict;
// failed, expired and qualified are terminal; held and no_decision wait
// for an operator or a retry.
const (
	Deferred            Status = "deferred"
	Reserved            Status = "reserved"
	Fetching            Status = "fetching"
	TransportRetry      Status = "transport_retry"
	Published           Status = "published"
	Screening           Status = "screening"
	Promoted            Status = "promoted"
	Qualifying          Status = "qualifying"
	ReproductionPending Status = "reproduction_pending"
	Failed              Status = "failed"
	Expired             Status = "expired"
	Qualified           Status = "qualified"
	Held                Status = "held"
	NoDecision          Status = "no_decision"
)

// start is the from-status of a proposal's first transition.
const start Status = ""

// transitions is the state machine: for each status, where it may go.
// Any non-terminal status may fail or expire (an operator's refusal, the
// finalized-block SLA), so those are added below rather than repeated.
var transitions = map[Status][]Status{
	start:          {Reserved, Deferred, Failed},
	Deferred:       {Reserved},
	Reserved:       {Fetching},
	Fetching:       {Published, TransportRetry},
	TransportRetry: {Fetching, Held},
	Published:      {Screening},
	// published from flight: a lease reclaimed, the proposal back in the
	// queue (Reclaim is the only way).
	Screening:           {Promoted, Held, NoDecision, Published},
	Promoted:            {Qualifying, NoDecision, Published}, // no_decision: the run died between the screens and the qualification
	Qualifying:          {ReproductionPending, Qualified, Held, NoDecision, Published},
	ReproductionPending: {Screening, Qualifying, NoDecision, Published},
	Held:                {Fetching, Screening, Qualifying},
	NoDecision:          {Screening, Qualifying, Held},
	Failed:              nil,
	Expired:             nil,
	// Settlement holds a qualified proposal it did not crown (a stale
	// incumbent, a lost conflict, an incumbent that advanced under it):
	// the proposal must requalify against the new incumbent.
	Qualified: {Held},
}

// Terminal reports whether s is a terminal verdict of evaluation: no
// evaluation leaves it, and it never fails or expires. The one way out is
// settlement's hold of a qualified proposal it did not crown.
func (s Status) Terminal() bool { return s == Failed || s == Expired || s == Qualified }

// Known reports whether s is one of the statuses.
func (s Status) Known() bool {
	_, ok := transitions[s]
	return ok && s != start
}

// CanTransition reports whether the state machine allows from → to.
func CanTransition(from, to Status) bool {
	if from != start && !from.Known() || !to.Known() {
		return false
	}
	if from != start && !from.Terminal() && (to == Failed || to == Expired) {
		return true
	}
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

func checkTransition(id int64, from, to Status) error {
	if !CanTransition(from, to) {
		f := string(from)
		if f == "" {
			f = "(new)"
		}
		return fmt.Errorf("%w: proposal %d: illegal transition %s -> %s", ErrIllegal, id, f, to)
	}
	return nil
}
