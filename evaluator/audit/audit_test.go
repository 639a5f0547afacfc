package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/evaluator/engine/enginetest"
	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/verify"
	"github.com/cacheon/engine/evaluator/worker"
	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/models/testmodel"
	"github.com/cacheon/engine/stacks/materialize"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/stacks/stack"
)

// interpreter is the test interpreter, checked once for the package (in
// TestMain) rather than by every test that makes an engine fixture: the
// check is an interpreter start and a torch import.
var interpreter enginetest.Interpreter

func TestMain(m *testing.M) {
	interpreter = enginetest.CheckInterpreter()
	os.Exit(m.Run())
}

// newFixture is enginetest.New on the interpreter TestMain checked.
func newFixture(t *testing.T) enginetest.Fixture {
	t.Helper()
	return enginetest.NewWith(t, interpreter)
}

// planned plans candidate over the repository's incumbent (in a copy of
// the workspace) and returns the plan with both trees kept, the
// workspace and the catalog.
func planned(t *testing.T, f enginetest.Fixture, candidate string) (*plan.Result, string, *catalog.Catalog) {
	t.Helper()
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", "stacks/incumbent.hcl", "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json", "kernels/contributions", "kernels/fixtures")
	path := filepath.Join(ws, "stacks", "incumbent.hcl")
	sf, _, diags := stack.Load(path)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	payload := contribution.PayloadOptions{Closure: contribution.PythonClosure, CUDACheck: contribution.CUDAIncludeCheck, PatcherDigests: map[string]string{}}
	a, err := stack.Assemble(sf, stack.Sources{}, cat, payload)
	if err != nil {
		t.Fatal(err)
	}
	res, err := plan.Run(context.Background(), plan.Request{Incumbent: a, IncumbentPath: path,
		CandidateDir: filepath.Join(ws, filepath.FromSlash(candidate)), Materialize: materialize.Options{Catalog: cat, Payload: payload},
		TreeDir: filepath.Join(f.Run, "trees")})
	if err != nil {
		t.Fatal(err)
	}
	return res, ws, cat
}

// contractsOf are the catalog contracts of the target's member slots.
func contractsOf(t *testing.T, cat *catalog.Catalog, target string) []worker.SlotContract {
	t.Helper()
	tg, ok := cat.Target(target)
	if !ok {
		t.Fatalf("no target %s", target)
	}
	var cs []worker.SlotContract
	for _, m := range tg.Members {
		s, ok := cat.Slot(m)
		if !ok {
			t.Fatalf("no slot %s", m)
		}
		cs = append(cs, worker.ContractOf(s))
	}
	return cs
}

// auditWorkload is a workload of two batches whose shortest prompt has
// five tokens (two of them, so the tie-break decides).
func auditWorkload() *workload.Workload {
	return &workload.Workload{Name: "audit-test", MaxNewTokens: 4, Warmup: 1,
		PromptBatches: [][][]int{{{5, 6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}}, {{9, 8, 7, 6, 5}, {1, 1, 1, 1, 1, 1, 1}}}}
}

func options(t *testing.T, f enginetest.Fixture, candidate string) Options {
	t.Helper()
	res, _, cat := planned(t, f, candidate)
	return Options{Python: f.Python, Root: f.Root, Tree: res.CandidateTree, Model: f.Model, Device: "cpu",
		WorkDir: filepath.Join(f.Run, "audit"), Isolation: f.Iso, Workload: auditWorkload(),
		Contracts:     contractsOf(t, cat, res.Candidate.Transition.TargetID),
		Secret:        []byte(strings.Repeat("s", MinSecretBytes)),
		SelectedDelta: res.Inspection.SelectedDeltaDigest.String(),
		StartTimeout:  5 * time.Minute, BatchTimeout: 2 * time.Minute,
		Progress: func(format string, args ...any) { t.Logf(format, args...) }}
}

