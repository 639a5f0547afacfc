package canonjson

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

func TestMarshalPythonEscaping(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain", "abc", `"abc"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other controls lowercase hex", "\x00\x01\x1f\x0b", `"\u0000\u0001\u001f\u000b"`},
		{"html characters stay raw", "<>&", `"<>&"`},
		{"DEL stays raw", "\x7f", "\"\x7f\""},
		{"line separators stay raw", "\u2028\u2029", "\"\u2028\u2029\""},
		{"non-ascii raw", "é漢😀", `"é漢😀"`},
		{"slash not escaped", "a/b", `"a/b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("Marshal(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestMarshalValues(t *testing.T) {
	huge, _ := new(big.Int).SetString("-98765432109876543210987654321", 10)
	type inner struct {
		Z string `json:"z"`
	}
	type embedded struct {
		E int `json:"e"`
	}
	type record struct {
		embedded
		B        bool     `json:"b"`
		A        []int    `json:"a"`
		Skipped  string   `json:"-"`
		Optional *string  `json:"optional,omitempty"`
		Empty    []string `json:"empty"`
		Inner    inner    `json:"inner"`
		NoTag    int
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"null", nil, `null`},
		{"bools", []any{true, false}, `[true,false]`},
		{"ints", []any{0, -1, int64(1) << 62, uint64(1) << 63}, `[0,-1,4611686018427387904,9223372036854775808]`},
		{"big int", huge, `-98765432109876543210987654321`},
		{"json number integer", json.Number("12"), `12`},
		{"sorted keys by code point", map[string]any{"é": 1, "z": 2, "a": 3, "B": 4}, `{"B":4,"a":3,"z":2,"é":1}`},
		{"nested", map[string]any{"b": []any{1, "é"}, "a": nil}, `{"a":null,"b":[1,"é"]}`},
		{"struct", record{embedded: embedded{E: 7}, B: true, A: []int{3, 1}, Inner: inner{Z: "q"}, NoTag: 5},
			`{"NoTag":5,"a":[3,1],"b":true,"e":7,"empty":[],"inner":{"z":"q"}}`},
		{"raw json", json.RawMessage(`{"y":1,"x":[2]}`), `{"x":[2],"y":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("Marshal = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMarshalRejects(t *testing.T) {
	tests := []struct {
		name     string
		in       any
		wantPath string
	}{
		{"float", map[string]any{"a": []any{1, 2.5}}, "$.a[1]"},
		{"float32", float32(1), "$"},
		{"integral float", 3.0, "$"},
		{"non-string key", map[int]int{1: 2}, "$"},
		{"invalid utf-8 value", map[string]any{"k": "\xff"}, "$.k"},
		{"invalid utf-8 key", map[string]any{"\xff": 1}, "$"},
		{"bytes", []byte("x"), "$"},
		{"channel", make(chan int), "$"},
		{"json number float", json.Number("1.5"), "$"},
		{"raw json float", json.RawMessage(`[1.0]`), "$[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Marshal(tc.in)
			if err == nil {
				t.Fatalf("Marshal(%#v) succeeded, want an error", tc.in)
			}
			if !strings.HasPrefix(err.Error(), tc.wantPath) {
				t.Fatalf("error %q does not start with path %s", err, tc.wantPath)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // substring of the error
	}{
		{"float", `{"a":1.0}`, "$.a: float 1.0"},
		{"exponent", `[1e5]`, "$[0]: float 1e5"},
		{"negative fraction", `-0.5`, "float -0.5"},
		{"NaN", `NaN`, "non-finite"},
		{"Infinity", `[Infinity]`, "non-finite"},
		{"duplicate key", `{"a":1,"a":2}`, `duplicate key "a"`},
		{"lone high surrogate", `"\ud800"`, "surrogate"},
		{"lone low surrogate", `"\udc00x"`, "surrogate"},
		{"invalid utf-8", "\"\xff\"", "UTF-8"},
		{"trailing data", `{} {}`, "after the top-level value"},
		{"leading zero", `01`, "leading zeros"},
		{"raw control", "\"a\nb\"", "must be escaped"},
		{"unterminated", `{"a":`, "end of input"},
		{"bad escape", `"\x"`, "invalid escape"},
		{"non-string key", `{1:2}`, "keys must be strings"},
		{"empty", ``, "end of input"},
		{"too deep", strings.Repeat("[", 600) + strings.Repeat("]", 600), "nesting deeper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want an error", tc.in)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) error %q does not mention %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestParseCanonicalizes(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{` { "b" : [ 1 , "\u00e9" ] , "a" : null } `, `{"a":null,"b":[1,"é"]}`},
		{`-0`, `0`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`"\ud83d\ude00\/\u0041"`, `"😀/A"`},
		{`"\u2028"`, "\"\u2028\""},
		{`[true,false,null,{}]`, `[true,false,null,{}]`},
	}
	for _, tc := range tests {
		v, err := Parse([]byte(tc.in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		got, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Fatalf("canonical(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParseErrorHasLineAndColumn(t *testing.T) {
	_, err := Parse([]byte("{\n  \"a\": 1.5\n}"))
	if err == nil || !strings.Contains(err.Error(), "line 2, column 8") {
		t.Fatalf("error %v lacks the location line 2, column 8", err)
	}
}
