package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/canonjson"
)

// MaxMetadataBytes bounds one op metadata document.
const MaxMetadataBytes = 1 << 20

// Metadata is one op's parsed eligibility metadata: the legacy top-level
// keys and the normative capabilities object. Other keys (notes, op,
// regime, …) are descriptive and kept only in Raw.
type Metadata struct {
	Path          string
	Raw           map[string]any // the whole document; numbers are json.Number
	Dtypes        []string       // canonical spellings, sorted, deduplicated
	Architectures []string
	Quant         []string
	GraphSafe     bool
	MaxLastDim    *big.Int
	MinNumTokens  *big.Int
	MaxNumTokens  *big.Int
	Capabilities  Domain
}

// Domain is a conjunction of capability predicates sorted by field.
type Domain []Predicate

// Predicate constrains one field to allowed values or an inclusive range.
// Allowed values are strings, bools or *big.Int; Min and Max are nil when
// unbounded.
type Predicate struct {
	Field   string
	Allowed []any
	Min     *big.Int
	Max     *big.Int
}

// Capability field vocabulary (validator-owned). Numeric fields take
// non-negative integers and may use ranges; context fields take strings.
var numericFields = map[string]bool{
	"alignment": true, "batch_size": true, "block_size": true, "ep_size": true,
	"exp_tokens": true, "head_dim": true, "hidden_dim": true, "intermediate_dim": true,
	"init_blocks": true, "kv_len": true, "last_dim": true, "local_blocks": true,
	"num_experts": true, "num_kv_heads": true, "num_q_heads": true, "num_tokens": true,
	"page_size": true, "q_len": true, "q_block_size": true, "top_k": true,
	"tp_size": true, "world_size": true,
}

var contextFields = map[string]bool{
	"architecture": true, "dtype": true, "graph_mode": true, "layout": true,
	"model": true, "phase": true, "quant": true, "runtime": true,
}

// IsNumericField reports whether a capability field is numeric.
func IsNumericField(f string) bool { return numericFields[f] }

var fieldAliases = map[string]string{
	"arch": "architecture", "dtype_name": "dtype", "ep": "ep_size", "tp": "tp_size",
	"world": "world_size", "worldsize": "world_size",
}

var fieldPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// CanonicalField normalizes a capability field name (case, dashes, aliases).
func CanonicalField(name string) (string, error) {
	f := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	if a, ok := fieldAliases[f]; ok {
		f = a
	}
	if !fieldPattern.MatchString(f) {
		return "", fmt.Errorf("invalid capability field name %q", name)
	}
	return f, nil
}

var (
	dtypeAliases = map[string]string{
		"bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
		"torch.bfloat16": "bfloat16", "torch.float16": "float16", "torch.float32": "float32",
	}
	graphModeAliases = map[string]string{
		"capture": "cuda_graph", "capturing": "cuda_graph", "cuda-graph": "cuda_graph",
		"graph": "cuda_graph", "graphs_on": "cuda_graph", "on": "cuda_graph", "replay": "cuda_graph",
		"graphs_off": "eager", "off": "eager",
	}
	phaseAliases = map[string]string{"extend": "prefill"}
	quantAliases = map[string]string{"none": "dense", "unquantized": "dense"}
)

// CanonicalText normalizes a context value: trimmed, and except for model
// names lowercased with dashes as underscores and known aliases resolved.
func CanonicalText(field, value string) (string, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return "", fmt.Errorf("%s must not be empty", field)
	}
	if field == "model" {
		return v, nil
	}
	token := strings.ReplaceAll(strings.ToLower(v), "-", "_")
	switch field {
	case "dtype":
		if a, ok := dtypeAliases[strings.ToLower(v)]; ok {
			return a, nil
		}
	case "architecture":
		if strings.HasPrefix(token, "sm_") {
			return "sm" + token[3:], nil
		}
	case "graph_mode":
		if a, ok := graphModeAliases[token]; ok {
			return a, nil
		}
	case "phase":
		if a, ok := phaseAliases[token]; ok {
			return a, nil
		}
	case "quant":
		if a, ok := quantAliases[token]; ok {
			return a, nil
		}
	}
	return token, nil
}

