package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// mainEnv makes the test binary run the command line instead of the
// tests, so that tests can run cacheon as a real subprocess (to kill it,
// or to give it another working directory, umask or environment) without
// a separate build step.
const mainEnv = "CACHEON_CLI_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(Main(os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	}
	// The tests and the commands they run keep their caches in a private
	// directory, never the user's.
	cache, err := os.MkdirTemp("", "cacheon-cli-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(enginecli.CacheEnv, cache)
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

// subprocess is one cacheon run in a child process.
type subprocess struct {
	dir   string   // working directory
	umask int      // applied through the shell before exec
	env   []string // extra environment
	args  []string
}

func (p subprocess) command(t *testing.T) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("umask %03o; exec \"$@\"", p.umask)
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh", self}, p.args...)...)
	cmd.Dir = p.dir
	cmd.Env = append(append(commandEnv(os.Environ()), mainEnv+"=1"), p.env...)
	return cmd
}

// commandEnv is env without Bazel's test variables: seeing them, the test
// main of a Bazel-built test binary changes into the runfiles directory
// before TestMain runs, and the command line must start in its own
// working directory.
func commandEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TEST_SRCDIR=") && !strings.HasPrefix(kv, "TEST_WORKSPACE=") {
			out = append(out, kv)
		}
	}
	return out
}

func (p subprocess) run(t *testing.T) (int, string, string) {
	t.Helper()
	cmd := p.command(t)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

const testDigest = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// workspace is a repository root with the default catalog, the given
// example bundles and a stacks/ directory.
func workspace(t *testing.T, parent string, bundles ...string) string {
	t.Helper()
	ws := filepath.Join(parent, "repo")
	must(t, os.MkdirAll(filepath.Join(ws, "catalog"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "stacks"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "MODULE.bazel"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "catalog", "targets.hcl"), catalog.DefaultSource(), 0o644))
	for _, b := range bundles {
		copyDir(t, filepath.Join("..", "..", "kernels", filepath.FromSlash(b)), filepath.Join(ws, "kernels", filepath.FromSlash(b)))
	}
	return ws
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	must(t, err)
}

// stackFile renders an evaluation stack with one contribution block per
// "target=source" pair.
func stackFile(kind string, pairs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stack %q {\n  kind    = %q\n  catalog = \"//catalog:targets.hcl\"\n", "test", kind)
	fmt.Fprintf(&b, "  substrate {\n    name = \"cacheon-substrate\"\n    base_engine_digest = %q\n    runtime_digest = %q\n  }\n", testDigest, testDigest)
	if kind != "release" {
		fmt.Fprintf(&b, "  arena {\n    digest = %q\n  }\n", testDigest)
	}
	for _, p := range pairs {
		target, src, _ := strings.Cut(p, "=")
		fmt.Fprintf(&b, "  contribution %q {\n    source = %q\n    attribution_digest = %q\n  }\n", target, src, testDigest)
	}
	b.WriteString("}\n")
	return b.String()
}

const (
	siluLabel = "//kernels/contributions:silu_and_mul_triton"
	rmsLabel  = "//kernels/contributions:rmsnorm_triton"
)

func incumbentWorkspace(t *testing.T, parent string) string {
	ws := workspace(t, parent, "contributions/silu_and_mul_triton", "contributions/rmsnorm_triton", "contributions/silu_and_mul_torch")
	must(t, os.WriteFile(filepath.Join(ws, "stacks", "incumbent.hcl"),
		[]byte(stackFile("evaluation", "activation.silu_and_mul="+siluLabel, "norm.rmsnorm="+rmsLabel)), 0o644))
	return ws
}

type treeFile struct {
	mode  fs.FileMode
	mtime int64
	data  string
}

func snapshotTree(t *testing.T, root string) map[string]treeFile {
	t.Helper()
	out := map[string]treeFile{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		f := treeFile{mode: info.Mode(), mtime: info.ModTime().UnixNano()}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f.data = string(b)
		}
		out[filepath.ToSlash(rel)] = f
		return nil
	})
	must(t, err)
	return out
}

