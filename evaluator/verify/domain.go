package verify

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/cacheon/engine/kernels/bundle"
)

// admits reports whether an op row's eligibility domain admits a live
// call, and when it does not, which field excluded it. A field the domain
// constrains but the call lacks is a mismatch, never a wildcard.
func admits(e *bundle.Eligibility, live map[string]any) (bool, string) {
	str := func(field string) (string, bool) {
		v, ok := live[field].(string)
		return v, ok
	}
	if len(e.Dtypes) > 0 {
		if v, ok := str("dtype"); !ok || !containsString(e.Dtypes, v) {
			return false, fmt.Sprintf("dtype %s not in %s", live["dtype"], strings.Join(e.Dtypes, ","))
		}
	}
	if len(e.Architectures) > 0 {
		if v, ok := str("architecture"); !ok || !containsString(e.Architectures, v) {
			return false, fmt.Sprintf("architecture %v not in %s", live["architecture"], strings.Join(e.Architectures, ","))
		}
	}
	quant := e.Quant
	if len(quant) == 0 {
		quant = []string{"dense"}
	}
	if v, ok := str("quant"); !ok || !containsString(quant, v) {
		return false, fmt.Sprintf("quant %v not in %s", live["quant"], strings.Join(quant, ","))
	}
	if e.MaxLastDim != nil {
		if ok, why := inRange(live, "last_dim", nil, e.MaxLastDim); !ok {
			return false, why
		}
	}
	if e.MinNumTokens != nil || e.MaxNumTokens != nil {
		if ok, why := inRange(live, "num_tokens", e.MinNumTokens, e.MaxNumTokens); !ok {
			return false, why
		}
	}
	for _, p := range e.Capabilities {
		v, present := live[p.Field]
		if !present {
			return false, fmt.Sprintf("capability %s is not a field of this call", p.Field)
		}
		if p.Allowed != nil {
			if !allowed(p.Allowed, v) {
				return false, fmt.Sprintf("%s=%v not in the declared values", p.Field, v)
			}
			continue
		}
		if ok, why := inRange(live, p.Field, p.Min, p.Max); !ok {
			return false, why
		}
	}
	return true, ""
}

func inRange(live map[string]any, field string, min, max *big.Int) (bool, string) {
	n, ok := liveInt(live[field])
	if !ok {
		return false, fmt.Sprintf("%s is not a field of this call", field)
	}
	if min != nil && n.Cmp(min) < 0 {
		return false, fmt.Sprintf("%s=%s below the declared minimum %s", field, n, min)
	}
	if max != nil && n.Cmp(max) > 0 {
		return false, fmt.Sprintf("%s=%s above the declared maximum %s", field, n, max)
	}
	return true, ""
}

// liveInt reads an integer live field (json.Number from the plan, or a Go
// integer set by the controller).
func liveInt(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case json.Number:
		n, ok := new(big.Int).SetString(string(x), 10)
		return n, ok
	case int:
		return big.NewInt(int64(x)), true
	case int64:
		return big.NewInt(x), true
	case float64:
		if x != float64(int64(x)) {
			return nil, false
		}
		return big.NewInt(int64(x)), true
	}
	return nil, false
}

func allowed(values []any, v any) bool {
	if n, ok := liveInt(v); ok {
		for _, a := range values {
			if b, ok := a.(*big.Int); ok && b.Cmp(n) == 0 {
				return true
			}
		}
		return false
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	for _, a := range values {
		if t, ok := a.(string); ok && t == s {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