// canonicalValue type-checks and normalizes one predicate value.
func canonicalValue(field string, v any) (any, error) {
	if numericFields[field] {
		n, ok := jsonInt(v)
		if !ok {
			return nil, fmt.Errorf("%s must be an integer, got %s", field, jsonText(v))
		}
		if n.Sign() < 0 {
			return nil, fmt.Errorf("%s must be non-negative, got %s", field, n)
		}
		return n, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%s must be a string, got %s", field, jsonText(v))
	}
	return CanonicalText(field, s)
}

// MaxIntegerDigits bounds the digits of a metadata integer: Python's
// int() refuses longer decimal strings by default (sys.int_info
// .default_max_str_digits), and decimal conversion costs time quadratic
// in the digits.
const MaxIntegerDigits = 4300

// jsonInt returns v as an integer if it is a JSON number without fraction
// or exponent (Python's json decodes anything else to a float) and of at
// most MaxIntegerDigits digits.
func jsonInt(v any) (*big.Int, bool) {
	num, ok := v.(json.Number)
	if !ok || strings.ContainsAny(string(num), ".eE") || len(strings.TrimPrefix(string(num), "-")) > MaxIntegerDigits {
		return nil, false
	}
	n, ok := new(big.Int).SetString(string(num), 10)
	return n, ok
}

// maxQuotedValue bounds how much of a rejected value an error quotes.
const maxQuotedValue = 64

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if len(b) > maxQuotedValue {
		return fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(string(b[:maxQuotedValue]), ""), len(b))
	}
	return string(b)
}

// parseMetadata parses one metadata document (file is its bundle path,
// used in errors).
func parseMetadata(file string, data []byte) (*Metadata, error) {
	bad := func(key, format string, args ...any) error {
		return newError(ErrMetadata, file, key, format, args...)
	}
	if len(data) > MaxMetadataBytes {
		return nil, bad("", "metadata is %d bytes; at most %d are allowed", len(data), MaxMetadataBytes)
	}
	raw, err := decodeJSONObject(data)
	if err != nil {
		return nil, newError(ErrSyntax, file, "", "invalid JSON: %v", err)
	}
	md := &Metadata{Path: file, Raw: raw}
	strList := func(name, field string) ([]string, error) {
		v, present := raw[name]
		if !present {
			return nil, nil
		}
		arr, ok := v.([]any)
		if !ok {
			return nil, bad(name, "must be a list of strings")
		}
		if len(arr) > MaxPredicateValues {
			return nil, newError(ErrLimit, file, name, "has %d values; at most %d are allowed", len(arr), MaxPredicateValues)
		}
		set := map[string]bool{}
		for i, x := range arr {
			s, ok := x.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return nil, bad(fmt.Sprintf("%s[%d]", name, i), "must be a non-empty string")
			}
			if field != "" {
				c, err := CanonicalText(field, s)
				if err != nil {
					return nil, bad(fmt.Sprintf("%s[%d]", name, i), "%v", err)
				}
				s = c
			}
			set[s] = true
		}
		return sortedKeys(set), nil
	}
	if md.Dtypes, err = strList("dtypes", "dtype"); err != nil {
		return nil, err
	}
	if md.Architectures, err = strList("architectures", "architecture"); err != nil {
		return nil, err
	}
	if md.Quant, err = strList("quant", "quant"); err != nil {
		return nil, err
	}
	if v, present := raw["graph_safe"]; present {
		b, ok := v.(bool)
		if !ok {
			return nil, bad("graph_safe", "must be a boolean")
		}
		md.GraphSafe = b
	}
	for _, b := range []struct {
		name string
		dst  **big.Int
	}{{"max_last_dim", &md.MaxLastDim}, {"min_num_tokens", &md.MinNumTokens}, {"max_num_tokens", &md.MaxNumTokens}} {
		v, present := raw[b.name]
		if !present || v == nil {
			continue
		}
		n, ok := jsonInt(v)
		if !ok || n.Sign() < 0 {
			return nil, bad(b.name, "must be a non-negative integer, got %s", jsonText(v))
		}
		*b.dst = n
	}
	if md.MinNumTokens != nil && md.MaxNumTokens != nil && md.MinNumTokens.Cmp(md.MaxNumTokens) > 0 {
		return nil, bad("min_num_tokens", "%s exceeds max_num_tokens %s", md.MinNumTokens, md.MaxNumTokens)
	}
	if v, present := raw["capabilities"]; present && v != nil {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, bad("capabilities", "must be an object")
		}
		dom, err := parseDomain(obj)
		if err != nil {
			return nil, bad("capabilities", "%v", err)
		}
		md.Capabilities = dom
	}
	return md, nil
}

