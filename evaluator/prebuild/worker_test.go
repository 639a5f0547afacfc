package prebuild_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/internal/testtree"
)

// TestCandidateWorkerRefusesARowWithoutItsArtifact: a candidate request
// for a row with cuda_sources and no sealed library is refused by the
// harness before the row's module is imported; the worker never compiles.
func TestCandidateWorkerRefusesARowWithoutItsArtifact(t *testing.T) {
	f := enginetest.New(t) // an interpreter with torch, and the isolation to use
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	slot, ok := cat.Slot("norm.rmsnorm")
	if !ok {
		t.Fatal("no norm.rmsnorm in the catalog")
	}
	bundle := filepath.Join(searchable(t), "rmsnorm_cpp")
	testtree.Copy(t, filepath.Join("testdata", "rmsnorm_cpp"), bundle)
	root, err := worker.ValidatorRoot(filepath.Join(f.Run, "validator"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.Run, "candidate")
	req := worker.CandidateRequest{Protocol: worker.Protocol, Role: worker.RoleCandidate, WorkDir: dir,
		Contract: worker.ContractOf(slot), Variant: "default", Device: "cpu", DType: "float32", WorldSize: 1,
		BundleRoot: bundle, Source: "kernels/rmsnorm.py", Entry: "rmsnorm", Cases: []worker.CaseRef{}, TimeoutS: 60,
		CUDASources: []string{"csrc/rmsnorm_cpu.cu", "csrc/rmsnorm_common.cuh"}}
	out, err := worker.Run(context.Background(), f.Iso, worker.Spec{Python: f.Python, ValidatorRoot: root, WorkDir: dir,
		Request: req, Timeout: 2 * time.Minute, ReadOnly: []string{bundle}})
	if err != nil {
		t.Fatal(err)
	}
	var rec worker.CandidateRecord
	if err := worker.ReadResult(dir, &rec); err != nil {
		t.Fatalf("%s: %v (%s)", out.Describe(), err, worker.Tail(dir, worker.StderrFile, 2000))
	}
	if rec.Load == nil || rec.Load.OK || !strings.Contains(rec.Load.Error, "never compile") {
		t.Fatalf("load %+v, want a refusal: no sealed prebuild artifact", rec.Load)
	}
}
