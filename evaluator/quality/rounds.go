package quality

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/worker"
)

// StockRoundsOptions are stock-versus-stock rounds for Calibrate: every
// round starts three fresh engines of the incumbent's tree (B, C and B′),
// each serves every batch, and a fresh reference teacher-forces every
// prompt's three trajectories.
type StockRoundsOptions struct {
	Isolation worker.Isolation
	// Engine is the incumbent's engine; each role of each round runs it
	// in WorkDir/round-N/ROLE.
	Engine engine.Spec
	// Teacher is the reference; each round's runs in WorkDir/round-N/T.
	Teacher      TeacherSpec
	Batches      [][][]int // prompt batches, every prompt of a batch of one length
	MaxNewTokens int
	Rounds       int
	WorkDir      string
	Progress     func(format string, args ...any)
}

// StockRounds runs the rounds and returns, per round, every distinct
// prompt's teacher-forced B, C and B′ rollouts, in the order the prompts
// first occur.
func StockRounds(ctx context.Context, o StockRoundsOptions) ([][]map[Role]Scored, error) {
	if o.Rounds < 2 {
		return nil, fmt.Errorf("stock rounds: %d rounds, want at least 2", o.Rounds)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	var rounds [][]map[Role]Scored
	for i := 0; i < o.Rounds; i++ {
		dir := filepath.Join(o.WorkDir, fmt.Sprintf("round-%d", i))
		trajectories := map[Role]map[string][]int{}
		var order []string
		prompts := map[string][]int{}
		for _, role := range Roles {
			spec := o.Engine
			spec.WorkDir = filepath.Join(dir, string(role))
			tr, err := serveAll(ctx, o.Isolation, spec, o.Batches, o.MaxNewTokens)
			if err != nil {
				return nil, fmt.Errorf("stock round %d %s: %w", i, role, err)
			}
			trajectories[role] = map[string][]int{}
			for b, batch := range o.Batches {
				for j, p := range batch {
					d := PromptDigest(p)
					if _, ok := trajectories[role][d]; ok {
						continue
					}
					trajectories[role][d] = tr[b][j]
					if role == RoleB {
						order = append(order, d)
						prompts[d] = p
					}
				}
			}
		}
		ts := o.Teacher
		ts.WorkDir = filepath.Join(dir, "T")
		t, err := StartTeacher(ctx, o.Isolation, ts)
		if err != nil {
			return nil, fmt.Errorf("stock round %d: reference engine: %w", i, err)
		}
		var round []map[Role]Scored
		for _, d := range order {
			m := map[Role]Scored{}
			for _, role := range Roles {
				s, err := t.Score(ctx, prompts[d], trajectories[role][d])
				if err != nil {
					t.Kill()
					_, _ = t.Close()
					return nil, fmt.Errorf("stock round %d: prompt %s %s: %w", i, short(d), role, err)
				}
				m[role] = s
			}
			round = append(round, m)
		}
		if out, err := t.Close(); err != nil || !out.Clean() {
			return nil, fmt.Errorf("stock round %d: the reference engine %s (%v)", i, out.Describe(), err)
		}
		progress("stock round %d: %d prompts teacher-forced", i, len(round))
		rounds = append(rounds, round)
	}
	return rounds, nil
}

// serveAll starts one engine, serves every batch, and closes it.
func serveAll(ctx context.Context, iso worker.Isolation, spec engine.Spec, batches [][][]int, k int) ([][][]int, error) {
	e, err := engine.Start(ctx, iso, spec)
	if err != nil {
		return nil, err
	}
	var out [][][]int
	for i, b := range batches {
		w, err := e.Batch(ctx, b, k)
		if err != nil {
			_, _ = e.Close()
			return nil, fmt.Errorf("batch %d: %w", i, err)
		}
		out = append(out, w.Tokens)
	}
	if o, err := e.Close(); err != nil || !o.Clean() {
		return nil, fmt.Errorf("the engine %s (%v)", o.Describe(), err)
	}
	return out, nil
}
