package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/models"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/stacks/plan"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

func TestExitCodeMapsOneRoot(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, enginecli.ExitOK},
		{"plain error is infrastructure", errors.New("connection reset"), enginecli.ExitError},
		{"missing file", fmt.Errorf("read x: %w", fs.ErrNotExist), enginecli.ExitError},
		{"cancelled", fmt.Errorf("materialize: %w", context.Canceled), enginecli.ExitError},
		{"rejection", reject.Errorf("bad %s", "input"), enginecli.ExitRejected},
		{"bundle class", fmt.Errorf("load: %w", bundle.ErrMetadata), enginecli.ExitRejected},
		{"bundle without a manifest is a missing file", fmt.Errorf("load: %w", bundle.ErrNoManifest), enginecli.ExitError},
		{"model class", &models.TreeError{Root: "r", Path: "a", Err: models.ErrSymlink}, enginecli.ExitRejected},
		{"store class", &store.FileError{Path: "index.json", Err: store.ErrMalformed}, enginecli.ExitRejected},
		{"plan rejection", &plan.Rejection{Reason: plan.ReasonUnknownTarget, Detail: "x"}, enginecli.ExitRejected},
		{"a rejection about a missing file", reject.Wrap(fmt.Errorf("open x: %w", fs.ErrNotExist)), enginecli.ExitError},
		{"already reported rejection", enginecli.AlreadyReported(reject.ErrRejected), enginecli.ExitRejected},
		{"already reported error", enginecli.AlreadyReported(errors.New("worker died")), enginecli.ExitError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := enginecli.ExitCode(tc.err); got != tc.want {
				t.Errorf("enginecli.ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestExitCodesOfCommands(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	stackPath := filepath.Join(ws, "stacks", "incumbent.hcl")
	missing := filepath.Join(ws, "catalog", "nope.hcl")
	broken := filepath.Join(ws, "catalog", "broken.hcl")
	must(t, os.WriteFile(broken, []byte("target \"x\" {\n  kind = 3\n}\n"), 0o644))
	bundleDir := filepath.Join(ws, "kernels", "contributions", "silu_and_mul_triton")
	badKey := filepath.Join(ws, "bad.pem")
	must(t, os.WriteFile(badKey, []byte("not a key"), 0o644))
	// Scans clean; intake's closure bans torch.compile as a dynamic import.
	compiles := filepath.Join(ws, "compiles")
	must(t, os.MkdirAll(filepath.Join(compiles, "kernels"), 0o755))
	must(t, os.WriteFile(filepath.Join(compiles, "manifest.toml"), []byte("bundle_id = \"compiles\"\nabi_version = \"cacheon-op-abi-v0\"\n\n"+
		"[[ops]]\nslot = \"activation.silu_and_mul\"\nsource = \"kernels/k.py\"\nentry = \"silu_and_mul\"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(compiles, "kernels", "k.py"), []byte("import torch\n\nsilu_and_mul = torch.compile(lambda x, out: None)\n"), 0o644))
	tests := []struct {
		name      string
		args      []string
		want      int
		wantInErr string
	}{
		{"stack digest: missing --catalog file", []string{"stack", "digest", "--catalog", missing, stackPath}, enginecli.ExitError, "nope.hcl"},
		{"stack digest: invalid --catalog file", []string{"stack", "digest", "--catalog", broken, stackPath}, enginecli.ExitRejected, "broken.hcl"},
		{"stack digest: missing stack file", []string{"stack", "digest", filepath.Join(ws, "stacks", "none.hcl")}, enginecli.ExitError, "none.hcl"},
		{"stack materialize: missing --catalog file", []string{"stack", "materialize", "--catalog", missing, "--out", filepath.Join(ws, "o"), stackPath}, enginecli.ExitError, "nope.hcl"},
		{"stack plan: missing --catalog file", []string{"stack", "plan", "--catalog", missing, "--incumbent", stackPath, "--candidate", bundleDir}, enginecli.ExitError, "nope.hcl"},
		{"bundle inspect: missing --catalog file", []string{"bundle", "inspect", "--catalog", missing, bundleDir}, enginecli.ExitError, "nope.hcl"},
		{"bundle inspect: invalid --catalog file", []string{"bundle", "inspect", "--catalog", broken, bundleDir}, enginecli.ExitRejected, "broken.hcl"},
		{"catalog check: missing file", []string{"catalog", "check", missing}, enginecli.ExitError, "nope.hcl"},
		{"catalog check: invalid file", []string{"catalog", "check", broken}, enginecli.ExitRejected, "broken.hcl"},
		{"release verify: missing --key file", []string{"release", "verify", "--key", filepath.Join(ws, "nope.pem"), ws}, enginecli.ExitError, "nope.pem"},
		{"release verify: malformed --key", []string{"release", "verify", "--key", badKey, ws}, enginecli.ExitRejected, "bad.pem"},
		{"release sign: malformed --key", []string{"release", "sign", "--key", badKey, ws}, enginecli.ExitRejected, "bad.pem"},
		{"bundle inspect: missing directory", []string{"bundle", "inspect", filepath.Join(ws, "none")}, enginecli.ExitError, "none"},
		{"bundle inspect: a closure intake refuses", []string{"bundle", "inspect", compiles}, enginecli.ExitRejected, `kernels/k.py:3:22: dynamic import: attribute "compile"`},
		// verify runs the same check before any worker: no interpreter is
		// ever looked for, so none need exist.
		{"verify: a closure intake refuses", []string{"verify", "--quiet", "--python", filepath.Join(ws, "no-python"), compiles}, enginecli.ExitRejected,
			`kernels/k.py:3:22: dynamic import: attribute "compile"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, "", tc.args...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.want, errOut)
			}
			if !strings.Contains(errOut, tc.wantInErr) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.wantInErr)
			}
		})
	}
}

// A cancelled context (Ctrl-C) reaches the libraries that take one and is
// an error of the run, never a verdict.
func TestCancelledRunIsExit1(t *testing.T) {
	ws := incumbentWorkspace(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut strings.Builder
	code := MainContext(ctx, []string{"stack", "plan", "--incumbent", filepath.Join(ws, "stacks", "incumbent.hcl"),
		"--candidate", filepath.Join(ws, "kernels", "contributions", "silu_and_mul_torch")},
		Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != enginecli.ExitError || !strings.Contains(errOut.String(), "context canceled") {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming the cancellation", code, errOut.String())
	}
	if out.Len() != 0 {
		t.Errorf("a cancelled plan printed %q", out.String())
	}
}
