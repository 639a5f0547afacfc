package canonjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Marshal returns the canonical JSON encoding of v.
//
// v may be built from nil, bool, string, any Go integer type, *big.Int,
// json.Number holding an integer, map[string]T, slices and arrays, pointers
// and interfaces to those, and structs (field names and omitempty follow
// encoding/json tags). Types implementing json.Marshaler are encoded through
// their JSON text, which is parsed strictly. Floats, non-string map keys,
// invalid UTF-8 and other values outside the universe are rejected with an
// error naming the JSON path of the offending value.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeValue(&buf, reflect.ValueOf(v), "$"); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PathError reports a value outside the canonical universe, or malformed
// input, at a JSON path such as $.payload.files[3].size.
type PathError struct {
	Path   string
	Reason string
	// Err, when set, is the limit the value broke (ErrTooLarge,
	// ErrTooDeep, ErrNumberTooLong), for errors.Is.
	Err error
}

func (e *PathError) Error() string { return e.Path + ": " + e.Reason }

func (e *PathError) Unwrap() error { return e.Err }

// writeBigInt writes n in decimal, refusing more than MaxNumberDigits
// digits before converting: the conversion is superlinear in the length
// and Python refuses such integers.
func writeBigInt(buf *bytes.Buffer, n *big.Int, path string) error {
	// A number of d decimal digits has at most ceil(d*log2(10)) bits.
	if n.BitLen() > MaxNumberDigits*3322/1000+4 {
		return numberTooLong(path)
	}
	text := n.String()
	if len(text)-boolInt(n.Sign() < 0) > MaxNumberDigits {
		return numberTooLong(path)
	}
	buf.WriteString(text)
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func numberTooLong(path string) error {
	return &PathError{Path: path, Reason: fmt.Sprintf("%v: an integer has at most %d digits", ErrNumberTooLong, MaxNumberDigits), Err: ErrNumberTooLong}
}

var (
	bigIntType        = reflect.TypeOf(big.Int{})
	jsonNumberType    = reflect.TypeOf(json.Number(""))
	rawMessageType    = reflect.TypeOf(json.RawMessage(nil))
	jsonMarshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	textMarshalerType = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
)

func encodeValue(buf *bytes.Buffer, v reflect.Value, path string) error {
	if !v.IsValid() {
		buf.WriteString("null")
		return nil
	}
	t := v.Type()
	switch {
	case t == rawMessageType:
		return encodeJSONText(buf, v.Bytes(), path)
	case t == jsonNumberType:
		return encodeNumberText(buf, v.String(), path)
	case t == bigIntType:
		n := v.Interface().(big.Int)
		return writeBigInt(buf, &n, path)
	case t.Kind() == reflect.Pointer && t.Elem() == bigIntType:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return writeBigInt(buf, v.Interface().(*big.Int), path)
	case t.Implements(jsonMarshalerType) && !(t.Kind() == reflect.Pointer && v.IsNil()):
		text, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return &PathError{Path: path, Reason: fmt.Sprintf("MarshalJSON: %v", err)}
		}
		return encodeJSONText(buf, text, path)
	case t.Implements(textMarshalerType) && !(t.Kind() == reflect.Pointer && v.IsNil()):
		text, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return &PathError{Path: path, Reason: fmt.Sprintf("MarshalText: %v", err)}
		}
		return encodeString(buf, string(text), path)
	}

	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		buf.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		return &PathError{Path: path, Reason: fmt.Sprintf("float %v is not allowed in an identity (carry it as a canonical decimal string)", v.Float())}
	case reflect.String:
		return encodeString(buf, v.String(), path)
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return encodeValue(buf, v.Elem(), path)
	case reflect.Map:
		return encodeMap(buf, v, path)
	case reflect.Slice:
		if v.IsNil() {
			// A nil slice is an empty array: identities never distinguish
			// "absent list" from "empty list" through nil-ness.
			buf.WriteString("[]")
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return &PathError{Path: path, Reason: "bytes are not allowed in an identity (carry them as hex or base64 strings)"}
		}
		return encodeArray(buf, v, path)
	case reflect.Array:
		return encodeArray(buf, v, path)
	case reflect.Struct:
		return encodeStruct(buf, v, path)
	default:
		return &PathError{Path: path, Reason: fmt.Sprintf("a %s is not allowed in an identity", t)}
	}
	return nil
}