func parseDomain(obj map[string]any) (Domain, error) {
	seen := map[string]bool{}
	var dom Domain
	for _, rawField := range sortedKeys(boolSet(obj)) {
		field, err := CanonicalField(rawField)
		if err != nil {
			return nil, err
		}
		if !numericFields[field] && !contextFields[field] {
			return nil, fmt.Errorf("unsupported capability field %q", field)
		}
		if seen[field] {
			return nil, fmt.Errorf("duplicate canonical capability field %q", field)
		}
		seen[field] = true
		p, err := parsePredicate(field, obj[rawField])
		if err != nil {
			return nil, err
		}
		dom = append(dom, p)
	}
	sort.Slice(dom, func(i, j int) bool { return dom[i].Field < dom[j].Field })
	return dom, nil
}

func parsePredicate(field string, raw any) (Predicate, error) {
	var spec map[string]any
	switch v := raw.(type) {
	case map[string]any:
		spec = v
	case []any:
		spec = map[string]any{"one_of": v}
	default:
		spec = map[string]any{"exact": v}
	}
	for k := range spec {
		if k != "exact" && k != "one_of" && k != "min" && k != "max" {
			return Predicate{}, fmt.Errorf("%s has unknown key %q", field, k)
		}
	}
	_, hasExact := spec["exact"]
	_, hasOneOf := spec["one_of"]
	_, hasMin := spec["min"]
	_, hasMax := spec["max"]
	hasAllowed, hasRange := hasExact || hasOneOf, hasMin || hasMax
	switch {
	case hasAllowed && hasRange:
		return Predicate{}, fmt.Errorf("%s cannot mix exact/one_of with min/max", field)
	case hasExact && hasOneOf:
		return Predicate{}, fmt.Errorf("%s cannot set both exact and one_of", field)
	case !hasAllowed && !hasRange:
		return Predicate{}, fmt.Errorf("%s has no predicate", field)
	}
	p := Predicate{Field: field}
	if hasAllowed {
		values := []any{spec["exact"]}
		if hasOneOf {
			arr, ok := spec["one_of"].([]any)
			if !ok || len(arr) == 0 {
				return Predicate{}, fmt.Errorf("%s.one_of must be a non-empty list", field)
			}
			if len(arr) > MaxPredicateValues {
				return Predicate{}, fmt.Errorf("%s.one_of has %d values; at most %d are allowed", field, len(arr), MaxPredicateValues)
			}
			values = arr
		}
		seen := make(map[string]bool, len(values))
		for _, v := range values {
			c, err := canonicalValue(field, v)
			if err != nil {
				return Predicate{}, fmt.Errorf("invalid %s: %v", field, err)
			}
			if k := valueKey(c); !seen[k] {
				seen[k] = true
				p.Allowed = append(p.Allowed, c)
			}
		}
		return p, nil
	}
	if !numericFields[field] {
		return Predicate{}, fmt.Errorf("%s is contextual and cannot use min/max", field)
	}
	for _, b := range []struct {
		key string
		dst **big.Int
	}{{"min", &p.Min}, {"max", &p.Max}} {
		v, ok := spec[b.key]
		if !ok {
			continue
		}
		c, err := canonicalValue(field, v)
		if err != nil {
			return Predicate{}, fmt.Errorf("invalid %s: %v", field, err)
		}
		*b.dst = c.(*big.Int)
	}
	if p.Min != nil && p.Max != nil && p.Min.Cmp(p.Max) > 0 {
		return Predicate{}, fmt.Errorf("%s has min %s greater than max %s", field, p.Min, p.Max)
	}
	return p, nil
}

// valueKey is a predicate value's identity as a map key: two values have
// one key exactly when they are equal (integers by value).
func valueKey(v any) string {
	switch x := v.(type) {
	case *big.Int:
		return "i" + x.String()
	case string:
		return "s" + x
	case bool:
		if x {
			return "b1"
		}
		return "b0"
	default:
		return fmt.Sprintf("%T:%v", v, v)
	}
}

