package qualify

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/tools/testtree"
)

func TestScreenStatic(t *testing.T) {
	cases := []struct {
		bundle string
		want   Decision
		reason string
	}{
		{"../../kernels/contributions/rmsnorm_torch", Pass, "no violation"},
		{"../../kernels/fixtures/banned_import", Fail, "banned-import"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.bundle), func(t *testing.T) {
			// A copy: under Bazel the runfiles are links, which a bundle may
			// not hold.
			dir := filepath.Join(t.TempDir(), "bundle")
			testtree.Copy(t, c.bundle, dir)
			o := screenStatic(dir)
			if o.Decision != c.want || !strings.Contains(o.Reason, c.reason) {
				t.Fatalf("static screen: %+v, want %s containing %q", o, c.want, c.reason)
			}
		})
	}
}

func TestScreenServing(t *testing.T) {
	f := enginetest.New(t)
	spec := engine.Spec{Python: f.Python, Root: f.Root, Tree: f.Tree, Model: f.Model, Device: "cpu",
		WorkDir: filepath.Join(f.Run, "serving"), StartTimeout: 3 * time.Minute, BatchTimeout: time.Minute}
	if o := screenServing(context.Background(), f.Iso, spec, [][]int{{1, 2, 3}}); o.Decision != Pass {
		t.Fatalf("stock engine: %+v", o)
	}
	spec.Root = f.HostileRoot(t, "dies", enginetest.Prelude+enginetest.ReadyFrame+"inp.readline(); os._exit(1)\n")
	spec.WorkDir = filepath.Join(f.Run, "serving-dies")
	if o := screenServing(context.Background(), f.Iso, spec, [][]int{{1, 2, 3}}); o.Decision != Fail || !strings.Contains(o.Reason, "exited") {
		t.Fatalf("an engine that dies serving: %+v, want FAIL", o)
	}
}