// The same stack materializes to the same bytes from another checkout
// path, working directory, umask, time zone and locale, through explicit
// inputs instead of workspace labels, and with the Python facts cache off
// or warm.
func TestStackMaterializeIsDeterministic(t *testing.T) {
	ws1 := incumbentWorkspace(t, t.TempDir())
	ws2 := incumbentWorkspace(t, filepath.Join(t.TempDir(), "deeper", "checkout"))
	out1, out2 := filepath.Join(t.TempDir(), "engine"), filepath.Join(t.TempDir(), "x", "tree")
	must(t, os.MkdirAll(filepath.Dir(out2), 0o755))
	man1, man2 := filepath.Join(t.TempDir(), "m1.json"), filepath.Join(t.TempDir(), "m2.json")
	cache := t.TempDir()
	if code, _, stderr := (subprocess{dir: ws2, env: []string{enginecli.CacheEnv + "=" + cache}, args: []string{"stack", "digest", "stacks/incumbent.hcl"}}).run(t); code != 0 {
		t.Fatalf("warming the cache: exit %d: %s", code, stderr)
	}
	if entries, _ := filepath.Glob(filepath.Join(cache, "pyfacts-*", "*", "*.json")); len(entries) == 0 {
		t.Fatalf("stack digest kept no Python facts in %s", cache)
	}

	code, stdout1, stderr := subprocess{
		dir: ws1, umask: 0o022, env: []string{"TZ=UTC", "LANG=C", "LC_ALL=C", enginecli.CacheEnv + "=off"},
		args: []string{"stack", "materialize", "--json", "stacks/incumbent.hcl", "--out", out1, "--manifest-out", man1},
	}.run(t)
	if code != 0 {
		t.Fatalf("first run exit %d: %s", code, stderr)
	}
	code, stdout2, stderr := subprocess{
		dir: "/", umask: 0o077, env: []string{"TZ=Asia/Kolkata", "LANG=de_DE.UTF-8", "LC_ALL=de_DE.UTF-8", enginecli.CacheEnv + "=" + cache},
		args: []string{"stack", "materialize", "--json", filepath.Join(ws2, "stacks", "incumbent.hcl"), "--out", out2, "--manifest-out", man2,
			"--catalog", filepath.Join(ws2, "catalog", "targets.hcl"),
			"--contribution", siluLabel + "=" + filepath.Join(ws2, "kernels", "contributions", "silu_and_mul_triton"),
			"--contribution", rmsLabel + "=" + filepath.Join(ws2, "kernels", "contributions", "rmsnorm_triton")},
	}.run(t)
	if code != 0 {
		t.Fatalf("second run exit %d: %s", code, stderr)
	}
	var doc1, doc2 enginecli.TreeJSON
	must(t, json.Unmarshal([]byte(stdout1), &doc1))
	must(t, json.Unmarshal([]byte(stdout2), &doc2))
	if doc1.TreeDigest.IsZero() || doc1.TreeDigest != doc2.TreeDigest || doc1.StackDigest != doc2.StackDigest {
		t.Errorf("digests differ: %s/%s vs %s/%s", doc1.StackDigest, doc1.TreeDigest, doc2.StackDigest, doc2.TreeDigest)
	}
	t1, t2 := snapshotTree(t, out1), snapshotTree(t, out2)
	if len(t1) != len(t2) || len(t1) < 10 {
		t.Fatalf("trees have %d and %d entries", len(t1), len(t2))
	}
	for p, f := range t1 {
		g, ok := t2[p]
		switch {
		case !ok:
			t.Errorf("%s missing from the second tree", p)
		case f != g:
			t.Errorf("%s differs: %v %d vs %v %d", p, f.mode, f.mtime, g.mode, g.mtime)
		case f.mtime != 0:
			t.Errorf("%s has mtime %d, want the epoch", p, f.mtime)
		}
		if strings.Contains(f.data, ws1) || strings.Contains(f.data, "/tmp") {
			t.Errorf("%s embeds a host path", p)
		}
	}
	m1, _ := os.ReadFile(man1)
	m2, _ := os.ReadFile(man2)
	if len(m1) == 0 || !bytes.Equal(m1, m2) {
		t.Errorf("manifests differ or are empty (%d, %d bytes)", len(m1), len(m2))
	}
}

