package prebuild

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/internal/testtree"
)

// testPython is the interpreter whose torch the tests build against.
func testPython(t *testing.T) string {
	t.Helper()
	for _, v := range []string{"CACHEON_TEST_PYTHON", "CACHEON_PYTHON"} {
		if p := os.Getenv(v); p != "" {
			return p
		}
	}
	return "/usr/bin/python3"
}

// searchable returns a fresh directory the sandbox user can pass through.
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

var (
	toolchainOnce sync.Once
	toolchainErr  error
)

// needToolchain skips the test where the host cannot build torch
// extensions for the CPU (no sandbox, no torch, no C++ headers, no
// compiler), unless CACHEON_REQUIRE_CXX_TORCH is set (tools/test.sh sets
// it, since tools/bootstrap.sh installs libtorch-dev), where that is a
// failure.
func needToolchain(t *testing.T, python string) {
	t.Helper()
	toolchainOnce.Do(func() { toolchainErr = Available(context.Background(), python, "cpu", false) })
	if toolchainErr != nil {
		if os.Getenv("CACHEON_REQUIRE_CXX_TORCH") != "" {
			t.Fatalf("a C++ toolchain for torch extensions is required here: %v", toolchainErr)
		}
		t.Skipf("no C++ toolchain for torch extensions here (apt-get install libtorch-dev g++): %v", toolchainErr)
	}
}

// fixture copies a testdata bundle and makes it readable by the sandbox user.
func fixture(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(searchable(t), name)
	testtree.Copy(t, filepath.Join("testdata", name), dir)
	return dir
}

