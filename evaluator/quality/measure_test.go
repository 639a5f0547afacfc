package quality

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

// TestMeasureOnTheCPU prints, for every candidate, the teacher-forced
// metrics of its trajectories against the incumbent's, on the test
// model: the numbers docs/reference/quality.md reports.
func TestMeasureOnTheCPU(t *testing.T) {
	out := os.Getenv("CACHEON_QUALITY_MEASURE")
	if out == "" {
		t.Skip("set CACHEON_QUALITY_MEASURE=FILE to measure")
	}
	b := newBench(t)
	type row struct {
		Candidate string           `json:"candidate"`
		Rounds    []map[string]any `json:"per_prompt"`
	}
	var rows []row
	for _, cand := range []string{"kernels/contributions/rmsnorm_torch", "kernels/fixtures/silu_drops_silu", "kernels/fixtures/rmsnorm_wrong_eps"} {
		bTree, cTree, armPlan := b.trees(t, cand)
		bt, ct, bpt := b.serve(t, bTree, "B-"+cand[len(cand)-6:]), b.serve(t, cTree, "C-"+cand[len(cand)-6:]), b.serve(t, bTree, "Bp-"+cand[len(cand)-6:])
		o := b.options(t, b.pool(bt, ct, bpt), armPlan, nil, len(b.prompts))
		tt, err := StartTeacher(context.Background(), o.Isolation, o.Teacher)
		if err != nil {
			t.Fatal(err)
		}
		r := row{Candidate: cand}
		for i, p := range b.prompts {
			m := map[string]any{}
			for role, tr := range map[Role][]int{RoleB: bt[i], RoleC: ct[i], RoleBPrime: bpt[i]} {
				s, err := tt.Score(context.Background(), p, tr)
				if err != nil {
					t.Fatal(err)
				}
				met, _ := RolloutMetrics(s, 1e9)
				m[string(role)] = met
				m[string(role)+"_nll"] = s.NLL
			}
			r.Rounds = append(r.Rounds, m)
		}
		tt.Close()
		rows = append(rows, r)
	}
	data, _ := json.MarshalIndent(rows, "", " ")
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
