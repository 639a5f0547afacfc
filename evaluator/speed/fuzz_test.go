package speed

import (
	"errors"
	"testing"
)

// FuzzGrade feeds arbitrary documents through the parser and the grader:
// either is allowed to refuse, with its own error class, but neither may
// panic, and a grade must be one of the three decisions.
func FuzzGrade(f *testing.F) {
	good, _ := MarshalReads([]Read{steady(B, 100, 3), steady(C, 103, 3), steady(BPrime, 101, 3)})
	f.Add(good, true)
	f.Add([]byte(`{"reads":[]}`), false)
	f.Add([]byte(`{"reads":[{"role":"B","conditioning_tokens":1,"conditioning_seconds":"1e-320","windows":[{"tokens":9223372036854775807,"seconds":"5e-324"}]}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, v8 bool) {
		reads, err := ParseReads(data)
		if err != nil {
			if !errors.Is(err, ErrEvidence) {
				t.Fatalf("parse error outside ErrEvidence: %v", err)
			}
			return
		}
		version := V7
		if v8 {
			version = V8
		}
		g, err := GradeReads(testPolicy(version), reads, Options{Live: true})
		if err != nil {
			if !errors.Is(err, ErrEvidence) {
				t.Fatalf("grade error outside ErrEvidence: %v", err)
			}
			return
		}
		switch g.Decision {
		case Pass, Fail, BPrimeRequired:
		default:
			t.Fatalf("decision %q", g.Decision)
		}
	})
}
