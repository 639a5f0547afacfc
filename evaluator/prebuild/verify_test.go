package prebuild_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/tools/testtree"
)

// TestCPUContributionPassesVerify: cacheon verify prebuilds the fixture's
// declared source in the compiler sandbox, and the candidate worker loads
// only the sealed library and passes the norm.rmsnorm cases with it.
func TestCPUContributionPassesVerify(t *testing.T) {
	prebuild.NeedToolchain(t, python())
	dir := filepath.Join(searchable(t), "rmsnorm_cpp")
	testtree.Copy(t, filepath.Join("testdata", "rmsnorm_cpp"), dir)
	rep, err := verify.Run(context.Background(), dir, verify.Options{Device: "cpu", DType: "bfloat16", Python: python(), WorkDir: searchable(t)})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if rep.Verdict != verify.Pass || len(rep.Rows) != 1 || rep.Rows[0].Verdict != verify.Pass {
		t.Fatalf("verdict %s (%s), rows %+v", rep.Verdict, rep.Reason, rep.Rows)
	}
	if rep.Prebuild == nil || rep.NativeArtifact == "" || rep.Prebuild.Seal != rep.NativeArtifact || len(rep.Prebuild.Steps) != 1 {
		t.Fatalf("the report names no prebuild: artifact %q, receipt %+v", rep.NativeArtifact, rep.Prebuild)
	}
}

// python is the test interpreter: $CACHEON_TEST_PYTHON, else
// $CACHEON_PYTHON (the GPU host's), else Debian's.
func python() string {
	for _, v := range []string{"CACHEON_TEST_PYTHON", "CACHEON_PYTHON"} {
		if p := os.Getenv(v); p != "" {
			return p
		}
	}
	return "/usr/bin/python3"
}

func searchable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := sandbox.SearchableDir(d); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