// A materializer killed in the middle of writing leaves nothing at the
// destination; the next run succeeds.
func TestStackMaterializeKilledMidWrite(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	parent := t.TempDir()
	out := filepath.Join(parent, "engine")
	cmd := subprocess{dir: ws, umask: 0o022, env: []string{enginecli.FaultPauseEnv + "=1"},
		args: []string{"stack", "materialize", "stacks/incumbent.hcl", "--out", out}}.command(t)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	paused := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "fault injection: paused after 1 files") {
				paused <- true
				io.Copy(io.Discard, stderr)
				return
			}
		}
		paused <- false
	}()
	select {
	case ok := <-paused:
		if !ok {
			cmd.Process.Kill()
			t.Fatal("the writer exited without reaching the fault-injection point")
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the writer never paused")
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("destination visible while the writer is mid-write: %v", err)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Fatalf("destination exists after the writer was killed: %v", err)
	}
	// The half-written tree exists only as a hidden temporary sibling.
	entries, _ := os.ReadDir(parent)
	var partial []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".engine.tmp-") {
			partial = append(partial, e.Name())
		}
	}
	if len(partial) != 1 {
		t.Errorf("temporary trees %v, want exactly the one the killed writer left", partial)
	}

	code, stdout, errText := subprocess{dir: ws, umask: 0o022, args: []string{"stack", "materialize", "stacks/incumbent.hcl", "--out", out}}.run(t)
	if code != 0 || !strings.Contains(stdout, "files written to") {
		t.Fatalf("rerun exit %d: %s %s", code, stdout, errText)
	}
	code, _, errText = subprocess{dir: ws, args: []string{"stack", "verify", out}}.run(t)
	if code != 0 {
		t.Errorf("verify after rerun: exit %d %s", code, errText)
	}
}

