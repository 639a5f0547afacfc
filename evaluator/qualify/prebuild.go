package qualify

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cacheon/engine/evaluator/lanes"
	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
)

// prebuildTrees compiles the cuda_sources rows of each engine tree, for
// its lane's device, in the contained compiler child, and returns the
// sealed artifact directory of every tree that has such rows (engines
// load from it and never compile) with one note per artifact. A source
// that does not compile is the candidate's FAIL; anything else that stops
// a prebuild (its budget, the host's toolchain) decides nothing.
func prebuildTrees(ctx context.Context, o Options, trees []string, onLanes []lanes.Lane) (map[string]string, []string, Outcome) {
	natives := map[string]string{}
	var notes []string
	for i, tree := range trees {
		if _, done := natives[tree]; done {
			continue
		}
		m, err := bundle.Load(tree)
		if err != nil {
			return nil, nil, Outcome{NoDecision, fmt.Sprintf("reading engine tree %s: %v", tree, err)}
		}
		if len(prebuild.Rows(m)) == 0 {
			continue
		}
		res, err := prebuild.Build(ctx, prebuild.Options{Bundle: tree, Store: filepath.Join(o.RunDir, "native"), WorkDir: o.RunDir,
			Target: onLanes[i].Device, Python: o.Python, Limits: o.Isolation.Limits, Unisolated: o.Isolation.Unsafe})
		var nd *prebuild.NoDecisionError
		switch {
		case err == nil:
		case reject.Is(err):
			return nil, nil, Outcome{Fail, "prebuild: " + err.Error()}
		case errors.As(err, &nd):
			return nil, nil, Outcome{NoDecision, err.Error()}
		default:
			return nil, nil, Outcome{NoDecision, "prebuild: " + err.Error()}
		}
		natives[tree] = res.Sealed.Dir
		notes = append(notes, fmt.Sprintf("prebuild: %d librar(ies) of tree %s sealed as %s by %s in %d ms",
			len(res.Sealed.Artifact.Libraries), filepath.Base(tree), res.Sealed.Digest.Hex, res.Receipt.CompilerVersion,
			res.Receipt.DurationMS))
	}
	return natives, notes, Outcome{Pass, ""}
}
