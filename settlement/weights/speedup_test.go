package weights

import (
	"errors"
	"testing"
)

func TestSpeedupPPM(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want uint64
	}{
		{"1", 1_000_000},
		{"1.000001", 1_000_001},
		{"1.0000019999", 1_000_001},
		{"1.0734", 1_073_400},
		{"2.5", 2_500_000},
		{"0.999", 999_000},
		{"9223372036854.775807", MaxInt},
	} {
		got, err := SpeedupPPM(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("SpeedupPPM(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "1.", ".5", "-1.2", "+1.2", "1e3", "1.2E+1", " 1.2", "NaN", "Infinity", "9223372036854.775808"} {
		if _, err := SpeedupPPM(in); !errors.Is(err, ErrClaim) {
			t.Errorf("SpeedupPPM(%q): err %v, want ErrClaim", in, err)
		}
	}
}
