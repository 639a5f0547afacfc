package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/speed"
)

func speedFiles(t *testing.T, version int, reads []speed.Read) (policy, readsPath string) {
	t.Helper()
	dir := t.TempDir()
	p := speed.Policy{Version: version, MinMargin: 0.005, NoiseMultiplier: 2, MaxNoise: 0.02, MinWindows: 3,
		MaxWindowScatter: 0.05, MaxConditioningSlowdown: 1.25, MaxStageSeconds: 1800, MaxQualificationSeconds: 7200,
		CalibrationDigest: strings.Repeat("a", 64), CalibrationContextDigest: strings.Repeat("b", 64)}
	if version == speed.V9 {
		p.Sets = 2
	}
	pj, _ := json.Marshal(p.Projection())
	rj, err := speed.MarshalReads(reads)
	if err != nil {
		t.Fatal(err)
	}
	policy, readsPath = filepath.Join(dir, "policy.json"), filepath.Join(dir, "reads.json")
	os.WriteFile(policy, pj, 0o644)
	os.WriteFile(readsPath, rj, 0o644)
	return policy, readsPath
}

func steadyRead(role speed.Role, rate float64) speed.Read {
	r := speed.Read{Role: role, ConditioningTokens: 256, ConditioningSeconds: 0.5}
	for i := 0; i < 4; i++ {
		r.Windows = append(r.Windows, speed.Window{Tokens: 1000, Seconds: 1000 / rate})
	}
	return r
}

func TestSpeedGrade(t *testing.T) {
	cases := []struct {
		name     string
		version  int
		reads    []speed.Read
		args     []string
		code     int
		decision string
		stderr   string
	}{
		{"v8 pass", 8, []speed.Read{steadyRead(speed.B, 100), steadyRead(speed.C, 103), steadyRead(speed.BPrime, 100)}, nil, 0, "PASS", ""},
		{"v7 clear fail", 7, []speed.Read{steadyRead(speed.B, 100), steadyRead(speed.C, 100.2)}, nil, 0, "FAIL", ""},
		{"v7 inconclusive live", 7, []speed.Read{steadyRead(speed.B, 100), steadyRead(speed.C, 103)}, []string{"--live"}, 0, "B_PRIME_REQUIRED", ""},
		{"v7 inconclusive without B′", 7, []speed.Read{steadyRead(speed.B, 100), steadyRead(speed.C, 103)}, nil, 2, "", "must then carry B′"},
		{"v9 two sets pass", 9, []speed.Read{steadyRead(speed.B, 100), steadyRead(speed.C, 101), steadyRead(speed.BPrime, 100),
			steadyRead(speed.B, 100), steadyRead(speed.C, 100.2), steadyRead(speed.BPrime, 100)}, nil, 0, "PASS", ""},
		{"v9 one set of two", 9, []speed.Read{steadyRead(speed.B, 100), steadyRead(speed.C, 103), steadyRead(speed.BPrime, 100)}, nil, 2, "", "version 9 reads 2 sets of B, C and B′ (6 reads)"},
		{"v8 two reads", 8, []speed.Read{steadyRead(speed.B, 100), steadyRead(speed.C, 103)}, nil, 2, "", "version 8 reads B, C and B′ always"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			policy, reads := speedFiles(t, c.version, c.reads)
			args := append([]string{"speed", "grade", "--json", "--policy", policy, reads}, c.args...)
			code, out, errOut := run(t, "", args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, c.code, out, errOut)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
			}
			if c.code == 0 {
				if doc["decision"] != c.decision || len(doc["policy_digest"].(string)) != 64 || doc["speedup"] == "" {
					t.Fatalf("document %v", doc)
				}
				// A v9 grade names each set's speedup, drift and whether
				// it was kept.
				want := 0
				if c.version == 9 {
					want = len(c.reads) / 3
				}
				if sets, _ := doc["sets"].([]any); len(sets) != want {
					t.Fatalf("sets %v in document %v", doc["sets"], doc)
				}
				return
			}
			if !strings.Contains(doc["error"].(string), c.stderr) {
				t.Fatalf("refusal %v, want %q", doc, c.stderr)
			}
		})
	}
	// A missing reads file is exit 1, not a rejection.
	policy, _ := speedFiles(t, 8, nil)
	if code, _, _ := run(t, "", "speed", "grade", "--policy", policy, filepath.Join(t.TempDir(), "absent.json")); code != 1 {
		t.Fatalf("missing reads: exit %d, want 1", code)
	}
}
