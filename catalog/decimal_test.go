package catalog

import (
	"math/big"
	"testing"
)

func TestParseDecimalCanonicalForm(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"},
		{"0.0", "0"},
		{"000", "0"},
		{"-0", "0"},
		{"-0.000", "0"},
		{"1", "1"},
		{"1.0", "1"},
		{"1.50", "1.5"},
		{"0.020", "0.02"},
		{"0.00001", "0.00001"},
		{"00.5", "0.5"},
		{"100", "100"},
		{"100.000", "100"},
		{"-2.50", "-2.5"},
		{"0.99", "0.99"},
		{"123456789012345678901234567890.000000000000000000001", "123456789012345678901234567890.000000000000000000001"},
	}
	for _, tt := range tests {
		d, err := ParseDecimal(tt.in)
		if err != nil {
			t.Errorf("ParseDecimal(%q): %v", tt.in, err)
			continue
		}
		if got := d.String(); got != tt.want {
			t.Errorf("ParseDecimal(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseDecimalRejectsFloatsAndGarbage(t *testing.T) {
	for _, in := range []string{
		"", "-", ".", ".5", "5.", "1e-5", "1E5", "+1", " 1", "1 ", "0x10", "NaN", "Inf", "-Inf",
		"1,5", "1.2.3", "--1", "½", "١", "0.1f",
	} {
		if d, err := ParseDecimal(in); err == nil {
			t.Errorf("ParseDecimal(%q) = %q, want an error", in, d)
		}
	}
}

func TestDecimalZeroValueIsZero(t *testing.T) {
	var d Decimal
	if d.String() != "0" || !d.IsZero() || d.Cmp(MustDecimal("0.000")) != 0 {
		t.Errorf("zero Decimal = %q, want \"0\"", d)
	}
}

func TestDecimalCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"0.99", "1", -1},
		{"1", "1.000", 0},
		{"0.875", "0.9", -1},
		{"-0.5", "0", -1},
		{"10", "9.99999", 1},
	}
	for _, tt := range tests {
		if got := MustDecimal(tt.a).Cmp(MustDecimal(tt.b)); got != tt.want {
			t.Errorf("Cmp(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestDecimalTextRoundTrip(t *testing.T) {
	var d Decimal
	if err := d.UnmarshalText([]byte("0.0300")); err != nil {
		t.Fatal(err)
	}
	b, _ := d.MarshalText()
	if string(b) != "0.03" {
		t.Errorf("MarshalText = %q, want 0.03", b)
	}
	if err := d.UnmarshalText([]byte("3e-2")); err == nil {
		t.Error("UnmarshalText accepted an exponent")
	}
}

// FuzzParseDecimal checks that canonical forms are fixed points and keep
// the value.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0", "0.020", "-1.50", "1e5", "007.700", ".5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDecimal(s)
		if err != nil {
			return
		}
		again, err := ParseDecimal(d.String())
		if err != nil || again.String() != d.String() {
			t.Fatalf("canonical %q of %q does not reparse to itself: %q, %v", d, s, again, err)
		}
		want, ok := new(big.Rat).SetString(s)
		if !ok || want.Cmp(d.Rat()) != 0 {
			t.Fatalf("ParseDecimal(%q) = %s changes the value", s, d)
		}
	})
}
