package enginecli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
)

// jsonFormatVersion is the format_version of every --json document that
// does not carry its own.
const jsonFormatVersion = 1

// WriteJSON is the one writer of --json output. Every document is one
// JSON object on stdout, indented, with format_version first when the
// value does not version itself (a document with its own format_version,
// or the evaluator's report, whose "schema" names it because the same
// bytes are stored as evidence, keeps its own), no HTML escaping (so "<stdin>" and "a->b" read as
// written), and empty arrays instead of null, so consumers never branch
// on a missing list.
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(nonNullSlices(reflect.ValueOf(v)).Interface()); err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	doc := bytes.TrimSpace(buf.Bytes())
	if len(doc) == 0 || doc[0] != '{' {
		return fmt.Errorf("encode JSON output: a %T is not a JSON object", v)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(doc, &keys); err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	_, versioned := keys["format_version"]
	_, schema := keys["schema"]
	if !versioned && !schema {
		rest := bytes.TrimSpace(doc[1:])
		head := fmt.Sprintf(`{"format_version":%d`, jsonFormatVersion)
		if rest[0] != '}' {
			head += ","
		}
		doc = append([]byte(head), rest...)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

var jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

// nonNullSlices returns v with every nil slice it reaches through
// exported fields, pointers, interfaces, maps and slices replaced by an
// empty one. It copies what it changes and never writes through the
// caller's pointers. Values that marshal themselves are left alone: their
// encoding is their own.
func nonNullSlices(v reflect.Value) reflect.Value {
	if !v.IsValid() {
		return v
	}
	if v.Type().Implements(jsonMarshaler) && v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface {
		return v
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Type().Implements(jsonMarshaler) {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(nonNullSlices(v.Elem()))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		inner := nonNullSlices(v.Elem())
		out := reflect.New(v.Type()).Elem()
		out.Set(inner)
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			out.Field(i).Set(nonNullSlices(v.Field(i)))
		}
		return out
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v // []byte encodes as a base64 string
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(nonNullSlices(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out.SetMapIndex(iter.Key(), nonNullSlices(iter.Value()))
		}
		return out
	}
	return v
}