// TestAuditOnTheCPU audits an honest contribution and the fixtures that
// cheat at the seam, each on a real engine session and a real judge.
func TestAuditOnTheCPU(t *testing.T) {
	cases := []struct {
		candidate string
		decision  string
		reason    []string // substrings of the reason
		moe       float64  // served on a MoE model whose experts are scaled by this (0: the dense model)
	}{
		{"kernels/contributions/rmsnorm_torch", Pass, []string{"1 slot(s) × 1 rank(s) audited"}, 0},
		{"kernels/fixtures/rmsnorm_wrong_after_n_calls", Fail, []string{"audit violation: norm.rmsnorm rank 0 call 40:", "bar 0.995"}, 0},
		{"kernels/fixtures/rmsnorm_lower_precision", Fail, []string{"audit violation: norm.rmsnorm rank 0 call 0:", "bar 0.995"}, 0},
		{"kernels/fixtures/rmsnorm_mutates_input", Fail, []string{"audit violation: norm.rmsnorm rank 0 call 40:", "inputs x changed by the call"}, 0},
		// Integrity class 4: every other output left unwritten after call
		// 40. The recorder poisons outputs before every call, so what the
		// judge reads there is the poison, never a stale answer.
		{"kernels/fixtures/rmsnorm_stale_output", Fail, []string{"audit violation: norm.rmsnorm rank 0 call 41:", "non-finite where finite expected"}, 0},
		// The reverse fixture: honest exactly when audited. The audit passes
		// it (the kernel can tell it is audited); T must catch it.
		{"kernels/fixtures/rmsnorm_wrong_unless_audited", Pass, []string{"1 slot(s) × 1 rank(s) audited"}, 0},
		// Honest on exactly the sampled calls where it finds the sample's
		// seed and rate in its environment; they are not there (they come
		// on the request pipe), so it cheats from call 40 and is recorded.
		{"kernels/fixtures/rmsnorm_honest_when_sampled", Fail, []string{"audit violation: norm.rmsnorm rank 0 call 40:", "bar 0.995"}, 0},
		// Attention decode: the judge recomputes it from the recorded q, KV
		// cache and sequence lengths; calls 0–39 are honest and pass it, the
		// first wrong one is the violation.
		{"kernels/fixtures/decode_attention_wrong_after_n_calls", Fail, []string{"audit violation: attention.decode rank 0 call 40:"}, 0},
		// The MoE expert slot, on a MoE model (moeModel). The candidates'
		// prepare keeps the experts transposed, so a record holds no
		// weights the judge could use: it names the layer its prepared
		// state came from, and the judge reads that layer's experts from
		// the model. The fixture skips its experts after call 40.
		{"kernels/contributions/moe_fused_experts_torch", Pass, []string{"1 slot(s) × 1 rank(s) audited"}, 5},
		{"kernels/fixtures/moe_wrong_after_n_calls", Fail, []string{"audit violation: moe.fused_experts rank 0 call 40:"}, 5},
		// Unscaled, the experts' outputs (about 0.002) lie inside
		// bfloat16's atol: the judge holds the matched elements to rtol
		// of the truth together, so the honest kernel still passes and one
		// that leaves out each token's last expert fails from its first call.
		{"kernels/contributions/moe_fused_experts_torch", Pass, []string{"1 slot(s) × 1 rank(s) audited"}, 1},
		{"kernels/fixtures/moe_drops_last_expert", Fail, []string{"audit violation: moe.fused_experts rank 0 call 0:", "cannot tell an output from zero"}, 1},
	}
	for _, c := range cases {
		name := filepath.Base(c.candidate)
		if c.moe == 1 {
			name += "_unscaled"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			o := options(t, f, c.candidate)
			if c.moe != 0 {
				o.Model = moeModel(t, f, c.moe)
			}
			ev, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s by %s: %s (engine %s s, judge %s s)", ev.Decision, ev.DecidedBy, ev.Reason, ev.EngineSeconds, ev.JudgeSeconds)
			if ev.Decision != c.decision || ev.DecidedBy != ByGate {
				t.Fatalf("decision %s by %s (%s), want %s by the gate", ev.Decision, ev.DecidedBy, ev.Reason, c.decision)
			}
			for _, want := range c.reason {
				if !strings.Contains(ev.Reason, want) {
					t.Errorf("reason %q lacks %q", ev.Reason, want)
				}
			}
			if len(ev.Receipts) != 1 || ev.Receipts[0].N < DefaultMinCalls || ev.Receipts[0].N != ev.Receipts[0].Calls {
				t.Fatalf("receipts %+v", ev.Receipts)
			}
			if ev.Receipts[0].Origins["stock"] != 0 {
				t.Errorf("recorded calls ran stock: %v", ev.Receipts[0].Origins)
			}
			store, err := evidence.Open(filepath.Join(t.TempDir(), "evidence"), 0)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Publish(store, ev)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Regrade(store, ref); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// moeModel writes and provisions a MoE test model (4 experts, top 2, two
// layers) beside f's dense one, its expert weights scaled by scale. At
// the test model's std of 0.02 an expert's output is about 0.002, far
// inside bfloat16's atol of 0.02, where only the judge's rule for a truth
// below atol tells outputs apart; scaled by 5, the outputs are about 0.5,
// and the elementwise rule alone matches an honest kernel only if the
// judge recomputes with the very experts the engine served.
func moeModel(t *testing.T, f enginetest.Fixture, scale float64) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(f.Model), "moe-model")
	if _, err := testmodel.Write(dir, testmodel.DefaultShape(true), 3); err != nil {
		t.Fatal(err)
	}
	scaling := `import sys
sys.path.insert(0, sys.argv[1])
from cacheon_substrate import safetensors as st
path, scale = sys.argv[2] + "/model.safetensors", float(sys.argv[3])
t = st.load(path)
st.save(path, {k: (v.float() * scale).to(v.dtype) if ".experts." in k else v for k, v in t.items()})
`
	if out, err := exec.Command(f.Python, "-c", scaling, f.Root, dir, strconv.FormatFloat(scale, 'g', -1, 64)).CombinedOutput(); err != nil {
		t.Fatalf("scaling the experts: %v\n%s", err, out)
	}
	if _, err := models.Provision(dir, models.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// smallBudget is a recorder budget that holds far fewer records than
// the calls the CPU audit makes: a norm.rmsnorm prefill record of the
// test model is about 2.4 KiB, the capacity counts 256 bytes more for a
// later header (HEADER_SLACK in cacheon_substrate/audit.py), and the
// audit makes 330 norm.rmsnorm
// calls (five a forward pass, 66 passes), so about 36 records fit, as a
// real model's calls outgrow the default 1 GiB (the MLP slot of an
// 8-layer model on an H200). The tests assert that the sample is smaller
// than the calls and at least min_calls, so a change in record size
// shows.
const smallBudget = 96 << 10

// TestAuditUnderASmallBudget: a budget far below what every call would
// take is no NO_DECISION; the recorder keeps a uniform sample of the
// calls, drawn from the secret seed, and the judge requires exactly that
// sample. An honest kernel passes; a kernel honest for its first 40
// calls, and one honest for its first 200 (more calls than the budget
// holds, so records kept in call order would all be honest), fail.
func TestAuditUnderASmallBudget(t *testing.T) {
	cases := []struct {
		candidate string
		decision  string
		reason    []string
	}{
		{"kernels/contributions/rmsnorm_torch", Pass, []string{"1 slot(s) × 1 rank(s) audited"}},
		{"kernels/fixtures/rmsnorm_wrong_after_n_calls", Fail, []string{"audit violation: norm.rmsnorm rank 0 call ", "bar 0.995"}},
		{"kernels/fixtures/rmsnorm_wrong_after_the_budget", Fail, []string{"audit violation: norm.rmsnorm rank 0 call ", "bar 0.995"}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.candidate), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			o := options(t, f, c.candidate)
			o.BudgetBytes = smallBudget
			ev, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s by %s: %s (engine %s s, judge %s s)", ev.Decision, ev.DecidedBy, ev.Reason, ev.EngineSeconds, ev.JudgeSeconds)
			if ev.Decision != c.decision || ev.DecidedBy != ByGate {
				t.Fatalf("decision %s by %s (%s), want %s by the gate", ev.Decision, ev.DecidedBy, ev.Reason, c.decision)
			}
			for _, want := range c.reason {
				if !strings.Contains(ev.Reason, want) {
					t.Errorf("reason %q lacks %q", ev.Reason, want)
				}
			}
			if ev.Policy.BudgetBytes != smallBudget {
				t.Errorf("the evidence's policy has budget %d, the audit ran under %d", ev.Policy.BudgetBytes, smallBudget)
			}
			if c.decision == Pass {
				r := ev.Receipts[0]
				if r.N < DefaultMinCalls || r.N >= r.Calls {
					t.Fatalf("judged %d of %d calls: the budget should keep fewer than all and at least %d", r.N, r.Calls, DefaultMinCalls)
				}
			}
		})
	}
}

// TestARecordOverItsShareIsNoDecision: a budget that cannot hold one
// record of the slot is the validator's shortfall, NO_DECISION by the
// records, and the reason names the slot, the call and the sizes.
func TestARecordOverItsShareIsNoDecision(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := options(t, f, "kernels/contributions/rmsnorm_torch")
	o.BudgetBytes = 512
	ev, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := "the audit records outgrew the recorder's budget: rank 0: norm.rmsnorm stopped recording at call 0: its record of "
	if ev.Decision != NoDecision || ev.DecidedBy != ByRecords || !strings.Contains(ev.Reason, want) ||
		!strings.Contains(ev.Reason, "is over its share of 512 bytes (a budget of 512 bytes over 1 slot(s))") {
		t.Fatalf("%s by %s: %s", ev.Decision, ev.DecidedBy, ev.Reason)
	}
}

// TestTheJudgeRecomputesTheSample: under a budget that keeps a sample,
// the judge recomputes which calls the sample keeps from the seed, the
// rate, the budget, the call count and the first record, and refuses
// records or an index that differ: a kept record removed, a record the
// sample does not keep, a kept call exchanged for another, an index that
// shrinks the sample or its capacity, or claims an overflow that is none.
func TestTheJudgeRecomputesTheSample(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := options(t, f, "kernels/contributions/rmsnorm_torch")
	o.BudgetBytes = smallBudget
	ev, err := Run(context.Background(), o)
	if err != nil || ev.Decision != Pass {
		t.Fatalf("honest run: %v %+v", err, ev)
	}
	recDir := filepath.Join(o.WorkDir, "engine", "audit")
	seed, err := Seed(o.Secret, o.SelectedDelta)
	if err != nil {
		t.Fatal(err)
	}
	pol := Policy{MinCalls: DefaultMinCalls, RatePPM: DefaultRatePPM, ExpectedSlots: []string{"norm.rmsnorm"}, WorldSize: 1, BudgetBytes: smallBudget}
	indexPath := filepath.Join(recDir, "index.json")
	index, err := os.ReadFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	var idx map[string]any
	if err := json.Unmarshal(index, &idx); err != nil {
		t.Fatal(err)
	}
	var kept []int
	for _, c := range idx["kept"].(map[string]any)["norm.rmsnorm"].([]any) {
		kept = append(kept, int(c.(float64)))
	}
	calls := int(idx["calls"].(map[string]any)["norm.rmsnorm"].(float64))
	if len(kept) < DefaultMinCalls || len(kept) >= calls || kept[0] != 0 || kept[len(kept)-1] < calls/2 {
		t.Fatalf("kept %v of %d calls: want a sample of the whole run, smaller than it", kept, calls)
	}
	name := func(c int) string { return filepath.Join(recDir, fmt.Sprintf("norm.rmsnorm.%07d.rec", c)) }
	notKept := 1
	for slices.Contains(kept, notKept) {
		notKept++
	}
	victim := kept[len(kept)/2]
	records := map[int][]byte{}
	for _, c := range kept {
		if records[c], err = os.ReadFile(name(c)); err != nil {
			t.Fatal(err)
		}
	}
	relabel := func(data []byte, from, to int) []byte {
		return []byte(strings.Replace(string(data), fmt.Sprintf(`"call":%d,`, from), fmt.Sprintf(`"call":%d,`, to), 1))
	}
	editIndex := func(t *testing.T, edit func(map[string]any)) {
		var doc map[string]any
		if err := json.Unmarshal(index, &doc); err != nil {
			t.Fatal(err)
		}
		edit(doc)
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		write(t, indexPath, data)
	}
	keptWithout := func(drop, add int) []any {
		var out []any
		for _, c := range kept {
			if c != drop {
				out = append(out, c)
			}
		}
		if add >= 0 {
			out = append(out, add)
			slices.SortFunc(out, func(a, b any) int { return a.(int) - b.(int) })
		}
		return out
	}
	cases := []struct {
		name   string
		mutate func(t *testing.T)
		want   string
	}{
		{"kept_record_removed", func(t *testing.T) { os.Remove(name(victim)) }, "records are missing (first ['norm.rmsnorm." + fmt.Sprintf("%07d", victim)},
		{"first_record_removed", func(t *testing.T) { os.Remove(name(0)) }, "the first sampled call's record norm.rmsnorm.0000000.rec is missing"},
		{"extra_record", func(t *testing.T) { write(t, name(notKept), relabel(records[victim], victim, notKept)) }, "1 unexpected"},
		{"call_exchanged", func(t *testing.T) {
			os.Remove(name(victim))
			write(t, name(notKept), relabel(records[victim], victim, notKept))
			editIndex(t, func(d map[string]any) { d["kept"].(map[string]any)["norm.rmsnorm"] = keptWithout(victim, notKept) })
		}, "kept.norm.rmsnorm lists"},
		{"sample_shrunk", func(t *testing.T) {
			os.Remove(name(victim))
			editIndex(t, func(d map[string]any) { d["kept"].(map[string]any)["norm.rmsnorm"] = keptWithout(victim, -1) })
		}, "kept.norm.rmsnorm lists"},
		{"capacity_forged", func(t *testing.T) {
			editIndex(t, func(d map[string]any) { d["capacity"].(map[string]any)["norm.rmsnorm"] = DefaultMinCalls })
		}, "capacity.norm.rmsnorm is 32"},
		// An overflow claimed where the run had none: past the last call,
		// or early, which leaves kept records the shortened sample would
		// not hold.
		{"overflow_after_the_calls", func(t *testing.T) {
			editIndex(t, func(d map[string]any) {
				d["overflow"] = map[string]any{"norm.rmsnorm": map[string]any{"call": calls, "record_bytes": 100, "kept_bytes": smallBudget + 1, "limit": smallBudget}}
			})
		}, fmt.Sprintf("overflow.norm.rmsnorm names call %d, which is not a sampled call", calls)},
		{"overflow_shortens_the_sample", func(t *testing.T) {
			editIndex(t, func(d map[string]any) {
				d["overflow"] = map[string]any{"norm.rmsnorm": map[string]any{"call": victim, "record_bytes": 100, "kept_bytes": smallBudget + 1, "limit": smallBudget}}
			})
		}, "kept.norm.rmsnorm lists"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for call, data := range records {
				write(t, name(call), data)
			}
			os.Remove(name(notKept))
			write(t, indexPath, index)
			c.mutate(t)
			oo := o
			oo.WorkDir = filepath.Join(f.Run, "rejudge-"+c.name)
			res, by, d, r := judge(context.Background(), oo, seed, pol, recDir)
			if d != "" {
				t.Fatalf("judge: %s %s %s", by, d, r)
			}
			if len(res.RecordErrors) != 1 || !strings.Contains(res.RecordErrors[0].Reason, c.want) {
				t.Fatalf("record errors %+v, want one with %q", res.RecordErrors, c.want)
			}
		})
	}
}

