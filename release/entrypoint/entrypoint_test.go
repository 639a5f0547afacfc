package entrypoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/entrypoint"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/key"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
)

// TestMain lets the test binary be the image's entrypoint process: with
// CACHEON_TEST_SERVE set it verifies and execs, as `cacheon release
// serve` does, so the exec really replaces the process.
func TestMain(m *testing.M) {
	if spec := os.Getenv("CACHEON_TEST_SERVE"); spec != "" {
		var in struct{ Root, Key, Bundle, Model string }
		json.Unmarshal([]byte(spec), &in)
		policy, err := key.LoadPolicy(in.Key)
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		bundle, _ := os.ReadFile(in.Bundle)
		v, err := entrypoint.Verify(entrypoint.Options{Root: in.Root, Policy: policy, Bundle: bundle, Model: in.Model})
		if err == nil {
			err = entrypoint.Exec(v)
		}
		os.Stderr.WriteString(err.Error())
		os.Exit(2)
	}
	os.Exit(m.Run())
}

type installed struct {
	r      *fixture.Release
	root   string
	bundle string
}

// install builds and signs a release and unpacks its layers as the
// container's root filesystem would hold them.
func install(t *testing.T) *installed {
	t.Helper()
	r := fixture.New(t)
	dir, _ := r.Build(t)
	l, _ := store.OpenLayout(dir)
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	desc, _ := l.Resolve()
	refs, _ := store.Referrers(l, desc.Digest)
	in := &installed{r: r, root: filepath.Join(t.TempDir(), "rootfs"), bundle: filepath.Join(t.TempDir(), "release.sigstore.json")}
	for _, ref := range refs {
		if ref.ArtifactType == store.ArtifactBundle && ref.Title() == store.TitleBundle { // the provenance's, not the SBOM attestation's
			os.WriteFile(in.bundle, ref.Data, 0o644)
		}
	}
	lp, _ := layout.FromPath(dir)
	img, err := lp.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(in.root, 0o755)
	if err := image.Unpack(img, 0, in.root); err != nil {
		t.Fatal(err)
	}
	return in
}

func (in *installed) serve(t *testing.T, pub string) (string, string, error) {
	spec, _ := json.Marshal(map[string]string{"Root": in.root, "Key": pub, "Bundle": in.bundle, "Model": in.r.ModelDir})
	// A hung entrypoint (reading a FIFO planted in the image) is killed,
	// so the case fails instead of the whole run timing out.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CACHEON_TEST_SERVE="+string(spec), "LD_PRELOAD=/nonexistent/evil.so", "PYTHONSTARTUP=/evil.py")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func TestServeVerifiesThenExecsTheSubstrate(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	in := install(t)
	out, errOut, err := in.serve(t, in.r.PublicKey)
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, errOut)
	}
	var got struct {
		Argv       []string `json:"argv"`
		Verified   string   `json:"verified"`
		PythonPath string   `json:"pythonpath"`
		Env        []string `json:"env"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("substrate output %q: %v", out, err)
	}
	b, _ := os.ReadFile(filepath.Join(in.root, descriptor.DescriptorPath))
	d, _ := descriptor.Parse(b)
	want, _ := d.Digest()
	if got.Verified != want {
		t.Errorf("served with CACHEON_RELEASE_VERIFIED=%q, want %s", got.Verified, want)
	}
	for _, k := range got.Env {
		if k == "LD_PRELOAD" || k == "PYTHONSTARTUP" {
			t.Errorf("%s from the container's environment reached the served process", k)
		}
	}
	tree := filepath.Join(in.root, descriptor.EngineTreeDir)
	if strings.Join(got.Argv, " ") != "--engine-tree "+tree+" --model "+in.r.ModelDir {
		t.Errorf("argv %v", got.Argv)
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func TestServeRefusesToStartOnAnyMismatch(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, in *installed) string // returns the public key to use
		want   string
	}{
		{"another expected key", func(t *testing.T, in *installed) string {
			_, _, pub := fixture.Keys(t, t.TempDir(), "other", key.Ed25519)
			return pub
		}, "not in the trusted key policy"},
		{"engine tree file changed", func(t *testing.T, in *installed) string {
			matches, _ := filepath.Glob(filepath.Join(in.root, descriptor.EngineTreeDir, "*", "kernels", "silu_and_mul.py"))
			os.WriteFile(matches[0], []byte("import os\n"), 0o644)
			return in.r.PublicKey
		}, "the engine tree at"},
		{"file added to the engine tree", func(t *testing.T, in *installed) string {
			os.WriteFile(filepath.Join(in.root, descriptor.EngineTreeDir, "sitecustomize.py"), []byte("x"), 0o644)
			return in.r.PublicKey
		}, "the engine tree at"},
		{"bytecode planted in the substrate", func(t *testing.T, in *installed) string {
			p := filepath.Join(in.root, descriptor.SubstrateDir, "cacheon_substrate", "__pycache__")
			os.MkdirAll(p, 0o755)
			os.WriteFile(filepath.Join(p, "serve.cpython-311.pyc"), []byte("x"), 0o644)
			return in.r.PublicKey
		}, "not covered by the signed content hash"},
		{"substrate changed", func(t *testing.T, in *installed) string {
			os.WriteFile(filepath.Join(in.root, descriptor.SubstrateDir, "cacheon_substrate", "serve.py"), []byte("print('evil')\n"), 0o644)
			return in.r.PublicKey
		}, "the substrate at"},
		{"model changed", func(t *testing.T, in *installed) string {
			os.WriteFile(filepath.Join(in.r.ModelDir, "config.json"), []byte("{\"hidden_size\":9}\n"), 0o644)
			return in.r.PublicKey
		}, "model at"},
		{"review record removed", func(t *testing.T, in *installed) string {
			matches, _ := filepath.Glob(filepath.Join(in.root, descriptor.ReviewDir, "*.json"))
			os.Remove(matches[0])
			return in.r.PublicKey
		}, "has no integration review record"},
		{"descriptor changed", func(t *testing.T, in *installed) string {
			p := filepath.Join(in.root, descriptor.DescriptorPath)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), "python3", "python9", 1)), 0o644)
			return in.r.PublicKey
		}, "is not the descriptor the release signs"},
		{"entrypoint binary changed", func(t *testing.T, in *installed) string {
			os.WriteFile(filepath.Join(in.root, descriptor.EntrypointPath), []byte("#!/bin/sh\n"), 0o755)
			return in.r.PublicKey
		}, "/cacheon/bin/cacheon is sha256:"},
		{"descriptor replaced by a FIFO", func(t *testing.T, in *installed) string {
			mkfifo(t, filepath.Join(in.root, descriptor.DescriptorPath))
			return in.r.PublicKey
		}, "named pipe"},
		{"entrypoint binary replaced by a FIFO", func(t *testing.T, in *installed) string {
			mkfifo(t, filepath.Join(in.root, descriptor.EntrypointPath))
			return in.r.PublicKey
		}, "named pipe"},
		{"no bundle", func(t *testing.T, in *installed) string {
			os.WriteFile(in.bundle, nil, 0o644)
			return in.r.PublicKey
		}, "no signature bundle was supplied"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := install(t)
			pub := c.change(t, in)
			out, errOut, err := in.serve(t, pub)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("serve exit %v, want a refusal\nstdout %s\nstderr %s", err, out, errOut)
			}
			if out != "" {
				t.Errorf("the substrate ran: %s", out)
			}
			if !strings.Contains(errOut, "refusing to start") || !strings.Contains(errOut, c.want) {
				t.Errorf("stderr %q, want %q", errOut, c.want)
			}
		})
	}
}
