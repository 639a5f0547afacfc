package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/evaluator/quality"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/internal/testtree"
)

// TestQualifyRefusesBadInputsBeforeRunning: usage errors are exit 1, a
// workload or policy file that does not decode is a rejection (exit 2,
// one JSON document with --json), and nothing runs.
func TestQualifyRefusesBadInputsBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	badWorkload := filepath.Join(dir, "w.hcl")
	os.WriteFile(badWorkload, []byte("workload \"x\" {\n  max_new_tokens = \"eight\"\n}\n"), 0o644)
	badPolicy := filepath.Join(dir, "p.hcl")
	os.WriteFile(badPolicy, []byte("speed_policy \"x\" {\n  version = 5\n}\n"), 0o644)
	notorch, shim := brokenInterpreters(t)
	otherModel := filepath.Join(dir, "other-model.quality-calibration.json")
	cal, err := quality.DefaultCalibration()
	if err != nil {
		t.Fatal(err)
	}
	cal.Model = strings.Repeat("1", 64)
	data, err := quality.MarshalCalibration(cal)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(otherModel, data, 0o644)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		// A machine's error, refused before anything runs: never the
		// abi screen's NO_DECISION (exit 3).
		{"an interpreter without torch", append(qualifyRepo("--python", notorch), "--out", dir), 1, notorch + ": it cannot import torch"},
		{"an interpreter the sandbox user cannot reach", append(qualifyRepo("--python", shim), "--out", dir), 1, "the sandbox user cannot reach it"},
		{"calibrate with an interpreter without torch", []string{"qualify", "calibrate", "--incumbent", repoDir("stacks/incumbent.hcl"),
			"--reference", repoDir("stacks/reference.hcl"), "--out", filepath.Join(dir, "c.json"), "--python", notorch}, 1, "CACHEON_PYTHON=/usr/bin/python3"},
		// Refused before any engine starts, naming the file and field.
		{"a quality calibration measured on another model", append(qualifyRepo("--quality-calibration", otherModel), "--out", dir, "--json"), 2,
			"other-model.quality-calibration.json: field model: the calibration was measured with model 111111111111"},
		{"no candidate", []string{"qualify", "--out", dir}, 1, "--candidate"},
		{"missing workload file", []string{"qualify", "--candidate", dir, "--out", dir, "--workload", filepath.Join(dir, "absent.hcl")}, 1, "absent.hcl"},
		{"bad workload", []string{"qualify", "--candidate", dir, "--out", dir, "--workload", badWorkload, "--json"}, 2, "w.hcl:1"},
		{"bad policy", []string{"qualify", "--candidate", dir, "--out", dir, "--policy", badPolicy, "--json"}, 2, "p.hcl"},
		{"calibrate with one round", []string{"qualify", "calibrate", "--rounds", "1", "--out", filepath.Join(dir, "c.json")}, 1, "at least 2 rounds"},
		{"a policy from a quality calibration", []string{"qualify", "calibrate", "--quality", "--out", filepath.Join(dir, "c.json"), "--policy-out", filepath.Join(dir, "p.out.hcl")}, 1, "only stock speed rounds"},
		{"a policy from a resolution run", []string{"qualify", "calibrate", "--candidate", dir, "--out", filepath.Join(dir, "c.json"), "--policy-out", filepath.Join(dir, "p.out.hcl")}, 1, "only stock speed rounds"},
		{"a policy from one engine's rounds", []string{"qualify", "calibrate", "--one-engine", "--out", filepath.Join(dir, "c.json"), "--policy-out", filepath.Join(dir, "p.out.hcl")}, 1, "takes no --quality or --policy-out"},
		{"one engine's quality rounds", []string{"qualify", "calibrate", "--one-engine", "--quality", "--out", filepath.Join(dir, "c.json")}, 1, "takes no --quality or --policy-out"},
		{"calibrate with a bad workload", []string{"qualify", "calibrate", "--out", filepath.Join(dir, "c.json"), "--workload", badWorkload, "--json"}, 2, "w.hcl:1"},
		{"reproduce a missing report", []string{"qualify", "--candidate", dir, "--out", dir, "--reproduce", filepath.Join(dir, "absent.json")}, 1, "absent.json"},
		{"regrade of a missing report", []string{"evidence", "regrade", filepath.Join(dir, "absent.json")}, 1, "absent.json"},
		{"regrade of garbage", []string{"evidence", "regrade", badPolicy, "--json"}, 2, "qualification report"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(strings.Join(c.args, " "), shim) && os.Geteuid() != 0 {
				t.Skip("the sandbox user is the caller itself unless the controller is root")
			}
			code, out, errOut := run(t, "", c.args...)
			if code != c.code || !strings.Contains(out+errOut, c.want) {
				t.Fatalf("exit %d (want %d); stdout %s; stderr %s; want %q", code, c.code, out, errOut, c.want)
			}
			if c.code == 2 && strings.Contains(strings.Join(c.args, " "), "--json") {
				var doc map[string]any
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatalf("--json refusal is not one document: %v\n%s", err, out)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err == nil {
		t.Fatal("a refused qualification wrote a report")
	}
}

// qualifyRepo is a qualify command line over the repository's own
// incumbent and reference, for a candidate of its contributions.
func qualifyRepo(extra ...string) []string {
	return append([]string{"qualify", "--candidate", repoDir("kernels/contributions/rmsnorm_torch"),
		"--incumbent", repoDir("stacks/incumbent.hcl"), "--reference", repoDir("stacks/reference.hcl")}, extra...)
}

// brokenInterpreters writes two interpreters no worker can use: notorch
// (a script that fails on import torch) and shim (one with torch, under a
// 0700 home, where a user-level manager keeps its shims).
func brokenInterpreters(t *testing.T) (notorch, shim string) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	notorch, shim = filepath.Join(dir, "python3-notorch"), filepath.Join(home, "python3")
	for path, body := range map[string]string{
		notorch: "#!/bin/sh\ncase \"$*\" in *'import torch'*) echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1;; esac\nexit 0\n",
		shim:    "#!/bin/sh\nexit 0\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return notorch, shim
}

// TestQualifyCalibratePolicy calibrates the speed stage on the CPU lane
// with --policy-out: the policy written, when the lanes support one, reads
// back with the calibration's thresholds and digest, and is what qualify
// --policy takes; when they do not (a loaded CPU drifts), no policy file
// exists and the document says why. Either way the calibration file is
// written and its digest is the document's.
func TestQualifyCalibratePolicy(t *testing.T) {
	t.Parallel()
	py := verifyPython(t)
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", "stacks/demo.hcl", "stacks/reference.hcl", "stacks/arena.json",
		"stacks/runtime.json", "stacks/substrate.json", "kernels/contributions", "kernels/demo")
	dir := t.TempDir()
	out, policy := filepath.Join(dir, "calibration.json"), filepath.Join(dir, "policy.hcl")
	code, stdout, stderr := run(t, "", "qualify", "calibrate", "--rounds", "2", "--workspace", ws,
		"--incumbent", filepath.Join(ws, "stacks", "demo.hcl"), "--reference", filepath.Join(ws, "stacks", "reference.hcl"),
		"--python", py, "--out", out, "--policy-out", policy, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	var doc struct {
		Digest        string  `json:"digest"`
		Supported     bool    `json:"supported"`
		NoiseFloor    string  `json:"noise_floor"`
		MinMargin     string  `json:"min_margin"`
		MaxNoise      string  `json:"max_noise"`
		PolicyFile    *string `json:"policy_file"`
		PolicyRefused *string `json:"policy_refused"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, stdout)
	}
	t.Logf("noise floor %s, supported %v, min_margin %s, max_noise %s", doc.NoiseFloor, doc.Supported, doc.MinMargin, doc.MaxNoise)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "policy_") {
		t.Fatalf("the calibration file carries the policy fields:\n%s", data)
	}
	if !strings.Contains(string(data), `"rounds_asked": 2,`) {
		t.Fatalf("the calibration file does not say how many rounds were asked for:\n%s", data)
	}
	var noise float64
	if _, err := fmt.Sscan(doc.NoiseFloor, &noise); err != nil {
		t.Fatal(err)
	}
	if 2*noise > 0.9 {
		if doc.PolicyFile != nil || doc.PolicyRefused == nil || !strings.Contains(*doc.PolicyRefused, "too noisy") {
			t.Fatalf("unsupported lanes: policy_file %v, policy_refused %v", doc.PolicyFile, doc.PolicyRefused)
		}
		if _, err := os.Stat(policy); !os.IsNotExist(err) {
			t.Fatalf("a policy file from unsupported lanes: %v", err)
		}
		return
	}
	if doc.PolicyFile == nil || *doc.PolicyFile != policy || doc.PolicyRefused != nil {
		t.Fatalf("supported lanes: policy_file %v, policy_refused %v", doc.PolicyFile, doc.PolicyRefused)
	}
	p, diags := speed.LoadPolicyFile(policy)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if p.CalibrationDigest != doc.Digest || speed.Format(p.MinMargin) != doc.MinMargin || speed.Format(p.MaxNoise) != doc.MaxNoise {
		t.Fatalf("policy %+v for calibration %+v", p, doc)
	}
}

// TestQualifyCalibrateQuality calibrates the pristine reference T on the
// CPU lane: two stock rounds of the repository's incumbent, scored by the
// reference stack, give a quality calibration that qualify reads back
// with --quality-calibration. The CPU lane is deterministic, so every
// measured stock statistic is 0 and every threshold is its floor.
func TestQualifyCalibrateQuality(t *testing.T) {
	t.Parallel()
	py := verifyPython(t)
	ws := testtree.Workspace(t, "../..", "catalog/targets.hcl", "stacks/incumbent.hcl", "stacks/reference.hcl",
		"stacks/arena.json", "stacks/runtime.json", "stacks/substrate.json", "kernels/contributions")
	out := filepath.Join(t.TempDir(), "quality-calibration.json")
	code, stdout, stderr := run(t, "", "qualify", "calibrate", "--quality", "--rounds", "3", "--workspace", ws,
		"--incumbent", filepath.Join(ws, "stacks", "incumbent.hcl"), "--reference", filepath.Join(ws, "stacks", "reference.hcl"),
		"--python", py, "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	var doc struct {
		Kind   string `json:"kind"`
		Digest string `json:"digest"`
		Lanes  string `json:"lanes"`
		Rounds []any  `json:"rounds"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := quality.ParseCalibration(out, data)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := c.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "quality-calibration" || doc.Digest != digest || doc.Lanes != "cpu" || len(doc.Rounds) != 3 {
		t.Fatalf("document %+v, file digest %s", doc, digest)
	}
	for name, m := range c.Metrics {
		if m.MeasuredDrift != "0" || m.StockEnvelope != m.EnvelopeFloor || m.CandidateDelta != m.DeltaFloor {
			t.Errorf("%s on the deterministic CPU lane: %+v", name, m)
		}
	}
	// The embedded default is this run: the default model, workload and
	// reference on the CPU lane, which is deterministic. Rewrite it with
	//   CACHEON_QUALITY_CALIBRATE=1 go test ./tools/cli -run TestQualifyCalibrateQuality -count=1
	const embedded = "../../evaluator/quality/defaults/cpu.quality-calibration.json"
	if os.Getenv("CACHEON_QUALITY_CALIBRATE") != "" {
		if err := os.WriteFile(embedded, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", embedded)
	} else if def, err := quality.DefaultCalibration(); err != nil {
		t.Fatal(err)
	} else if want, _ := def.Digest(); want != digest {
		t.Errorf("the embedded quality calibration (%s) is not what the CPU run computes (%s); rerun with CACHEON_QUALITY_CALIBRATE=1:\n%s", want, digest, data)
	}
	// A speed candidate has no place in a quality calibration.
	if code, _, stderr := run(t, "", "qualify", "calibrate", "--quality", "--candidate", ws, "--out", out); code != 1 || !strings.Contains(stderr, "no --candidate") {
		t.Fatalf("--quality with --candidate: exit %d %s", code, stderr)
	}
}
