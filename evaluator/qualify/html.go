package qualify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/evaluator/report"
	"github.com/cacheon/engine/evaluator/speed"
)

// HTML renders the human report of r: the verdict, the inputs, the plot
// of every read's window rates and, when T scored, of its per-prompt mean
// NLL of each role (both read back from the store, so the page shows
// exactly the retained evidence), and the stage timeline.
func HTML(store *evidence.Store, r *Report) ([]byte, error) {
	v := report.View{
		Title:    "Qualification of " + r.Inputs.TargetID,
		Decision: string(r.Decision), Reason: r.Reason,
		Facts: []report.Fact{
			{Label: "candidate content hash", Value: r.Inputs.Candidate},
			{Label: "target", Value: r.Inputs.TargetID},
			{Label: "marginal arm plan", Value: r.Inputs.MarginalArmPlan},
			{Label: "incumbent tree (B, B′)", Value: r.Inputs.IncumbentTree},
			{Label: "candidate tree (C)", Value: r.Inputs.CandidateTree},
			{Label: "workload", Value: r.Inputs.Workload},
			{Label: "speed policy", Value: r.Inputs.Policy},
			{Label: "substrate", Value: r.Inputs.Substrate},
			{Label: "isolation", Value: r.Isolation},
			{Label: "started", Value: r.Started},
		},
	}
	if r.Speed != nil {
		schedule := map[int]string{7: "v7: two resident engines, hot swaps, B′ only if inconclusive", 8: "v8: B, C and B′ engines of their own", 9: "v9: read sets of B, C and B′ engines of their own, graded on the mean of their speedups"}[r.Speed.Version]
		v.Facts = append(v.Facts, report.Fact{Label: "speed schedule", Value: schedule})
	}
	if r.Reproduces != "" {
		v.Facts = append(v.Facts, report.Fact{Label: "reproduces", Value: fmt.Sprintf("%s (lanes exchanged: %v)", r.Reproduces, r.LanesExchanged)})
	}
	for _, n := range r.Notes {
		v.Facts = append(v.Facts, report.Fact{Label: "note", Value: n})
	}
	for _, l := range r.Lanes {
		v.Facts = append(v.Facts, report.Fact{Label: "lane " + l.Name, Value: fmt.Sprintf("%s %v shared=%v", l.Device, l.GPUs, l.SharedDevice)})
	}
	for _, s := range r.Stages {
		start, _ := strconv.ParseFloat(s.Start, 64)
		secs, _ := strconv.ParseFloat(s.Seconds, 64)
		v.Stages = append(v.Stages, report.Stage{Name: s.Name, Decision: string(s.Decision), Detail: s.Reason,
			Start: time.Duration(start * float64(time.Second)), Duration: time.Duration(secs * float64(time.Second))})
	}
	if r.Speed != nil && r.Speed.Speedup != "" {
		v.Speedup = r.Speed.Speedup
		policyJSON, err := store.Get(r.Speed.Policy)
		if err != nil {
			return nil, err
		}
		p, err := speed.ParsePolicy(policyJSON)
		if err != nil {
			return nil, err
		}
		readsJSON, err := store.Get(r.Speed.Reads)
		if err != nil {
			return nil, err
		}
		reads, err := speed.ParseReads(readsJSON)
		if err != nil {
			return nil, err
		}
		g, err := speed.GradeReads(p, reads, speed.Options{})
		if err != nil {
			return nil, err
		}
		for _, rate := range g.Rates {
			v.Series = append(v.Series, report.Series{Role: string(rate.Role), Scored: rate.Scored, Windows: rate.Windows})
		}
		v.FailBelow, v.PassAt, v.Required, v.NoiseBand = g.FailBelow, g.PassAt, g.Required, p.MaxNoise
		for i, x := range g.SetSpeedups {
			v.Sets = append(v.Sets, report.ReadSet{Speedup: x, Kept: g.SetsKept[i]})
		}
		if len(v.Sets) > 0 {
			v.SetMean = g.Speedup
		}
	}
	if q := r.Quality; q != nil && q.Evidence.SHA256 != "" {
		data, err := store.Get(q.Evidence)
		if err != nil {
			return nil, err
		}
		var ev quality.Evidence
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("quality evidence %s: %w", q.Evidence.SHA256, err)
		}
		v.QualityDecision, v.QualityReason = string(q.Decision), q.Reason
		roles := map[quality.Role]string{quality.RoleB: "B", quality.RoleC: "C", quality.RoleBPrime: "B_prime"}
		for _, pr := range ev.Prompts {
			p := report.PromptNLL{Digest: pr.Digest, NLL: map[string]float64{}}
			for role, name := range roles {
				if ro, ok := pr.Rollouts[role]; ok {
					if x, err := strconv.ParseFloat(ro.Metrics[quality.MeanNLL], 64); err == nil {
						p.NLL[name] = x
					}
				}
			}
			v.Prompts = append(v.Prompts, p)
		}
	}
	var b bytes.Buffer
	if err := report.Render(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