// TestVerifyPassesTheAuditFixtures is the point of the audit fixtures:
// verify's short cases (at float32, as the qualification's ABI screen
// runs them) pass every one of them.
func TestVerifyPassesTheAuditFixtures(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", "kernels/fixtures")
	for _, name := range []string{"rmsnorm_wrong_after_n_calls", "rmsnorm_wrong_after_the_budget", "rmsnorm_lower_precision", "rmsnorm_mutates_input", "rmsnorm_wrong_unless_audited",
		"rmsnorm_honest_when_sampled", "decode_attention_wrong_after_n_calls", "moe_wrong_after_n_calls"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if strings.HasPrefix(name, "rmsnorm_") {
				// Every catalog shape of norm.rmsnorm but the one of 4096
				// tokens, which alone made most of each run (16M elements
				// a tensor): these fixtures cheat after a number of calls
				// or only in bfloat16, never by the size of a call, and
				// verify's cases stay far below the calls they wait for
				// (as in evaluator/verify's tests of the same fixtures).
				testtree.DeclareTokenBound(t, filepath.Join(ws, "kernels", "fixtures", name), 512)
			}
			if err := os.MkdirAll(filepath.Join(f.Run, "verify-"+name), 0o755); err != nil {
				t.Fatal(err)
			}
			rep, err := verify.Run(context.Background(), filepath.Join(ws, "kernels", "fixtures", name), verify.Options{
				Device: "cpu", DType: "float32", Python: f.Python, Timeout: 5 * time.Minute,
				Unisolated: f.Iso.Unsafe, WorkDir: filepath.Join(f.Run, "verify-"+name)})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verdict != verify.Pass {
				t.Fatalf("verify refused %s: %s %s", name, rep.Verdict, rep.Reason)
			}
		})
	}
}