func encodeArray(buf *bytes.Buffer, v reflect.Value, path string) error {
	buf.WriteByte('[')
	for i := 0; i < v.Len(); i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := encodeValue(buf, v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	buf.WriteByte(']')
	return nil
}

func encodeMap(buf *bytes.Buffer, v reflect.Value, path string) error {
	if v.Type().Key().Kind() != reflect.String {
		return &PathError{Path: path, Reason: fmt.Sprintf("object keys must be strings, not %s", v.Type().Key())}
	}
	if v.IsNil() {
		buf.WriteString("null")
		return nil
	}
	keys := make([]string, 0, v.Len())
	values := make(map[string]reflect.Value, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		k := iter.Key().String()
		keys = append(keys, k)
		values[k] = iter.Value()
	}
	return writeObject(buf, keys, func(k string) reflect.Value { return values[k] }, path)
}

type structField struct {
	name      string
	index     []int
	omitEmpty bool
}

func encodeStruct(buf *bytes.Buffer, v reflect.Value, path string) error {
	fields := structFields(v.Type())
	keys := make([]string, 0, len(fields))
	byName := make(map[string]reflect.Value, len(fields))
	for _, f := range fields {
		fv, ok := fieldByIndex(v, f.index)
		if !ok {
			continue
		}
		if f.omitEmpty && isEmptyValue(fv) {
			continue
		}
		keys = append(keys, f.name)
		byName[f.name] = fv
	}
	return writeObject(buf, keys, func(k string) reflect.Value { return byName[k] }, path)
}

// writeObject writes keys in code-point order, which for valid UTF-8 is the
// same as Go's byte order of strings and Python's sort of str keys.
func writeObject(buf *bytes.Buffer, keys []string, value func(string) reflect.Value, path string) error {
	sort.Strings(keys)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			if keys[i-1] == k {
				return &PathError{Path: path, Reason: fmt.Sprintf("duplicate key %q", k)}
			}
			buf.WriteByte(',')
		}
		childPath := childPath(path, k)
		if err := encodeString(buf, k, childPath); err != nil {
			return err
		}
		buf.WriteByte(':')
		if err := encodeValue(buf, value(k), childPath); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

func childPath(path, key string) string {
	if isSimpleKey(key) {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func isSimpleKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func structFields(t reflect.Type) []structField {
	var out []structField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for _, inner := range structFields(ft) {
					inner.index = append([]int{i}, inner.index...)
					out = append(out, inner)
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, structField{
			name:      name,
			index:     []int{i},
			omitEmpty: strings.Contains(","+opts+",", ",omitempty,"),
		})
	}
	return out
}

func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// encodeString writes s with Python's json escaping (see AppendQuoted),
// refusing invalid UTF-8.
func encodeString(buf *bytes.Buffer, s, path string) error {
	if !utf8.ValidString(s) {
		return &PathError{Path: path, Reason: "string is not valid UTF-8"}
	}
	buf.Write(AppendQuoted(buf.AvailableBuffer(), s))
	return nil
}

// AppendQuoted appends s, quoted with Python's json escaping under
// ensure_ascii=False, to dst: only ", \ and the C0 controls are escaped;
// \b \f \n \r \t use short forms, the other controls \u00XX in lowercase
// hex; everything else is raw. s must be valid UTF-8.
func AppendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, `\"`...)
		case '\\':
			dst = append(dst, `\\`...)
		case '\b':
			dst = append(dst, `\b`...)
		case '\f':
			dst = append(dst, `\f`...)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, `\u00`...)
			dst = append(dst, hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func encodeNumberText(buf *bytes.Buffer, text, path string) error {
	n, err := parseInteger(text)
	if err != nil {
		return &PathError{Path: path, Reason: err.Error(), Err: errors.Unwrap(err)}
	}
	buf.WriteString(n.String())
	return nil
}

func encodeJSONText(buf *bytes.Buffer, text []byte, path string) error {
	v, err := parseAt(text, path)
	if err != nil {
		return err
	}
	return encodeValue(buf, reflect.ValueOf(v), path)
}
