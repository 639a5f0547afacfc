package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ActiveRule names a rule an active target set must satisfy.
type ActiveRule string

// The active-set rules.
const (
	ActiveKnown        ActiveRule = "active-known-target"    // every active id is a registered target
	ActiveUnique       ActiveRule = "active-unique"          // no target is listed twice
	ActiveDisplacement ActiveRule = "active-displacement"    // no active target displaces another
	ActiveRequires     ActiveRule = "active-requires-active" // each active target's requirements are active
)

// ActiveSetError is one violation of an active-set rule.
type ActiveSetError struct {
	Rule    ActiveRule
	Targets []string // the targets involved, the offending one first
	Reason  string
}

func (e *ActiveSetError) Error() string {
	return fmt.Sprintf("active targets: %s (rule %s)", e.Reason, e.Rule)
}

// ValidateActive checks a set of targets that are active together, as
// in a stack: every id registered and listed once, no active target
// displacing another (directly or transitively), and every requirement of
// an active target active too (stock never satisfies a requirement). It
// returns every violation, joined; errors.As finds each *ActiveSetError.
func (c *Catalog) ValidateActive(ids []string) error {
	var errs []error
	seen := map[string]bool{}
	var active []string
	for _, id := range ids {
		switch {
		case seen[id]:
			errs = append(errs, &ActiveSetError{ActiveUnique, []string{id}, fmt.Sprintf("%q is listed twice", id)})
			continue
		case c.targets[id].ID == "":
			errs = append(errs, &ActiveSetError{ActiveKnown, []string{id},
				fmt.Sprintf("%q is not a registered target%s", id, suggest(id, c.targetIDs))})
		default:
			active = append(active, id)
		}
		seen[id] = true
	}
	slices.Sort(active)
	isActive := map[string]bool{}
	for _, id := range active {
		isActive[id] = true
	}
	for _, id := range active {
		for _, other := range sortedKeys(c.displaceClosure[id]) {
			if isActive[other] {
				errs = append(errs, &ActiveSetError{ActiveDisplacement, []string{id, other},
					fmt.Sprintf("%q displaces %q, so both cannot be active", id, other)})
			}
		}
		var missing []string
		for _, req := range sortedKeys(c.requiresClosure[id]) {
			if !isActive[req] {
				missing = append(missing, req)
			}
		}
		if len(missing) > 0 {
			errs = append(errs, &ActiveSetError{ActiveRequires, append([]string{id}, missing...),
				fmt.Sprintf("%q requires %s, which the stock engine does not satisfy: they must be active too", id, quoteList(missing))})
		}
	}
	return errors.Join(errs...)
}

// OrderedActiveTargets returns a valid active set in binding order: a
// topological order of the composition precedence restricted to the
// active targets, ties broken by id. The order in which a stack or a
// manifest lists targets never decides precedence.
func (c *Catalog) OrderedActiveTargets(ids []string) ([]string, error) {
	if err := c.ValidateActive(ids); err != nil {
		return nil, err
	}
	active := map[string]bool{}
	for _, id := range ids {
		active[id] = true
	}
	indegree := map[string]int{}
	next := map[string][]string{}
	for _, r := range c.rules {
		for i := 0; i+1 < len(r.Precedence); i++ {
			a, b := r.Precedence[i], r.Precedence[i+1]
			if active[a] && active[b] {
				next[a] = append(next[a], b)
				indegree[b]++
			}
		}
	}
	var ready []string
	for id := range active {
		if indegree[id] == 0 {
			ready = append(ready, id)
		}
	}
	out := make([]string, 0, len(active))
	for len(ready) > 0 {
		slices.Sort(ready)
		id := ready[0]
		ready = ready[1:]
		out = append(out, id)
		for _, n := range next[id] {
			if indegree[n]--; indegree[n] == 0 {
				ready = append(ready, n)
			}
		}
	}
	if len(out) != len(active) {
		// Validation rejects cyclic precedence, so a loaded catalog never
		// gets here; fail rather than return a partial order.
		var rest []string
		for id := range active {
			if !slices.Contains(out, id) {
				rest = append(rest, id)
			}
		}
		slices.Sort(rest)
		return nil, fmt.Errorf("active targets: composition precedence among %s has a cycle", strings.Join(rest, ", "))
	}
	return out, nil
}
