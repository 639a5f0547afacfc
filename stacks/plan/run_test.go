package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog"
	rejectroot "github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/stack"
)

// repoIncumbent assembles the repository's own stack file name, in a copy
// of the workspace (under Bazel the data files are links, which bundles
// may not hold); contributions are read from the same copy.
func repoIncumbent(t *testing.T, name string) (*stack.Assembled, string, materialize.Options) {
	t.Helper()
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", "stacks/"+name, "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json", "kernels/contributions", "kernels/fixtures")
	path := filepath.Join(ws, "stacks", name)
	f, _, diags := stack.Load(path)
	if diags.HasErrors() {
		t.Fatalf("load %s: %v", path, diags)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	payload := contribution.PayloadOptions{Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck, PatcherDigests: map[string]string{}}
	a, err := stack.Assemble(f, stack.Sources{}, cat, payload)
	if err != nil {
		t.Fatalf("assemble %s: %v", path, err)
	}
	return a, path, materialize.Options{Catalog: cat, Payload: payload}
}

// contributionDir is a contribution in the workspace copy the stack at
// path (from repoIncumbent) was assembled in.
func contributionDir(path, name string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(path)), "kernels", "contributions", name)
}

func TestRunPlansAndWritesTheCandidate(t *testing.T) {
	a, path, opts := repoIncumbent(t, "incumbent.hcl")
	var stages []string
	res, err := Run(context.Background(), Request{Incumbent: a, IncumbentPath: path, CandidateDir: contributionDir(path, "silu_and_mul_torch"),
		Materialize: opts, Progress: func(f string, args ...any) { stages = append(stages, f) }})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := res.Candidate.Transition.TargetID; got != "activation.silu_and_mul" {
		t.Errorf("transition at %s, want activation.silu_and_mul", got)
	}
	if !res.Local || res.Attribution != LocalAttribution(res.Inspection.ContentHash) {
		t.Errorf("attribution %s (local %v), want the local attribution", res.Attribution, res.Local)
	}
	if res.Arms.Challenger.TreeDigest.IsZero() || res.Digest.IsZero() || len(stages) == 0 {
		t.Errorf("arms %+v, digest %q, stages %v", res.Arms.RoleArms(), res.Digest, stages)
	}
	if again, err := res.Arms.Digest(); err != nil || again != res.Digest {
		t.Errorf("plan digest %s, recomputed %s (%v)", res.Digest, again, err)
	}

	// The written file assembles to the planned candidate stack.
	out := filepath.Join(t.TempDir(), "candidate.hcl")
	if _, err := WriteCandidate(out, CandidateFile{Incumbent: a.File, IncumbentPath: path, Result: res, CandidateDir: contributionDir(path, "silu_and_mul_torch")}); err != nil {
		t.Fatalf("WriteCandidate: %v", err)
	}
	f, _, diags := stack.Load(out)
	if diags.HasErrors() {
		t.Fatalf("load written candidate: %v", diags)
	}
	ws, err := stack.FindWorkspace(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	written, err := stack.Assemble(f, stack.Sources{Workspace: ws}, opts.Catalog, opts.Payload)
	if err != nil {
		t.Fatalf("assemble written candidate: %v", err)
	}
	got, _ := written.Manifest.Digest()
	want, _ := res.Candidate.Stack.Digest()
	if got != want || f.Name != a.File.Name+"-candidate" {
		t.Errorf("written candidate %q digests to %s, want %s", f.Name, got, want)
	}
	text, _ := os.ReadFile(out)
	if !strings.Contains(string(text), "one transition at activation.silu_and_mul") {
		t.Errorf("candidate file lacks its comment:\n%s", text)
	}
}

func TestRunRefusals(t *testing.T) {
	a, path, opts := repoIncumbent(t, "incumbent.hcl")
	ref, refPath, refOpts := repoIncumbent(t, "reference.hcl")
	tests := []struct {
		name       string
		req        Request
		wantReason Reason // empty: not a *Rejection
		wantReject bool
		wantInErr  string
	}{
		{"no-op candidate", Request{Incumbent: a, IncumbentPath: path, CandidateDir: contributionDir(path, "rmsnorm_triton"), Materialize: opts}, ReasonNoOp, true, "no_op"},
		{"rejected bundle", Request{Incumbent: a, IncumbentPath: path, CandidateDir: filepath.Join(filepath.Dir(filepath.Dir(path)), "kernels", "fixtures", "binary_object"), Materialize: opts}, ReasonInspection, true, "refused at tree"},
		{"unregistered target", Request{Incumbent: a, IncumbentPath: path, CandidateDir: filepath.Join(filepath.Dir(filepath.Dir(path)), "kernels", "fixtures", "system_mode"), Materialize: opts}, ReasonUnknownTarget, true, "no registered target"},
		{"bad attribution", Request{Incumbent: a, IncumbentPath: path, CandidateDir: contributionDir(path, "silu_and_mul_torch"), Attribution: "nothex", Materialize: opts}, "", true, "attribution"},
		{"incumbent is not an evaluation stack", Request{Incumbent: ref, IncumbentPath: refPath, CandidateDir: contributionDir(path, "silu_and_mul_torch"), Materialize: refOpts}, "", true, "must be an evaluation stack"},
		{"missing candidate directory", Request{Incumbent: a, IncumbentPath: path, CandidateDir: contributionDir(path, "nope"), Materialize: opts}, "", false, "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.req)
			if err == nil {
				t.Fatal("Run succeeded")
			}
			var r *Rejection
			if tc.wantReason != "" && (!errors.As(err, &r) || r.Reason != tc.wantReason) {
				t.Errorf("Run = %v, want a %s rejection", err, tc.wantReason)
			}
			if rejectroot.Is(err) != tc.wantReject {
				t.Errorf("reject.Is(%v) = %v, want %v", err, rejectroot.Is(err), tc.wantReject)
			}
			if !strings.Contains(err.Error(), tc.wantInErr) {
				t.Errorf("Run = %v, want it to mention %q", err, tc.wantInErr)
			}
		})
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	a, path, opts := repoIncumbent(t, "incumbent.hcl")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Request{Incumbent: a, IncumbentPath: path, CandidateDir: contributionDir(path, "silu_and_mul_torch"), Materialize: opts})
	if !errors.Is(err, context.Canceled) || rejectroot.Is(err) {
		t.Errorf("Run = %v, want context.Canceled and no rejection", err)
	}
}
