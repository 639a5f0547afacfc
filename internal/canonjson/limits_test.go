package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
)

func TestParseRefusesLongIntegers(t *testing.T) {
	max := strings.Repeat("9", MaxNumberDigits)
	for _, ok := range []string{max, "-" + max, `{"a":[` + max + `]}`} {
		if _, err := Parse([]byte(ok)); err != nil {
			t.Errorf("%d-digit integer refused: %v", MaxNumberDigits, err)
		}
	}
	for _, bad := range []string{max + "9", "-" + max + "9", `{"a":[1, ` + max + "0]}", strings.Repeat("1", 4_000_000)} {
		_, err := Parse([]byte(bad))
		if !errors.Is(err, ErrNumberTooLong) {
			t.Errorf("%d-byte integer: err = %v, want ErrNumberTooLong", len(bad), err)
		}
	}
	_, err := Parse([]byte("{\n \"a\": [1, " + max + "0]}"))
	if err == nil || !strings.Contains(err.Error(), "$.a[1]") || !strings.Contains(err.Error(), "line 2, column 11") {
		t.Errorf("error %v does not locate the number", err)
	}
}

// Refusing a long integer costs nothing per digit: the old parser built a
// big.Int of every literal (a 4M-digit one took 24 s), so it allocated
// well over the integer's 1.6 MB of bits.
func TestLongIntegerRefusedWithoutConversion(t *testing.T) {
	data := []byte(`{"n":` + strings.Repeat("7", 4_000_000) + "}")
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := Parse(data); !errors.Is(err, ErrNumberTooLong) {
			t.Fatal(err)
		}
	})
	if allocs > 50 {
		t.Fatalf("refusing a 4M-digit integer took %v allocations", allocs)
	}
}

// BenchmarkParseLongInteger: go test -run '^$' -bench ParseLongInteger ./internal/canonjson
func BenchmarkParseLongInteger(b *testing.B) {
	for _, digits := range []int{40_000, 400_000, 4_000_000} {
		data := []byte(strings.Repeat("7", digits))
		b.Run(fmt.Sprintf("digits=%d", digits), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Parse(data)
			}
		})
	}
}

func TestParseDepthLimit(t *testing.T) {
	nest := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	if _, err := Parse(nest(MaxDepth)); err != nil {
		t.Fatalf("depth %d refused: %v", MaxDepth, err)
	}
	for _, n := range []int{MaxDepth + 1, 1_000_000} {
		if _, err := Parse(nest(n)); !errors.Is(err, ErrTooDeep) {
			t.Errorf("depth %d: err = %v, want ErrTooDeep", n, err)
		}
	}
	if _, err := Parse([]byte(strings.Repeat(`{"a":`, MaxDepth+1))); !errors.Is(err, ErrTooDeep) {
		t.Errorf("objects: err = %v, want ErrTooDeep", err)
	}
}

func TestParseSizeLimit(t *testing.T) {
	data := bytes.Repeat([]byte(" "), MaxInputBytes+1)
	data[0] = '1'
	if _, err := Parse(data); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if _, err := Parse(data[:MaxInputBytes]); err != nil {
		t.Fatalf("input of MaxInputBytes refused: %v", err)
	}
}

// Marshal holds integers to the same bound, whether they come as big.Int
// values or as JSON number text.
func TestMarshalRefusesLongIntegers(t *testing.T) {
	max, _ := new(big.Int).SetString(strings.Repeat("9", MaxNumberDigits), 10)
	over := new(big.Int).Add(max, big.NewInt(1))
	neg := new(big.Int).Neg(max)
	for _, v := range []any{max, *max, neg, json.Number(max.String()), json.RawMessage("[" + neg.String() + "]")} {
		if _, err := Marshal(v); err != nil {
			t.Errorf("%T of %d digits refused: %v", v, MaxNumberDigits, err)
		}
	}
	huge := new(big.Int).Lsh(big.NewInt(1), 1<<24)
	for _, v := range []any{over, *over, new(big.Int).Neg(over), huge, json.Number(over.String()), json.RawMessage("[" + over.String() + "]")} {
		if _, err := Marshal(v); !errors.Is(err, ErrNumberTooLong) {
			t.Errorf("%T: err = %v, want ErrNumberTooLong", v, err)
		}
	}
}