// withSource is the fixture with its translation unit replaced.
func withSource(t *testing.T, text string) string {
	t.Helper()
	dir := fixture(t, "rmsnorm_cpp")
	if err := os.WriteFile(filepath.Join(dir, "csrc", "rmsnorm_cpu.cu"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func options(t *testing.T, bundle string) Options {
	store := filepath.Join(searchable(t), "store")
	t.Cleanup(func() { makeWritableAndRemove(store) }) // sealed directories are read-only
	return Options{Bundle: bundle, Store: store, WorkDir: searchable(t), Target: "cpu", Python: testPython(t), Timeout: 5 * time.Minute}
}

func TestBuildSealsACPULibrary(t *testing.T) {
	needToolchain(t, testPython(t))
	o := options(t, fixture(t, "rmsnorm_cpp"))
	res, err := Build(context.Background(), o)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	s := res.Sealed
	if filepath.Dir(s.Dir) != o.Store || filepath.Base(s.Dir) != s.Digest.Hex {
		t.Fatalf("sealed at %s, want %s/<digest>", s.Dir, o.Store)
	}
	if len(s.Artifact.Libraries) != 1 || len(s.Artifact.Files) != 1 || s.Artifact.Libraries[0].Path != s.Artifact.Files[0].Path {
		t.Fatalf("artifact %+v: want one library, the only file", s.Artifact)
	}
	lib := s.Artifact.Libraries[0]
	if lib.Slot != "norm.rmsnorm" || lib.Variant != "default" || len(lib.Sources) != 2 {
		t.Fatalf("library %+v", lib)
	}
	if _, err := s.Bind(o.Bundle, "norm.rmsnorm", "default", []string{"csrc/rmsnorm_cpu.cu", "csrc/rmsnorm_common.cuh"}); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	// The bytes the sealed library was built from are bound to it.
	if err := os.WriteFile(filepath.Join(o.Bundle, "csrc", "rmsnorm_common.cuh"), []byte("// other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bind(o.Bundle, "norm.rmsnorm", "default", []string{"csrc/rmsnorm_cpu.cu", "csrc/rmsnorm_common.cuh"}); err == nil ||
		!strings.Contains(err.Error(), "was built from the bytes") {
		t.Fatalf("Bind after a source changed: %v, want a digest mismatch", err)
	}
	reopened, err := Open(s.Dir)
	if err != nil || reopened.Digest != s.Digest {
		t.Fatalf("Open: %v (digest %v, want %v)", err, reopened, s.Digest)
	}
	r := res.Receipt
	if r.Seal != s.Digest.Hex || r.Isolation != "sandbox" || r.Compiler == "" || !strings.Contains(r.CompilerVersion, "++") ||
		len(r.Steps) != 1 || r.Steps[0].Argv[0] != r.Compiler || len(r.Outputs) != 1 || r.Outputs[0] != s.Artifact.Files[0] {
		t.Fatalf("receipt %+v", r)
	}
	// The library registers its operator: the interpreter it was built
	// for loads it and computes RMSNorm with it.
	script := `import sys, torch
torch.ops.load_library(sys.argv[1])
x = torch.randn(4, 64, dtype=torch.bfloat16); w = torch.randn(64, dtype=torch.bfloat16); out = torch.empty_like(x)
torch.ops.cacheon_rmsnorm_cpp.rmsnorm(x, w, out, 1e-6)
xf = x.float(); ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)
assert torch.allclose(out.float(), ref.float(), atol=2e-2, rtol=2e-2), (out - ref).abs().max()
print("ok")
`
	out, err := exec.Command(testPython(t), "-c", script, s.Path(lib.Path)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("loading the sealed library: %v: %s", err, out)
	}
}

func TestCompileErrorIsARejection(t *testing.T) {
	needToolchain(t, testPython(t))
	o := options(t, withSource(t, "// no torch here: the error comes fast\nint broken( { return 0; }\n"))
	_, err := Build(context.Background(), o)
	if !errors.Is(err, ErrCompile) || !reject.Is(err) {
		t.Fatalf("Build: %v, want a compile rejection", err)
	}
	if !strings.Contains(err.Error(), "rmsnorm_cpu.cu:2") || !strings.Contains(err.Error(), "error") {
		t.Fatalf("the rejection does not quote the compiler's first error: %v", err)
	}
	if entries, _ := os.ReadDir(o.Store); len(entries) != 0 {
		t.Fatalf("a failed build left %d entries in the store", len(entries))
	}
}

func TestIncludeClosureIsCheckedBeforeAnyCompiler(t *testing.T) {
	// No toolchain needed: the refusal comes before the probe.
	o := options(t, withSource(t, "#include \"/etc/passwd\"\n"))
	o.Python = "/nonexistent/python3"
	_, err := Build(context.Background(), o)
	if !reject.Is(err) || !strings.Contains(err.Error(), "cuda include closure refused") {
		t.Fatalf("Build: %v, want the closure's refusal", err)
	}
}

// compilerScript writes an executable stand-in for the compiler: the
// compiler child is what the sandbox contains, so a hostile one shows
// what a compromised compile could do. It answers the probe's --version.
func compilerScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(searchable(t), "cc")
	text := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'stand-in 1.0'; exit 0; fi\n" + body
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOverBudgetIsNoDecision(t *testing.T) {
	needToolchain(t, testPython(t))
	o := options(t, fixture(t, "rmsnorm_cpp"))
	o.Compiler = compilerScript(t, "exec sleep 600\n")
	o.Timeout = 20 * time.Second
	start := time.Now()
	_, err := Build(context.Background(), o)
	var nd *NoDecisionError
	if !errors.As(err, &nd) || reject.Is(err) {
		t.Fatalf("Build: %v, want a no-decision error that is no rejection", err)
	}
	if time.Since(start) > 2*time.Minute {
		t.Fatalf("the budget did not stop the compiler (%s)", time.Since(start))
	}
}

func TestHostileCompilerIsContained(t *testing.T) {
	needToolchain(t, testPython(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var connected atomic.Bool
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connected.Store(true)
			c.Close()
		}
	}()
	outside := searchable(t) // writable on the host, not given to the child
	dir := fixture(t, "rmsnorm_cpp")
	cases := []struct {
		name, script string
		check        func(error) bool
	}{
		{"reach the network, write outside staging, then fail", fmt.Sprintf(`
python3 -c "import socket; socket.create_connection(('127.0.0.1', %d), timeout=2)" && echo CONNECTED
echo pwned > %s/kernels/rmsnorm.py && echo WROTE-BUNDLE
echo x > %s/escape && echo WROTE-OUTSIDE
echo x > /usr/cacheon-escape && echo WROTE-HOST
ls /dev/nvidia* 2>/dev/null && echo SAW-GPU
exit 3
`, ln.Addr().(*net.TCPAddr).Port, dir, outside), func(err error) bool {
			return errors.Is(err, ErrCompile) && strings.Contains(err.Error(), "exited 3")
		}},
		{"leave a symlink as the library", `for a; do out=$a; done; ln -s /etc/passwd "$out"; exit 0`,
			// Where the sandbox bounds its work directory (a tmpfs copied
			// back without links) the link never reaches the host and no
			// library is found; elsewhere the build refuses the link itself.
			func(err error) bool {
				return reject.Is(err) && (strings.Contains(err.Error(), "not a regular file") || strings.Contains(err.Error(), "wrote no library"))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := options(t, dir)
			o.Compiler = compilerScript(t, tc.script)
			_, err := Build(context.Background(), o)
			if !tc.check(err) {
				t.Fatalf("Build: %v", err)
			}
			for _, marker := range []string{"CONNECTED", "WROTE-", "SAW-GPU"} {
				if strings.Contains(err.Error(), marker) {
					t.Fatalf("the attack worked: %v", err)
				}
			}
			if connected.Load() {
				t.Fatal("the compiler child reached a listener on the host")
			}
			if data, _ := os.ReadFile(filepath.Join(dir, "kernels", "rmsnorm.py")); strings.Contains(string(data), "pwned") {
				t.Fatal("the compiler child rewrote the bundle")
			}
			if _, err := os.Stat(filepath.Join(outside, "escape")); err == nil {
				t.Fatal("the compiler child wrote outside its staging directory")
			}
			if _, err := os.Stat("/usr/cacheon-escape"); err == nil {
				t.Fatal("the compiler child wrote the host file system")
			}
		})
	}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no store", func(o *Options) { o.Store = "" }, "artifact store"},
		{"unknown target", func(o *Options) { o.Target = "tpu" }, `target "tpu"`},
		{"arch on cpu", func(o *Options) { o.Arch = "sm_90" }, "for the cuda target"},
		{"bad arch", func(o *Options) { o.Target, o.Arch = "cuda", "hopper" }, `arch "hopper"`},
		{"relative compiler", func(o *Options) { o.Compiler = "g++" }, "absolute path"},
		{"negative timeout", func(o *Options) { o.Timeout = -time.Second }, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Bundle: "b", Store: "s", Target: "cpu"}
			tc.edit(&o)
			_, err := Build(context.Background(), o)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build: %v, want a usage error mentioning %q", err, tc.want)
			}
		})
	}
}
