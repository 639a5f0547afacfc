package speed

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPolicyValidateNamesTheField(t *testing.T) {
	cases := []struct {
		field string
		edit  func(*Policy)
	}{
		{"version", func(p *Policy) { p.Version = 6 }},
		{"max_stage_seconds", func(p *Policy) { p.MaxStageSeconds = 59 }},
		{"max_qualification_seconds", func(p *Policy) { p.MaxQualificationSeconds = 1000 }},
		{"max_qualification_seconds", func(p *Policy) { p.MaxQualificationSeconds = 14401 }},
		{"min_margin", func(p *Policy) { p.MinMargin = 0 }},
		{"min_margin", func(p *Policy) { p.MinMargin = 1 }},
		{"noise_multiplier", func(p *Policy) { p.NoiseMultiplier = 0 }},
		{"max_noise", func(p *Policy) { p.MaxNoise = 0.021 }},
		{"min_windows", func(p *Policy) { p.MinWindows = 2 }},
		{"min_windows", func(p *Policy) { p.MinWindows = 513 }},
		{"max_window_scatter", func(p *Policy) { p.MaxWindowScatter = 0.26 }},
		{"max_conditioning_slowdown", func(p *Policy) { p.MaxConditioningSlowdown = 1 }},
		{"max_conditioning_slowdown", func(p *Policy) { p.MaxConditioningSlowdown = 2.01 }},
		{"calibration_digest", func(p *Policy) { p.CalibrationDigest = strings.Repeat("0", 64) }},
		{"calibration_context_digest", func(p *Policy) { p.CalibrationContextDigest = "abc" }},
	}
	if err := testPolicy(V7).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			p := testPolicy(V7)
			c.edit(&p)
			err := p.Validate()
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.Field != c.field || !errors.Is(err, ErrPolicy) {
				t.Fatalf("err = %v, want a PolicyError on %s", err, c.field)
			}
		})
	}
}

func TestPolicyProjectionRoundTrips(t *testing.T) {
	for _, v := range []int{V7, V8, V9} {
		p := testPolicy(v)
		data, err := json.Marshal(p.Projection())
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParsePolicy(data)
		if err != nil {
			t.Fatal(err)
		}
		if back != p {
			t.Fatalf("v%d: round trip %+v != %+v", v, back, p)
		}
	}
}

func TestPolicyDigestIsPinned(t *testing.T) {
	// Pinned so that a change to the projection is a deliberate identity
	// change, never an accident.
	want := map[int]string{
		V7: "0e6cc961067df054cbab48aefa39aa3d22cf590154ad23349dd71ca1fe3d028c",
		V8: "5469f44e2df8e394fa03a769f235e008035888bf952b652facef656614eb466b",
		V9: "e339a6429d0acb646ef38a66b8917829ea1e92e482ec0cb5760d88d931eaee2a",
	}
	for v := range want {
		got, err := testPolicy(v).Digest()
		if err != nil {
			t.Fatal(err)
		}
		if got != want[v] {
			t.Errorf("v%d digest %s, want %s", v, got, want[v])
		}
	}
}

func TestParsePolicyRefuses(t *testing.T) {
	good, _ := json.Marshal(testPolicy(V8).Projection())
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		_ = json.Unmarshal(good, &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	cases := []struct {
		name, want string
		data       []byte
	}{
		{"unknown field", `unknown field "extra"`, edit(func(m map[string]any) { m["extra"] = 1 })},
		{"missing field", "min_margin: missing", edit(func(m map[string]any) { delete(m, "min_margin") })},
		{"float not string", "min_margin", edit(func(m map[string]any) { m["min_margin"] = 0.005 })},
		{"not a decimal", "not a decimal", edit(func(m map[string]any) { m["max_noise"] = "0x1p-6" })},
		{"read order of another version", "read_order", edit(func(m map[string]any) { m["read_order"] = []string{"B", "C", "B_prime_if_inconclusive"} })},
		{"timing", "timing", edit(func(m map[string]any) { m["timing"] = "parallel" })},
		{"sets under version 8", "sets: version 8 reads one set", edit(func(m map[string]any) { m["sets"] = 4 })},
		{"version 9 without sets", "sets: missing", edit(func(m map[string]any) { m["version"] = 9; m["borderline_band"] = "mean_over_sets" })},
		{"version 9 with one set", "sets: 1 is outside [2, 8]", edit(func(m map[string]any) { m["version"] = 9; m["sets"] = 1; m["borderline_band"] = "mean_over_sets" })},
		{"trailing", "trailing data", append(append([]byte{}, good...), []byte(" {}")...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePolicy(c.data)
			if err == nil || !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrPolicy containing %q", err, c.want)
			}
		})
	}
}
