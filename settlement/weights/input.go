package weights

import (
	"fmt"

	"github.com/cacheon/engine/internal/identity"
)

// Claims is a claims document: the standing and discovery claims a
// validator's ledger holds, and optionally the registered arenas with
// their active entries.
type Claims struct {
	Standing  []StandingClaim
	Discovery []DiscoveryClaim
	// Arenas, when not nil, is the authority the standing claims are
	// checked against: every registered arena and its active entries. When
	// nil, the arenas are those the standing claims name and each arena's
	// active targets are those it has claims for.
	Arenas *Arenas
}

// Arenas is the list of registered arenas and, for each, the entries of
// its current evaluation stack that reward a crown.
type Arenas struct {
	List []Arena
}

// Arena is one registered arena and its active entries.
type Arena struct {
	Arena   identity.Digest
	Targets []ActiveTarget
}

// ActiveTarget is one active entry of an arena's evaluation stack: the
// crowned contribution of a target under the target's current spec.
type ActiveTarget struct {
	TargetID     string
	TargetSpec   identity.Digest
	Contribution identity.Digest
}

// ParseClaims reads a claims document:
//
//	{"standing": [STANDING, ...], "discovery": [DISCOVERY, ...],
//	 "arenas": [{"arena_digest": D, "targets": [{"target_id": T,
//	   "target_spec_digest": D, "contribution_digest": D}, ...]}, ...]}
//
// where STANDING and DISCOVERY are claim projections (upstream's field
// names, exactly those fields). "standing" and "discovery" are required
// (either may be empty); "arenas" is optional.
func ParseClaims(data []byte) (Claims, error) {
	r := reader{class: ErrClaim}
	v, err := r.parse(data)
	if err != nil {
		return Claims{}, err
	}
	m, err := r.object(v, "", []string{"discovery", "standing"}, "arenas")
	if err != nil {
		return Claims{}, err
	}
	var c Claims
	rows, err := r.array(m["standing"], "standing")
	if err != nil {
		return Claims{}, err
	}
	c.Standing = make([]StandingClaim, len(rows))
	for i, row := range rows {
		if c.Standing[i], err = r.standing(row, fmt.Sprintf("standing[%d]", i)); err != nil {
			return Claims{}, err
		}
	}
	if rows, err = r.array(m["discovery"], "discovery"); err != nil {
		return Claims{}, err
	}
	c.Discovery = make([]DiscoveryClaim, len(rows))
	for i, row := range rows {
		if c.Discovery[i], err = r.discovery(row, fmt.Sprintf("discovery[%d]", i)); err != nil {
			return Claims{}, err
		}
	}
	if a, ok := m["arenas"]; ok {
		if c.Arenas, err = r.arenas(a); err != nil {
			return Claims{}, err
		}
	}
	return c, nil
}

// ParseStandingClaim reads one standing claim projection.
func ParseStandingClaim(data []byte) (StandingClaim, error) {
	r := reader{class: ErrClaim}
	v, err := r.parse(data)
	if err != nil {
		return StandingClaim{}, err
	}
	return r.standing(v, "")
}

// ParseDiscoveryClaim reads one discovery claim projection.
func ParseDiscoveryClaim(data []byte) (DiscoveryClaim, error) {
	r := reader{class: ErrClaim}
	v, err := r.parse(data)
	if err != nil {
		return DiscoveryClaim{}, err
	}
	return r.discovery(v, "")
}

func (r reader) standing(v any, where string) (StandingClaim, error) {
	m, err := r.object(v, where, standingFields)
	if err != nil {
		return StandingClaim{}, err
	}
	var c StandingClaim
	for _, d := range []struct {
		field string
		dst   *identity.Digest
	}{{"arena_digest", &c.Arena}, {"target_spec_digest", &c.TargetSpec}, {"contribution_digest", &c.Contribution}, {"retained_evidence_digest", &c.RetainedEvidence}} {
		if *d.dst, err = r.digest(m, where, d.field); err != nil {
			return StandingClaim{}, err
		}
	}
	if c.TargetID, err = r.string(m, where, "target_id"); err != nil {
		return StandingClaim{}, err
	}
	if c.Hotkey, err = r.hotkey(m, where, "hotkey"); err != nil {
		return StandingClaim{}, err
	}
	if c.SpeedupPPM, err = r.uint(m, where, "speedup_ppm", speedupUnit+1); err != nil {
		return StandingClaim{}, err
	}
	if c.CrownedBlock, err = r.uint(m, where, "crowned_block", 0); err != nil {
		return StandingClaim{}, err
	}
	return c, c.Validate(where)
}

func (r reader) discovery(v any, where string) (DiscoveryClaim, error) {
	m, err := r.object(v, where, discoveryFields)
	if err != nil {
		return DiscoveryClaim{}, err
	}
	var d DiscoveryClaim
	if d.Proposal, err = r.digest(m, where, "proposal_digest"); err != nil {
		return DiscoveryClaim{}, err
	}
	if d.RetainedEvidence, err = r.digest(m, where, "retained_evidence_digest"); err != nil {
		return DiscoveryClaim{}, err
	}
	if d.Hotkey, err = r.hotkey(m, where, "hotkey"); err != nil {
		return DiscoveryClaim{}, err
	}
	if d.BountyUnits, err = r.uint(m, where, "bounty_units", 1); err != nil {
		return DiscoveryClaim{}, err
	}
	if d.AwardedBlock, err = r.uint(m, where, "awarded_block", 0); err != nil {
		return DiscoveryClaim{}, err
	}
	return d, d.Validate(where)
}

