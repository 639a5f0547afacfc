package fingerprint

import (
	"fmt"
	"sort"
	"strings"
)

// Rules by which a later proposal copies an earlier one, checked in this
// order.
const (
	RulePayload         = "payload"          // the same selected payload digest
	RuleNormalizedDelta = "normalized_delta" // the same normalized delta
	RuleContainment     = "containment"      // symmetric containment of substantial files
)

// Verdict is the answer of Compare.
type Verdict struct {
	Copy bool
	// Rule is the first rule that matched; empty when Copy is false.
	Rule string
	// Reason is a stable one-line account: the rule and the digest that
	// matched, or each substantial file's containment.
	Reason string
	// Pairs is each substantial file's containment in the other
	// proposal, sorted by side then path; empty when either proposal has
	// no substantial file.
	Pairs []Pair
}

// Pair is one substantial file's containment in the other proposal:
// Shared of its Total fingerprints occur among the other proposal's
// fingerprints; Partner is the other proposal's file that shares the
// most of them.
type Pair struct {
	Side    string // "later" (a file of the later proposal) or "earlier"
	Path    string
	Partner string
	Shared  int
	Total   int
}

// Contained reports whether the pair reaches the threshold.
func (p Pair) Contained() bool { return p.Shared*100 >= ThresholdPercent*p.Total }

func (p Pair) String() string {
	return fmt.Sprintf("%s %s in %s %d/%d", p.Side, p.Path, p.Partner, p.Shared, p.Total)
}

// Compare decides whether later copies earlier. Priority (which of two
// proposals is the earlier) is the caller's: the finalized chain order.
func Compare(earlier, later *Fingerprint) Verdict {
	pairs := containment(earlier, later)
	v := Verdict{Pairs: pairs}
	switch {
	case earlier.SelectedPayloadDigest == later.SelectedPayloadDigest:
		v.Copy, v.Rule = true, RulePayload
		v.Reason = fmt.Sprintf("%s: selected payload %s equals the earlier proposal's", RulePayload, later.SelectedPayloadDigest)
	case earlier.NormalizedDeltaDigest == later.NormalizedDeltaDigest:
		v.Copy, v.Rule = true, RuleNormalizedDelta
		v.Reason = fmt.Sprintf("%s: normalized delta %s equals the earlier proposal's", RuleNormalizedDelta, later.NormalizedDeltaDigest)
	case len(pairs) == 0:
		v.Reason = "distinct: no substantial file on one side"
	default:
		all := true
		for _, p := range pairs {
			all = all && p.Contained()
		}
		parts := make([]string, len(pairs))
		for i, p := range pairs {
			parts[i] = p.String()
		}
		if all {
			v.Copy, v.Rule = true, RuleContainment
			v.Reason = RuleContainment + ": " + strings.Join(parts, "; ")
		} else {
			v.Reason = "distinct: " + strings.Join(parts, "; ")
		}
	}
	return v
}

// containment measures each substantial file of both proposals against
// the other proposal's fingerprints (all its files, so code split across
// or merged into other files is still found). Both sides need a
// substantial file, or there is nothing to measure.
func containment(earlier, later *Fingerprint) []Pair {
	sub := func(fp *Fingerprint) []*File {
		var out []*File
		for i := range fp.Files {
			if fp.Files[i].Substantial() {
				out = append(out, &fp.Files[i])
			}
		}
		return out
	}
	es, ls := sub(earlier), sub(later)
	if len(es) == 0 || len(ls) == 0 {
		return []Pair{}
	}
	eAll, lAll := earlier.hashes(), later.hashes()
	var pairs []Pair
	measure := func(side string, files []*File, other *Fingerprint, otherAll []uint64) {
		for _, f := range files {
			p := Pair{Side: side, Path: f.Path, Shared: intersect(f.Hashes, otherAll), Total: len(f.Hashes)}
			best := -1
			for i := range other.Files {
				if n := intersect(f.Hashes, other.Files[i].Hashes); n > best {
					best, p.Partner = n, other.Files[i].Path
				}
			}
			pairs = append(pairs, p)
		}
	}
	measure("later", ls, earlier, eAll)
	measure("earlier", es, later, lAll)
	sort.SliceStable(pairs, func(i, j int) bool {
		if pairs[i].Side != pairs[j].Side {
			return pairs[i].Side == "later"
		}
		return pairs[i].Path < pairs[j].Path
	})
	return pairs
}

// Proposal is one entry of a census, in finalized chain order.
type Proposal struct {
	ID        string // how the census names it (the content hash, say)
	Hotkey    string
	Namespace string // the target (namespace) it competes in
	Print     *Fingerprint
}

// Finding is a census answer for one proposal.
type Finding struct {
	ID string
	// CopyOf is the ID of the earliest proposal this one copies; empty
	// when it copies none.
	CopyOf string
	Rule   string
	Reason string
}

// Census names, for each proposal, the earliest earlier proposal it
// copies. Only proposals of other hotkeys in the same namespace count:
// a miner resubmitting its own work is not copying, and two targets do
// not compete.
func Census(proposals []Proposal) []Finding {
	out := make([]Finding, len(proposals))
	for i, p := range proposals {
		out[i].ID = p.ID
		for j := 0; j < i; j++ {
			e := proposals[j]
			if e.Hotkey == p.Hotkey || e.Namespace != p.Namespace {
				continue
			}
			if v := Compare(e.Print, p.Print); v.Copy {
				out[i].CopyOf, out[i].Rule, out[i].Reason = e.ID, v.Rule, v.Reason
				break
			}
		}
	}
	return out
}