// CanonicalProjection returns the metadata document the engine tree emits
// for this op: only the keys that decide eligibility, in canonical form.
// dtypes/architectures/quant are the canonical sorted sets, graph_safe
// appears only when true, the integer bounds only when set, and
// capabilities as {"exact"}, {"one_of"} or {"min","max"} per field.
func (md *Metadata) CanonicalProjection() map[string]any {
	out := map[string]any{}
	if len(md.Architectures) > 0 {
		out["architectures"] = md.Architectures
	}
	if len(md.Dtypes) > 0 {
		out["dtypes"] = md.Dtypes
	}
	if len(md.Quant) > 0 {
		out["quant"] = md.Quant
	}
	if md.GraphSafe {
		out["graph_safe"] = true
	}
	if md.MaxLastDim != nil {
		out["max_last_dim"] = md.MaxLastDim
	}
	if md.MinNumTokens != nil {
		out["min_num_tokens"] = md.MinNumTokens
	}
	if md.MaxNumTokens != nil {
		out["max_num_tokens"] = md.MaxNumTokens
	}
	if len(md.Capabilities) > 0 {
		caps := map[string]any{}
		for _, p := range md.Capabilities {
			switch {
			case len(p.Allowed) == 1:
				caps[p.Field] = map[string]any{"exact": p.Allowed[0]}
			case len(p.Allowed) > 1:
				caps[p.Field] = map[string]any{"one_of": sortedByCanonicalJSON(p.Allowed)}
			default:
				r := map[string]any{}
				if p.Min != nil {
					r["min"] = p.Min
				}
				if p.Max != nil {
					r["max"] = p.Max
				}
				caps[p.Field] = r
			}
		}
		out["capabilities"] = caps
	}
	return out
}

// CanonicalBytes renders the canonical projection as the engine tree
// writes it: JSON indented by two spaces, keys sorted, non-ASCII written
// raw, and a final newline (Python's json.dumps(indent=2, sort_keys=True,
// ensure_ascii=False) + "\n").
func (md *Metadata) CanonicalBytes() ([]byte, error) {
	var buf bytes.Buffer
	writeIndented(&buf, md.CanonicalProjection(), 0)
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// writeIndented renders the projection's value universe (maps, lists,
// strings, bools, *big.Int) exactly as Python's indented json.dumps does.
func writeIndented(buf *bytes.Buffer, v any, depth int) {
	pad := func(d int) { buf.WriteString(strings.Repeat("  ", d)) }
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			buf.WriteString("{}")
			return
		}
		keys := sortedKeys(boolSet(x))
		buf.WriteString("{\n")
		for i, k := range keys {
			pad(depth + 1)
			writePyString(buf, k)
			buf.WriteString(": ")
			writeIndented(buf, x[k], depth+1)
			if i < len(keys)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		pad(depth)
		buf.WriteByte('}')
	case []any:
		writeIndentedList(buf, len(x), func(i int) { writeIndented(buf, x[i], depth+1) }, depth)
	case []string:
		writeIndentedList(buf, len(x), func(i int) { writePyString(buf, x[i]) }, depth)
	case string:
		writePyString(buf, x)
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case *big.Int:
		buf.WriteString(x.String())
	case nil:
		buf.WriteString("null")
	default:
		panic(fmt.Sprintf("manifest: unexpected projection value %T", v))
	}
}

func writeIndentedList(buf *bytes.Buffer, n int, item func(int), depth int) {
	if n == 0 {
		buf.WriteString("[]")
		return
	}
	buf.WriteString("[\n")
	for i := 0; i < n; i++ {
		buf.WriteString(strings.Repeat("  ", depth+1))
		item(i)
		if i < n-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString(strings.Repeat("  ", depth))
	buf.WriteByte(']')
}

// writePyString writes s as Python's json module does with
// ensure_ascii=False (metadata strings come from parsed JSON, so they are
// valid UTF-8).
func writePyString(buf *bytes.Buffer, s string) {
	buf.Write(canonjson.AppendQuoted(buf.AvailableBuffer(), s))
}

// sortedByCanonicalJSON orders predicate values by their canonical JSON
// bytes, the order the engine tree emits them in.
func sortedByCanonicalJSON(values []any) []any {
	type keyed struct {
		key string
		v   any
	}
	rows := make([]keyed, len(values))
	for i, v := range values {
		b, err := canonjson.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("manifest: predicate value %v: %v", v, err))
		}
		rows[i] = keyed{string(b), v}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].key < rows[j].key })
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r.v
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boolSet(m map[string]any) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
