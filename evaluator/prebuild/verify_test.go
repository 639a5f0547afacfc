package prebuild_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/catalog/catalogtest"
	"github.com/cacheon/engine/evaluator/prebuild"
	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/internal/testtree"
)

// TestCPUContributionPassesVerify: cacheon verify prebuilds the fixture's
// declared source in the compiler sandbox, and the candidate worker loads
// only the sealed library and passes the norm.rmsnorm cases with it.
func TestCPUContributionPassesVerify(t *testing.T) {
	prebuild.NeedToolchain(t, python())
	dir := filepath.Join(searchable(t), "rmsnorm_cpp")
	testtree.Copy(t, filepath.Join("testdata", "rmsnorm_cpp"), dir)
	rep, err := verify.Run(context.Background(), dir, verify.Options{Device: "cpu", DType: "bfloat16", Python: python(), WorkDir: searchable(t), Catalog: catalogtest.Small(t)})
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

// TestVerifyBindsAGivenArtifactToTheBundlesBytes: an artifact the caller
// prebuilt is used as it is, and only for the bytes it was built from.
func TestVerifyBindsAGivenArtifactToTheBundlesBytes(t *testing.T) {
	prebuild.NeedToolchain(t, python())
	dir := filepath.Join(searchable(t), "rmsnorm_cpp")
	testtree.Copy(t, filepath.Join("testdata", "rmsnorm_cpp"), dir)
	res, err := prebuild.Build(context.Background(), prebuild.Options{Bundle: dir, Store: filepath.Join(searchable(t), "store"),
		WorkDir: searchable(t), Target: "cpu", Python: python()})
	if err != nil {
		t.Fatalf("prebuild: %v", err)
	}
	o := verify.Options{Device: "cpu", DType: "float32", Python: python(), WorkDir: searchable(t), NativeArtifact: res.Sealed.Dir,
		Catalog: catalogtest.Small(t)}
	rep, err := verify.Run(context.Background(), dir, o)
	if err != nil || rep.Verdict != verify.Pass || rep.NativeArtifact != res.Sealed.Digest.Hex || rep.Prebuild != nil {
		t.Fatalf("verify with the artifact: %v, %+v", err, rep)
	}
	header := filepath.Join(dir, "csrc", "rmsnorm_common.cuh")
	text, err := os.ReadFile(header)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(header, append(text, []byte("// edited after the prebuild\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = verify.Run(context.Background(), dir, o)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if row := rep.Rows[0]; row.Verdict != verify.Error || !strings.Contains(row.Reason, "was built from the bytes") {
		t.Fatalf("row %s (%s), want ERROR: the artifact was built from other bytes", row.Verdict, row.Reason)
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