// TestRecordsAreHostileInput: records the candidate's engine left behind
// that are truncated, forged or missing fail the candidate, with a reason
// naming what is wrong; the judge never trusts them.
func TestRecordsAreHostileInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := options(t, f, "kernels/contributions/rmsnorm_torch")
	ev, err := Run(context.Background(), o)
	if err != nil || ev.Decision != Pass {
		t.Fatalf("honest run: %v %+v", err, ev)
	}
	recDir := filepath.Join(o.WorkDir, "engine", "audit")
	seed, err := Seed(o.Secret, o.SelectedDelta)
	if err != nil {
		t.Fatal(err)
	}
	pol := Policy{MinCalls: DefaultMinCalls, RatePPM: DefaultRatePPM, ExpectedSlots: []string{"norm.rmsnorm"}, WorldSize: 1, BudgetBytes: DefaultBudgetBytes}
	rec := filepath.Join(recDir, "norm.rmsnorm.0000003.rec")
	orig, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(recDir, "activation.silu_and_mul.0000000.rec")
	index, err := os.ReadFile(filepath.Join(recDir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(t *testing.T)
		want   string
	}{
		{"truncated", func(t *testing.T) { write(t, rec, orig[:len(orig)-3]) }, "do not hold"},
		{"header_overrun", func(t *testing.T) { write(t, rec, append([]byte{0xff, 0xff, 0xff, 0, 0, 0, 0, 0}, orig[8:]...)) }, "header length"},
		{"missing", func(t *testing.T) { os.Remove(rec) }, "records are missing"},
		{"no_index", func(t *testing.T) { os.Remove(filepath.Join(recDir, "index.json")) }, "index.json is missing"},
		{"forged_index", func(t *testing.T) {
			write(t, filepath.Join(recDir, "index.json"), []byte(strings.Replace(string(index), `"overflow": {}`, `"overflow": {}, "pass": true`, 1)))
		}, "not an audit index"},
		{"stray", func(t *testing.T) { write(t, stray, orig) }, "records of no expected slot"},
		{"relabelled", func(t *testing.T) {
			write(t, rec, []byte(strings.Replace(string(orig), `"call":3`, `"call":4`, 1)))
		}, "header names"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			write(t, rec, orig)
			write(t, filepath.Join(recDir, "index.json"), index)
			os.Remove(stray)
			c.mutate(t)
			wd := filepath.Join(f.Run, "rejudge-"+c.name)
			oo := o
			oo.WorkDir = wd
			res, by, d, r := judge(context.Background(), oo, seed, pol, recDir)
			if d != "" {
				t.Fatalf("judge: %s %s %s", by, d, r)
			}
			if len(res.RecordErrors) != 1 || !strings.Contains(res.RecordErrors[0].Reason, c.want) {
				t.Fatalf("record errors %+v, want one with %q", res.RecordErrors, c.want)
			}
		})
	}
}