func (r reader) arenas(v any) (*Arenas, error) {
	rows, err := r.array(v, "arenas")
	if err != nil {
		return nil, err
	}
	out := &Arenas{List: make([]Arena, len(rows))}
	for i, row := range rows {
		where := fmt.Sprintf("arenas[%d]", i)
		m, err := r.object(row, where, []string{"arena_digest", "targets"})
		if err != nil {
			return nil, err
		}
		a := &out.List[i]
		if a.Arena, err = r.digest(m, where, "arena_digest"); err != nil {
			return nil, err
		}
		targets, err := r.array(m["targets"], where+".targets")
		if err != nil {
			return nil, err
		}
		a.Targets = make([]ActiveTarget, len(targets))
		for j, t := range targets {
			at := fmt.Sprintf("%s.targets[%d]", where, j)
			tm, err := r.object(t, at, []string{"contribution_digest", "target_id", "target_spec_digest"})
			if err != nil {
				return nil, err
			}
			e := &a.Targets[j]
			if e.TargetID, err = r.string(tm, at, "target_id"); err != nil {
				return nil, err
			}
			if e.TargetSpec, err = r.digest(tm, at, "target_spec_digest"); err != nil {
				return nil, err
			}
			if e.Contribution, err = r.digest(tm, at, "contribution_digest"); err != nil {
				return nil, err
			}
		}
	}
	return out, out.Validate()
}

// Validate checks the arena list: no arena twice, no target twice in one
// arena, no empty target id, well-formed digests.
func (a *Arenas) Validate() error {
	seen := map[identity.Digest]bool{}
	for i, arena := range a.List {
		where := fmt.Sprintf("arenas[%d]", i)
		if err := checkDigestValue(arena.Arena); err != nil {
			return &FieldError{Class: ErrClaim, Where: where + ".arena_digest", Reason: err.Error()}
		}
		if seen[arena.Arena] {
			return &FieldError{Class: ErrClaim, Where: where + ".arena_digest", Reason: fmt.Sprintf("arena %s is listed twice", arena.Arena)}
		}
		seen[arena.Arena] = true
		targets := map[string]bool{}
		for j, t := range arena.Targets {
			at := fmt.Sprintf("%s.targets[%d]", where, j)
			if t.TargetID == "" {
				return &FieldError{Class: ErrClaim, Where: at + ".target_id", Reason: "empty"}
			}
			if targets[t.TargetID] {
				return &FieldError{Class: ErrClaim, Where: at + ".target_id", Reason: fmt.Sprintf("target %q is listed twice", t.TargetID)}
			}
			targets[t.TargetID] = true
			if err := checkDigestValue(t.TargetSpec); err != nil {
				return &FieldError{Class: ErrClaim, Where: at + ".target_spec_digest", Reason: err.Error()}
			}
			if err := checkDigestValue(t.Contribution); err != nil {
				return &FieldError{Class: ErrClaim, Where: at + ".contribution_digest", Reason: err.Error()}
			}
		}
	}
	return nil
}

// ParseMetagraph reads a metagraph document: a JSON array of the hotkeys
// registered at the projection block, each once, in any order.
func ParseMetagraph(data []byte) ([]string, error) {
	r := reader{class: ErrClaim}
	v, err := r.parse(data)
	if err != nil {
		return nil, err
	}
	rows, err := r.array(v, "metagraph")
	if err != nil {
		return nil, err
	}
	members := make([]string, len(rows))
	for i, row := range rows {
		s, ok := row.(string)
		if !ok {
			return nil, r.fail(fmt.Sprintf("metagraph[%d]", i), "is %s, want a hotkey string", kind(row))
		}
		members[i] = s
	}
	return members, checkMetagraph(members)
}

func checkMetagraph(members []string) error {
	if len(members) == 0 {
		return &FieldError{Class: ErrClaim, Where: "metagraph", Reason: "empty: no hotkey is registered"}
	}
	seen := make(map[string]bool, len(members))
	for i, h := range members {
		where := fmt.Sprintf("metagraph[%d]", i)
		if err := checkHotkey(h); err != nil {
			return &FieldError{Class: ErrClaim, Where: where, Reason: err.Error()}
		}
		if seen[h] {
			return &FieldError{Class: ErrClaim, Where: where, Reason: fmt.Sprintf("hotkey %q is listed twice", h)}
		}
		seen[h] = true
	}
	return nil
}

// Projection is the claims document ParseClaims reads; "arenas" only when
// the document has an arena list.
func (c Claims) Projection() map[string]any {
	standing := make([]any, len(c.Standing))
	for i, s := range c.Standing {
		standing[i] = s.Projection()
	}
	discovery := make([]any, len(c.Discovery))
	for i, d := range c.Discovery {
		discovery[i] = d.Projection()
	}
	doc := map[string]any{"standing": standing, "discovery": discovery}
	if c.Arenas != nil {
		arenas := make([]any, len(c.Arenas.List))
		for i, a := range c.Arenas.List {
			targets := make([]any, len(a.Targets))
			for j, t := range a.Targets {
				targets[j] = map[string]any{"target_id": t.TargetID, "target_spec_digest": t.TargetSpec, "contribution_digest": t.Contribution}
			}
			arenas[i] = map[string]any{"arena_digest": a.Arena, "targets": targets}
		}
		doc["arenas"] = arenas
	}
	return doc
}
