package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// decodeJSONObject decodes a metadata document: one JSON object whose
// numbers stay json.Number (metadata may carry descriptive floats that
// identities never see) and whose keys may not repeat at any depth.
func decodeJSONObject(data []byte) (map[string]any, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	d := &jsonDecoder{dec: dec}
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the top-level value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("must be a JSON object")
	}
	return obj, nil
}

// jsonDecoder decodes one document token by token. The path to the value
// being decoded is kept as a stack and spelled out only in an error, so
// a long key above a long array costs nothing per element.
type jsonDecoder struct {
	dec  *json.Decoder
	path []jsonStep
}

// jsonStep is one step of a JSON path: an object key or an array index.
type jsonStep struct {
	key   string
	index int // -1 for an object key
}

// maxPathSteps bounds the steps of a JSON path an error spells out.
const maxPathSteps = 16

// errorf prefixes an error with the JSON path of the current value.
func (d *jsonDecoder) errorf(format string, args ...any) error {
	var b strings.Builder
	b.WriteByte('$')
	steps := d.path
	if len(steps) > maxPathSteps {
		// A hostile document nests hundreds of levels; the innermost
		// steps say where.
		b.WriteString("…")
		steps = steps[len(steps)-maxPathSteps:]
	}
	for _, s := range steps {
		if s.index < 0 {
			b.WriteByte('.')
			if len(s.key) > maxQuotedValue {
				fmt.Fprintf(&b, "%s…", strings.ToValidUTF8(s.key[:maxQuotedValue], ""))
				continue
			}
			b.WriteString(s.key)
		} else {
			fmt.Fprintf(&b, "[%d]", s.index)
		}
	}
	return fmt.Errorf("%s: %w", b.String(), fmt.Errorf(format, args...))
}

func (d *jsonDecoder) value() (any, error) {
	if len(d.path) > MaxJSONDepth {
		return nil, d.errorf("nested deeper than %d levels", MaxJSONDepth)
	}
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.errorf("%w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for d.dec.More() {
				kt, err := d.dec.Token()
				if err != nil {
					return nil, d.errorf("%w", err)
				}
				key := kt.(string)
				if _, dup := obj[key]; dup {
					return nil, d.errorf("repeats key %q", key)
				}
				d.path = append(d.path, jsonStep{key: key, index: -1})
				v, err := d.value()
				if err != nil {
					return nil, err
				}
				d.path = d.path[:len(d.path)-1]
				obj[key] = v
			}
			if _, err := d.dec.Token(); err != nil {
				return nil, d.errorf("%w", err)
			}
			return obj, nil
		case '[':
			arr := []any{}
			for i := 0; d.dec.More(); i++ {
				d.path = append(d.path, jsonStep{index: i})
				v, err := d.value()
				if err != nil {
					return nil, err
				}
				d.path = d.path[:len(d.path)-1]
				arr = append(arr, v)
			}
			if _, err := d.dec.Token(); err != nil {
				return nil, d.errorf("%w", err)
			}
			return arr, nil
		}
		return nil, d.errorf("unexpected %v", t)
	default:
		return t, nil
	}
}
