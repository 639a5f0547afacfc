package verify

import (
	"os"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/worker"
)

// The CUDA graph gate can only be exercised on a GPU host: these tests run
// when CACHEON_TEST_DEVICE=cuda (and the test interpreter has CUDA torch).
func requireCUDA(t *testing.T) {
	t.Helper()
	if os.Getenv("CACHEON_TEST_DEVICE") != "cuda" {
		t.Skip("CUDA verify tests run with CACHEON_TEST_DEVICE=cuda on a GPU host")
	}
	testPython(t)
}

func TestVerifyCUDAGraphGate(t *testing.T) {
	requireCUDA(t)
	cases := []struct {
		name, slot, entry, source, metadata string
		verdict, want, graph                string
	}{
		{"graph-safe op passes", "activation.silu_and_mul", "silu_and_mul", goodSilu, smallSilu, Pass, "", GraphRequired},
		{"host sync breaks capture", "activation.silu_and_mul", "silu_and_mul", siluHeader + `
def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    if float(x.abs().sum()) < 0:
        return
    out.copy_(F.silu(x[:, :d]) * x[:, d:])
`, smallSilu, Fail, "CUDA graph capture failed", GraphRequired},
		{"capture-time output replayed", "activation.silu_and_mul", "silu_and_mul", siluHeader + `
_frozen = {}

def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    if torch.cuda.is_current_stream_capturing():
        # Bake the answer for the inputs seen at capture into the graph.
        out.copy_(_frozen[out.data_ptr()])
        return
    y = F.silu(x[:, :d]) * x[:, d:]
    _frozen[out.data_ptr()] = y.clone()
    out.copy_(y)
`, smallSilu, Fail, "graph replay 0", GraphRequired},
		{"block without graph_safe skips the gate", "attention.decode", "decode", `import torch

def decode(q, k, v, seq_lens, sm_scale, out):
    B, Hq, D = q.shape
    g = Hq // k.shape[2]
    for b in range(B):
        n = int(seq_lens[b])
        kk = k[b, :n].float().repeat_interleave(g, dim=1)
        vv = v[b, :n].float().repeat_interleave(g, dim=1)
        s = torch.einsum("hd,shd->hs", q[b].float(), kk) * sm_scale
        out[b].copy_(torch.einsum("hs,shd->hd", s.softmax(-1), vv).to(out.dtype))
`, "", Pass, "", GraphNotRequired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := run(t, oneOpBundle(t, tc.slot, tc.entry, "", tc.source, tc.metadata), Options{Device: "cuda", DType: "bfloat16"})
			row := rep.Rows[0]
			if row.Verdict != tc.verdict || !strings.Contains(row.Reason, tc.want) || row.Graph != tc.graph {
				t.Fatalf("row %s graph %s reason %q, want %s graph %s mentioning %q", row.Verdict, row.Graph, row.Reason,
					tc.verdict, tc.graph, tc.want)
			}
			if tc.verdict == Pass && tc.graph == GraphRequired {
				for _, c := range row.Cases {
					if c.Verdict == Pass && (c.Graph != "captured" || len(c.Phases) != 6) {
						t.Fatalf("case %d: graph %q with %d phases, want a capture and 6 checked calls (3 eager, 3 replays)", c.Index, c.Graph, len(c.Phases))
					}
				}
			}
		})
	}
}

// TestVerifyCUDAWitness: on a GPU the checker owns the calls' device
// memory and the reference judges its copies, so the kernels that forge
// the harness's own checks FAIL on what the validator's memory holds, and
// an honest kernel passes every call, the graph replays included.
func TestVerifyCUDAWitness(t *testing.T) {
	requireCUDA(t)
	cases := []struct {
		name, source, verdict, want string
	}{
		{"honest kernel passes", goodSilu, Pass, ""},
		{"mutates input and forges the check", forgesInputCheck, Fail, "input x was modified in place"},
		{"writes elsewhere and forges the dump", forgesOutputDump, Fail, "never written (still the NaN poison)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var progress strings.Builder
			rep := run(t, oneOpBundle(t, "activation.silu_and_mul", "silu_and_mul", "", tc.source, smallSilu),
				Options{Device: "cuda", DType: "bfloat16", Progress: &progress})
			row := rep.Rows[0]
			if row.Verdict != tc.verdict || !strings.Contains(row.Reason, tc.want) {
				t.Fatalf("verdict %s reason %q, want %s with %q\n%s", row.Verdict, row.Reason, tc.verdict, tc.want, progress.String())
			}
			checker := false
			for _, w := range row.Workers {
				checker = checker || (w.Role == worker.RoleChecker && w.Exit == "exited with code 0")
			}
			if !checker {
				t.Fatalf("no checker worker that exited cleanly among %+v", row.Workers)
			}
			t.Logf("%s: %s", tc.name, progress.String())
		})
	}
}
