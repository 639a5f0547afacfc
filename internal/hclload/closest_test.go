package hclload

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"norm.rmsnorm", "activation.silu_and_mul", "moe.fused_experts"}
	cases := []struct {
		given, want string
		max         int
		ok          bool
	}{
		{"norm.rmsnrom", "norm.rmsnorm", 4, true},
		{"activation.silu_and_mull", "activation.silu_and_mul", 4, true},
		{"attention.decode", "", 4, false},
		{"norm.rmsnorm", "norm.rmsnorm", 1, true},
		{"norm.rmsnorx", "", 1, false},
	}
	for _, c := range cases {
		got, ok := Closest(c.given, known, c.max)
		if got != c.want || ok != c.ok {
			t.Errorf("Closest(%q, %d) = %q, %v; want %q, %v", c.given, c.max, got, ok, c.want, c.ok)
		}
	}
}