// TestASlotTheJudgeCannotRecomputeIsNoDecision: an expected slot whose
// truth this validator cannot recompute from records is its own
// shortfall, never the candidate's FAIL and never a PASS.
func TestASlotTheJudgeCannotRecomputeIsNoDecision(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	o := options(t, f, "kernels/contributions/rmsnorm_torch")
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	o.Contracts = append(o.Contracts, contractsOf(t, cat, "moe.fused_experts_reduce")...)
	ev, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Decision != NoDecision || ev.DecidedBy != ByJudge || !strings.Contains(ev.Reason, "cannot audit slot(s) moe.fused_experts_reduce") {
		t.Fatalf("%s by %s: %s", ev.Decision, ev.DecidedBy, ev.Reason)
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	os.Remove(path)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEngineFaultsAreTheCandidates: an audit engine taken over by its
// kernel — one that dies at start, one that serves but records nothing,
// one that refuses a batch — is the candidate's FAIL, decided before any
// judge runs.
func TestEngineFaultsAreTheCandidates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tree := filepath.Join(f.Run, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	// An engine that answers every phase honestly and at a believable
	// pace, and records nothing.
	serveTokens := `batch = None
for line in inp:
    r = json.loads(line)
    if "id" not in r:
        continue  # the session's first line: the sample's seed and rate
    time.sleep(0.01)
    if r.get("op") == "batch":
        batch = r
        send({"id": r["id"], "phase": "prefill", "seconds": 0.005})
    else:
        send({"id": r["id"], "calls": {}, "tokens": [[1] * batch["max_new_tokens"] for _ in batch["prompts"]], "seconds": 0.005})
`
	cases := []struct {
		name, source, by, reason string
	}{
		{"dies_at_start", "import sys\nsys.exit(3)\n", ByEngine, "audit engine start: engine start"},
		{"records_nothing", enginetest.Prelude + enginetest.ReadyFrame + serveTokens, ByRecords, "left no audit record directory"},
		{"refuses_a_batch", enginetest.Prelude + enginetest.ReadyFrame +
			`serve(lambda b: send({"id": b["id"], "error": "RuntimeError: no"}))
`, ByEngine, "audit engine batch 0: engine refused_batch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := Options{Python: f.Python, Root: f.HostileRoot(t, c.name, c.source), Tree: tree, Model: f.Model, Device: "cpu",
				WorkDir: filepath.Join(f.Run, "audit-"+c.name), Isolation: f.Iso, Workload: auditWorkload(),
				Contracts:     []worker.SlotContract{{Slot: "norm.rmsnorm"}},
				Secret:        []byte(strings.Repeat("s", MinSecretBytes)),
				SelectedDelta: strings.Repeat("0", 64), StartTimeout: time.Minute, BatchTimeout: time.Minute}
			ev, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Decision != Fail || ev.DecidedBy != c.by || !strings.Contains(ev.Reason, c.reason) {
				t.Fatalf("%s by %s: %s; want FAIL by %s with %q", ev.Decision, ev.DecidedBy, ev.Reason, c.by, c.reason)
			}
		})
	}
}

// TestOutputPositions: the recorder is told where each expected slot's
// outputs sit in its call, from the catalog contracts; an output the
// call does not name is refused, not silently left unpoisoned.
func TestOutputPositions(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		contracts []worker.SlotContract
		want      string // "" for a refusal
	}{
		{"catalog", append(contractsOf(t, cat, "collective.ar_residual_rmsnorm"), contractsOf(t, cat, "norm.rmsnorm")...),
			"collective.ar_residual_rmsnorm=4+5;norm.rmsnorm=2"},
		{"no outputs", []worker.SlotContract{{Slot: "norm.rmsnorm"}}, "norm.rmsnorm="},
		{"output outside the call", []worker.SlotContract{{Slot: "norm.rmsnorm", Call: []string{"x", "out"}, Outputs: []string{"y"}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := outputPositions(c.contracts)
			if c.want == "" {
				if !reject.Is(err) {
					t.Fatalf("got %q, %v; want a rejection", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
