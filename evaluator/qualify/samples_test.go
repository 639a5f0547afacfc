package qualify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/speed"
)

func TestDrift(t *testing.T) {
	at := func(mask string) []ReadSamples {
		return []ReadSamples{{Role: speed.B, Before: []lanes.Sample{{UUID: "GPU-1", ThrottleActive: "0x0000000000000000"}},
			After: []lanes.Sample{{UUID: "GPU-1", ThrottleActive: mask}}}}
	}
	cases := []struct {
		name, mask, want string
	}{
		{"none", "0x0000000000000000", ""},
		{"idle", "0x0000000000000001", ""},
		{"power cap, a busy GPU's normal state", "0x0000000000000004", ""},
		{"hardware slowdown", "0x0000000000000008", "slowed itself down around read B"},
		{"hardware thermal", "0x0000000000000040", "slowed itself down"},
		{"software thermal with power cap", "0x0000000000000024", "slowed itself down"},
		{"not a mask", "[Not Supported]", "not a bit mask"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Drift(at(c.mask))
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("Drift(%s) = %q, want %q", c.mask, got, c.want)
			}
		})
	}
}

// smi is an nvidia-smi that answers the sample query with one device
// whose throttle reasons are mask, or fails once the file gone exists.
func smi(t *testing.T, mask string) (lanes.Runner, string) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone")
	p := filepath.Join(dir, "nvidia-smi")
	body := "#!/bin/sh\n[ -e " + gone + " ] && { echo 'Unable to determine the device handle for GPU0: GPU is lost' >&2; exit 15; }\n" +
		"echo 'GPU-aaaa, 1980, 3201, 402.50, 51, " + mask + "'\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return lanes.Runner{NvidiaSMI: p}, gone
}

// TestSpeedStageSamplesAroundEveryRead: each read is bracketed by samples
// kept in the evidence; a device that throttles makes the stage
// NO_DECISION, which Regrade recomputes from the retained samples; a lane
// that disappears is NO_DECISION too.
func TestSpeedStageSamplesAroundEveryRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct {
		name, mask string
		lost       bool
		want       Decision
		reason     string
	}{
		{"steady", "0x0000000000000004", false, "", ""},
		{"thermal slowdown", "0x0000000000000040", false, NoDecision, "lane drift"},
		{"lane lost", "0x0000000000000000", true, NoDecision, "GPU is lost"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, gone := smi(t, c.mask)
			if c.lost {
				if err := os.WriteFile(gone, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			a := arms(f)
			for i := range a {
				a[i].Spec.WorkDir = filepath.Join(f.Run, strings.ReplaceAll(c.name, " ", "-"), string(a[i].Role))
			}
			ev := runSpeedV8(context.Background(), f.Iso, a, smoke(t), testPolicy(), r.Read)
			if c.want != "" && (ev.Decision != c.want || !strings.Contains(ev.Reason, c.reason)) {
				t.Fatalf("%s: %s %s, want %s for %q", c.name, ev.Decision, ev.Reason, c.want, c.reason)
			}
			if c.lost {
				return
			}
			if len(ev.Samples) != 3 || len(ev.Samples[2].After) != 1 || ev.Samples[2].After[0].SMClockMHz != 1980 {
				t.Fatalf("samples %+v", ev.Samples)
			}
			store, err := evidence.Open(filepath.Join(t.TempDir(), "evidence"), 0)
			if err != nil {
				t.Fatal(err)
			}
			sp, err := publishSpeed(store, ev)
			if err != nil {
				t.Fatal(err)
			}
			pd, _ := ev.Policy.Digest()
			// The engines ran on the CPU, one device for both lanes: no
			// lane orientation.
			rep := &Report{Schema: ReportSchema, Decision: ev.Decision, Inputs: Inputs{Policy: pd},
				Lanes:  []Lane{{Name: "baseline", Device: "cpu", GPUs: []string{}}, {Name: "candidate", Device: "cpu", GPUs: []string{}, SharedDevice: true}},
				Stages: []Stage{{Name: StageSpeed, Decision: ev.Decision, Reason: ev.Reason}}, Speed: sp}
			if err := Regrade(store, rep); err != nil {
				t.Fatalf("regrade: %v", err)
			}
		})
	}
}