func TestStackBadInputs(t *testing.T) {
	requiring := strings.Replace(string(catalog.DefaultSource()), `contract         = "activation.silu_and_mul"`,
		`contract         = "activation.silu_and_mul"
  requires         = ["norm.rmsnorm"]`, 1)
	tests := []struct {
		name  string
		stack string
		setup func(t *testing.T, ws string)
		args  []string // extra flags
		want  []string
	}{
		{
			name:  "unknown target",
			stack: stackFile("evaluation", "activation.silu_and_mull="+siluLabel),
			want:  []string{"stacks/s.hcl:12,", `"activation.silu_and_mull" is not a target of the catalog; did you mean "activation.silu_and_mul"?`, "rule unknown-target"},
		},
		{
			name:  "contribution at the wrong target",
			stack: stackFile("evaluation", "norm.rmsnorm="+siluLabel),
			want:  []string{"stacks/s.hcl:12,", `resolves to target "activation.silu_and_mul", not "norm.rmsnorm"`, "rule target-binding"},
		},
		{
			name:  "feature not allowed",
			stack: stackFile("evaluation", "activation.silu_and_mul=//kernels/fixtures:feature_not_allowed"),
			want:  []string{"stacks/s.hcl:13,", "rule inspection/resolve", "op_extra:fast_path"},
		},
		{
			name:  "missing contribution file",
			stack: stackFile("evaluation", "activation.silu_and_mul="+siluLabel),
			setup: func(t *testing.T, ws string) {
				must(t, os.Remove(filepath.Join(ws, "kernels", "contributions", "silu_and_mul_triton", "kernels", "silu_and_mul.py")))
			},
			want: []string{"stacks/s.hcl:13,", "rule inspection/load", "kernels/silu_and_mul.py"},
		},
		{
			name:  "missing bundle directory",
			stack: stackFile("evaluation", "activation.silu_and_mul=//kernels/contributions:nothing_here"),
			want:  []string{"stacks/s.hcl:13,", "rule source-missing", "nothing_here"},
		},
		{
			name:  "symlink in a bundle",
			stack: stackFile("evaluation", "activation.silu_and_mul="+siluLabel),
			setup: func(t *testing.T, ws string) {
				must(t, os.Symlink("/etc/hostname", filepath.Join(ws, "kernels", "contributions", "silu_and_mul_triton", "kernels", "extra.py")))
			},
			want: []string{"stacks/s.hcl:13,", "rule inspection/load", "symbolic link"},
		},
		{
			name:  "fifo in a bundle",
			stack: stackFile("evaluation", "activation.silu_and_mul="+siluLabel),
			setup: func(t *testing.T, ws string) {
				must(t, syscall.Mkfifo(filepath.Join(ws, "kernels", "contributions", "silu_and_mul_triton", "pipe"), 0o644))
			},
			want: []string{"stacks/s.hcl:13,", "rule inspection/load"},
		},
		{
			name:  "two active targets displacing each other",
			stack: stackFile("evaluation", "collective.moe_epilogue.v1=//kernels/contributions:moe_epilogue_atomic_torch", "collective.ar_residual_rmsnorm=//kernels/contributions:ar_norm"),
			setup: func(t *testing.T, ws string) {
				dir := filepath.Join(ws, "kernels", "contributions", "ar_norm")
				must(t, os.MkdirAll(filepath.Join(dir, "kernels"), 0o755))
				must(t, os.WriteFile(filepath.Join(dir, "manifest.toml"), []byte("bundle_id = \"ar-norm\"\nabi_version = \"cacheon-op-abi-v0\"\n\n[[ops]]\nslot = \"collective.ar_residual_rmsnorm\"\nsource = \"kernels/ar.py\"\nentry = \"ar_residual_rmsnorm\"\n"), 0o644))
				must(t, os.WriteFile(filepath.Join(dir, "kernels", "ar.py"), []byte("def ar_residual_rmsnorm(x, residual, weight, eps, out_norm, out_residual, group):\n    pass\n"), 0o644))
			},
			want: []string{"stacks/s.hcl:12,", `"collective.moe_epilogue.v1" displaces "collective.ar_residual_rmsnorm"`, "rule active-set"},
		},
		{
			name:  "requires edge unsatisfied",
			stack: stackFile("evaluation", "activation.silu_and_mul="+siluLabel),
			setup: func(t *testing.T, ws string) {
				must(t, os.WriteFile(filepath.Join(ws, "catalog", "targets.hcl"), []byte(requiring), 0o644))
			},
			want: []string{"stacks/s.hcl:12,", `"activation.silu_and_mul" requires "norm.rmsnorm"`, "rule active-set"},
		},
		{
			name:  "destination inside a source",
			stack: stackFile("evaluation", "activation.silu_and_mul="+siluLabel),
			args:  []string{"--out", "kernels/contributions/silu_and_mul_triton/engine"},
			want:  []string{"[destination]", "overlaps the source"},
		},
		{
			name:  "label without a directory in explicit mode",
			stack: stackFile("evaluation", "activation.silu_and_mul="+siluLabel, "norm.rmsnorm="+rmsLabel),
			args:  []string{"--catalog", "catalog/targets.hcl", "--contribution", siluLabel + "=kernels/contributions/silu_and_mul_triton"},
			want:  []string{"stacks/s.hcl:17,", "pass --contribution " + rmsLabel + "=DIR (in Bazel, add " + rmsLabel + " to the stack rule's contributions)"},
		},
		{
			name:  "HCL syntax error",
			stack: "stack \"x\" {\n  kind = \n}\n",
			want:  []string{"s.hcl", "Invalid expression"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t, t.TempDir(), "contributions/silu_and_mul_triton", "contributions/rmsnorm_triton",
				"contributions/moe_epilogue_atomic_torch", "fixtures/feature_not_allowed")
			must(t, os.WriteFile(filepath.Join(ws, "stacks", "s.hcl"), []byte(tt.stack), 0o644))
			if tt.setup != nil {
				tt.setup(t, ws)
			}
			out := filepath.Join(ws, "out")
			args := []string{"stack", "materialize", "stacks/s.hcl", "--out", out}
			if tt.args != nil {
				args = append([]string{"stack", "materialize", "stacks/s.hcl"}, tt.args...)
				if !contains(tt.args, "--out") {
					args = append(args, "--out", out)
				}
			}
			code, _, stderr := subprocess{dir: ws, umask: 0o022, args: args}.run(t)
			if code != enginecli.ExitRejected {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, enginecli.ExitRejected, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, p := range []string{out, filepath.Join(ws, "kernels", "contributions", "silu_and_mul_triton", "engine")} {
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Errorf("output %s exists after a rejection", p)
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(ws, ".out.*"))
			if len(leftovers) > 0 {
				t.Errorf("temporary output left behind: %v", leftovers)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestStackPlanCommand(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	must(t, os.MkdirAll(filepath.Join(ws, "candidates"), 0o755))
	candOut := filepath.Join(ws, "candidates", "next.hcl")
	code, stdout, stderr := subprocess{dir: ws, umask: 0o022, args: []string{"stack", "plan", "--json",
		"--incumbent", "stacks/incumbent.hcl", "--candidate", "kernels/contributions/silu_and_mul_torch", "--out", candOut}}.run(t)
	if code != 0 {
		t.Fatalf("plan exit %d: %s", code, stderr)
	}
	type arm struct {
		StackDigest string `json:"stack_digest"`
		TreeDigest  string `json:"tree_digest"`
	}
	var doc struct {
		PlanDigest string          `json:"plan_digest"`
		RawPlan    json.RawMessage `json:"plan"`
		Plan       struct {        // decoded from RawPlan
			PolicyVersion        string `json:"policy_version"`
			IncumbentStackDigest string `json:"incumbent_stack_digest"`
			CandidateStackDigest string `json:"candidate_stack_digest"`
			Transition           struct {
				TargetID  string          `json:"target_id"`
				Prior     json.RawMessage `json:"prior"`
				Displaced []string        `json:"displaced"`
			} `json:"transition"`
			BaselineBefore arm `json:"baseline_before"`
			Challenger     arm `json:"challenger"`
			BaselineAfter  arm `json:"baseline_after"`
		} `json:"-"`
	}
	must(t, json.Unmarshal([]byte(stdout), &doc))
	must(t, json.Unmarshal(doc.RawPlan, &doc.Plan))
	if doc.Plan.Transition.TargetID != "activation.silu_and_mul" || string(doc.Plan.Transition.Prior) == "null" || len(doc.Plan.Transition.Displaced) != 0 {
		t.Errorf("transition %+v", doc.Plan.Transition)
	}
	p := doc.Plan
	if p.PolicyVersion != "stack-plan.v1" || p.BaselineBefore != p.BaselineAfter || p.BaselineBefore.StackDigest != p.IncumbentStackDigest ||
		p.Challenger.StackDigest != p.CandidateStackDigest || p.Challenger.TreeDigest == p.BaselineBefore.TreeDigest {
		t.Errorf("arms %+v", p)
	}
	// The plan object as written is the payload its digest hashes: a
	// reader recomputes plan_digest from the file alone.
	payload, err := canonjson.Parse(doc.RawPlan)
	must(t, err)
	if d, err := identity.H(identity.DomainMarginalArmPlan, payload); err != nil || d.String() != doc.PlanDigest {
		t.Errorf("the plan object hashes to %s (%v), the document says %s", d, err, doc.PlanDigest)
	}
	// The written candidate stack is the planned one.
	code, digest, stderr := subprocess{dir: ws, args: []string{"stack", "digest", candOut}}.run(t)
	if code != 0 || strings.TrimSpace(digest) != doc.Plan.CandidateStackDigest {
		t.Errorf("candidate file digests to %q (exit %d, %s), plan says %s", digest, code, stderr, doc.Plan.CandidateStackDigest)
	}

	// A candidate that changes nothing is rejected and writes nothing.
	noop := filepath.Join(ws, "candidates", "noop.hcl")
	code, _, stderr = subprocess{dir: ws, args: []string{"stack", "plan", "--incumbent", "stacks/incumbent.hcl",
		"--candidate", "kernels/contributions/rmsnorm_triton", "--out", noop}}.run(t)
	if code != enginecli.ExitRejected || !strings.Contains(stderr, "candidate rejected (no_op)") {
		t.Errorf("no-op plan: exit %d, %s", code, stderr)
	}
	if _, err := os.Lstat(noop); !os.IsNotExist(err) {
		t.Errorf("--out written for a rejected plan")
	}
}

// With --incumbent-tree the plan takes B from a published tree of the
// incumbent instead of materializing it, and --tree-out publishes C: the
// arms and C's bytes are the ones planning from scratch and materializing
// the candidate stack give. A tree of another stack, or a tampered one,
// is refused and nothing is published.
func TestStackPlanReusesTheIncumbentTree(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	dir := filepath.Join(ws, "candidates") // the stack files must be in the workspace
	must(t, os.MkdirAll(dir, 0o755))
	bTree := filepath.Join(dir, "incumbent.tree")
	if code, _, stderr := (subprocess{dir: ws, args: []string{"stack", "materialize", "--quiet", "stacks/incumbent.hcl", "--out", bTree}}).run(t); code != 0 {
		t.Fatalf("materialize incumbent: exit %d: %s", code, stderr)
	}
	planArgs := []string{"stack", "plan", "--json", "--incumbent", "stacks/incumbent.hcl", "--candidate", "kernels/contributions/silu_and_mul_torch"}
	code, fromScratch, stderr := subprocess{dir: ws, args: append(planArgs, "--out", filepath.Join(dir, "scratch.hcl"))}.run(t)
	if code != 0 {
		t.Fatalf("plan from scratch: exit %d: %s", code, stderr)
	}
	cTree, manifest := filepath.Join(dir, "out", "candidate.tree"), filepath.Join(dir, "out", "candidate.manifest.json")
	code, reused, stderr := subprocess{dir: ws, args: append(planArgs, "--out", filepath.Join(dir, "reused.hcl"),
		"--incumbent-tree", bTree, "--tree-out", cTree, "--manifest-out", manifest)}.run(t)
	if code != 0 {
		t.Fatalf("plan reusing the incumbent tree: exit %d: %s", code, stderr)
	}
	// The documents differ only in the --out path they name.
	reused = strings.Replace(reused, filepath.Join(dir, "reused.hcl"), "OUT", 1)
	fromScratch = strings.Replace(fromScratch, filepath.Join(dir, "scratch.hcl"), "OUT", 1)
	if reused != fromScratch {
		t.Fatalf("plans differ:\nreusing the tree: %s\nfrom scratch:     %s", reused, fromScratch)
	}
	// C is the tree `stack materialize` makes of the candidate stack file.
	want := filepath.Join(dir, "want.tree")
	wantManifest := filepath.Join(dir, "want.manifest.json")
	if code, _, stderr := (subprocess{dir: ws, args: []string{"stack", "materialize", "--quiet", filepath.Join(dir, "reused.hcl"),
		"--allow-unused-contributions", "--out", want, "--manifest-out", wantManifest}}).run(t); code != 0 {
		t.Fatalf("materialize the candidate stack: exit %d: %s", code, stderr)
	}
	if got, wantTree := snapshotTree(t, cTree), snapshotTree(t, want); !reflect.DeepEqual(got, wantTree) {
		t.Fatalf("--tree-out differs from the materialized candidate stack (%d and %d entries)", len(got), len(wantTree))
	}
	if a, b := mustRead(t, manifest), mustRead(t, wantManifest); a != b {
		t.Fatalf("--manifest-out differs from stack materialize's:\n%s\n%s", a, b)
	}

	// Refusals: another stack's tree, and a tree with a file changed.
	tampered := filepath.Join(dir, "tampered.tree")
	must(t, os.CopyFS(tampered, os.DirFS(bTree)))
	var victim string
	must(t, filepath.WalkDir(tampered, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".py") && victim == "" {
			victim = p
		}
		return err
	}))
	must(t, os.Chmod(victim, 0o644))
	must(t, os.WriteFile(victim, []byte("# not the incumbent's\n"), 0o644))
	// The published shape is kept, so only the contents give it away.
	must(t, os.Chmod(victim, 0o444))
	must(t, os.Chtimes(victim, time.Unix(0, 0), time.Unix(0, 0)))
	for _, tt := range []struct{ name, tree, want string }{
		{"another stack's tree", cTree, "incumbent_tree_mismatch"},
		{"a tampered tree", tampered, "incumbent_tree_mismatch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "c.tree")
			code, stdout, stderr := subprocess{dir: ws, args: append(planArgs, "--incumbent-tree", tt.tree, "--tree-out", out)}.run(t)
			if code != enginecli.ExitRejected || !strings.Contains(stdout, tt.want) {
				t.Fatalf("exit %d, stdout %s, stderr %s; want exit %d naming %s", code, stdout, stderr, enginecli.ExitRejected, tt.want)
			}
			if _, err := os.Lstat(out); !os.IsNotExist(err) {
				t.Fatalf("a refused plan published %s", out)
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}
