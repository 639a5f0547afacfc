package qualify

import (
	"context"
	"encoding/json"
	"errors"
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
// kept in the evidence; a device that throttles spoils the read set, which
// is set aside and read again once, as a qualification does; throttling
// again makes the stage NO_DECISION, which Regrade recomputes from the
// retained samples, the set-aside set's included; a lane that disappears
// is NO_DECISION too.
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
			ev := runSpeedSets(context.Background(), f.Iso, a, smoke(t), testPolicy(), r.Read, 1)
			if c.want != "" && (ev.Decision != c.want || !strings.Contains(ev.Reason, c.reason)) {
				t.Fatalf("%s: %s %s, want %s for %q", c.name, ev.Decision, ev.Reason, c.want, c.reason)
			}
			if c.lost {
				return
			}
			if len(ev.Samples) != 3 || len(ev.Samples[2].After) != 1 || ev.Samples[2].After[0].SMClockMHz != 1980 {
				t.Fatalf("samples %+v", ev.Samples)
			}
			store, rep := speedOnlyReport(t, ev)
			if err := Regrade(store, rep); err != nil {
				t.Fatalf("regrade: %v", err)
			}
			if c.mask == "0x0000000000000040" {
				requireSetAsideRegraded(t, store, ev, rep)
			}
		})
	}
}

// publishedSpeed publishes ev's speed evidence into a fresh store.
func publishedSpeed(t *testing.T, ev *SpeedEvidence) (*evidence.Store, *Speed) {
	t.Helper()
	store, err := evidence.Open(filepath.Join(t.TempDir(), "evidence"), 0)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := publishSpeed(store, ev)
	if err != nil {
		t.Fatal(err)
	}
	return store, sp
}

// speedOnlyReport publishes ev to a new evidence store and wraps it in a
// report whose only stage is speed. The engines ran on the CPU, one device
// for both lanes: no lane orientation.
func speedOnlyReport(t *testing.T, ev *SpeedEvidence) (*evidence.Store, *Report) {
	t.Helper()
	store, sp := publishedSpeed(t, ev)
	pd, _ := ev.Policy.Digest()
	return store, &Report{Schema: ReportSchema, Decision: ev.Decision, Inputs: Inputs{Policy: pd},
		Lanes:  []Lane{{Name: "baseline", Device: "cpu", GPUs: []string{}}, {Name: "candidate", Device: "cpu", GPUs: []string{}, SharedDevice: true}},
		Stages: []Stage{{Name: StageSpeed, Decision: ev.Decision, Reason: ev.Reason}}, Speed: sp}
}

// requireSetAsideRegraded checks a stage whose first read set a throttling
// device spoiled: it was set aside with its reason, read again, and the
// report's set-aside record is re-graded; edited, dropped or swapped for a
// set that decided, it is caught.
func requireSetAsideRegraded(t *testing.T, store *evidence.Store, ev *SpeedEvidence, rep *Report) {
	t.Helper()
	if ev.SetAside == nil || !strings.Contains(ev.SetAside.Reason, "lane drift") || len(ev.SetAside.Reads) != 3 || len(ev.SetAside.Samples) != 3 {
		t.Fatalf("set aside %+v", ev.SetAside)
	}
	requireQuietNeighbours(t, ev, 12)
	if rep.Speed.SetAside == nil {
		t.Fatal("the report has no set-aside record")
	}
	// A steady set in place of the spoiled one: the same reads with B′
	// read as B, under samples of a GPU at its power cap.
	steadyReads := append([]speed.Read(nil), ev.SetAside.Reads...)
	steadyReads[2].Windows = steadyReads[0].Windows
	steadyReads[2].ConditioningSeconds = steadyReads[0].ConditioningSeconds
	data, err := speed.MarshalReads(steadyReads)
	if err != nil {
		t.Fatal(err)
	}
	steady, err := store.Put(ArtifactReads, "application/json", "speed-reads.v1", data)
	if err != nil {
		t.Fatal(err)
	}
	calm := append([]ReadSamples(nil), ev.SetAside.Samples...)
	for i := range calm {
		capped := []lanes.Sample{{UUID: "GPU-aaaa", ThrottleActive: "0x0000000000000004"}}
		calm[i].Before, calm[i].After = capped, capped
	}
	data, _ = json.Marshal(calm)
	calmSamples, err := store.Put(ArtifactSamples, "application/json", "lane-samples.v1", data)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		name string
		edit func(s *Speed)
	}{
		{"the reason edited", func(s *Speed) { s.SetAside.Reason = "stock drift: B and B′ differ by 0.5, over max_noise" }},
		{"the set-aside set hidden", func(s *Speed) { s.SetAside = nil }},
		{"a set that decided set aside", func(s *Speed) { s.SetAside.Reads, s.SetAside.Samples = steady, calmSamples }},
	} {
		t.Run(e.name, func(t *testing.T) {
			edited := *rep
			sp := *rep.Speed
			sa := *rep.Speed.SetAside
			sp.SetAside = &sa
			edited.Speed = &sp
			e.edit(edited.Speed)
			if err := Regrade(store, &edited); !errors.Is(err, ErrRegrade) {
				t.Fatalf("regrade: %v, want ErrRegrade", err)
			}
		})
	}
}

// TestRereadReason: a read set is read again only for what the lanes did
// (a throttling device, B and B′ apart by more than max_noise), never
// for C's read.
func TestRereadReason(t *testing.T) {
	throttled := []ReadSamples{{Role: speed.C, After: []lanes.Sample{{UUID: "GPU-1", ThrottleActive: "0x0000000000000040"}}}}
	steady := []ReadSamples{{Role: speed.C, After: []lanes.Sample{{UUID: "GPU-1", ThrottleActive: "0x0000000000000004"}}}}
	rate := func(b, c, bp float64) []speed.Read {
		read := func(role speed.Role, x float64) speed.Read {
			r := speed.Read{Role: role, ConditioningTokens: 8, ConditioningSeconds: 1}
			for i := 0; i < 3; i++ {
				r.Windows = append(r.Windows, speed.Window{Tokens: 100, Seconds: 100 / x})
			}
			return r
		}
		return []speed.Read{read(speed.B, b), read(speed.C, c), read(speed.BPrime, bp)}
	}
	for _, c := range []struct {
		name    string
		reads   []speed.Read
		samples []ReadSamples
		want    string
	}{
		{"steady stock arms, C faster", rate(100, 110, 100.5), steady, ""},
		{"steady stock arms, C far slower", rate(100, 50, 100.5), steady, ""},
		{"the first arm 10 % slow", rate(90, 100, 100), steady, "stock drift: B and B′ differ by"},
		{"B′ slow", rate(100, 100, 95), nil, "stock drift"},
		{"a throttling device, steady arms", rate(100, 101, 100), throttled, "lane drift"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := speed.GradeReads(testPolicy(), c.reads, speed.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := rereadReason(g, c.samples)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("rereadReason = %q, want %q", got, c.want)
			}
		})
	}
}
