package bazeldeps

import (
	"debug/buildinfo"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// The module information generated for the Bazel link is what `go build`
// embeds in the same binary: the same main package and module, the same
// modules at the same versions and hashes, and readers accept its framing.
func TestModInfoMatchesGoBuild(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command (absent under Bazel)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// Each released binary links its own: the full command line and the
	// engine build (the rules' tool and the image's entrypoint).
	for _, bin := range []string{"cacheon", "cacheon-engine"} {
		t.Run(bin, func(t *testing.T) {
			pkg := "github.com/cacheon/engine/tools/cmd/" + bin
			p := Platform{runtime.GOOS, runtime.GOARCH}
			got, err := ModInfo(root, pkg, p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, modinfoStart) || !strings.HasSuffix(got, "\n"+modinfoEnd) || len(modinfoStart) != 16 || len(modinfoEnd) != 16 {
				t.Fatalf("framing: the readers drop 16 bytes at each end and need a newline before the last 16")
			}
			gen, err := debug.ParseBuildInfo(got[16 : len(got)-16])
			if err != nil {
				t.Fatal(err)
			}

			out := filepath.Join(t.TempDir(), bin)
			// Without -trimpath the build reuses what go test compiled; it
			// changes no module, only the -trimpath setting (not compared).
			cmd := exec.Command(goBin, "build", "-o", out, "./tools/cmd/"+bin)
			cmd.Dir = root
			cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, b)
			}
			built, err := buildinfo.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if gen.Path != built.Path || gen.Main.Path != built.Main.Path {
				t.Errorf("path %q main %q, go build says %q %q", gen.Path, gen.Main.Path, built.Path, built.Main.Path)
			}
			if len(gen.Deps) != len(built.Deps) {
				t.Errorf("%d modules generated, go build links %d", len(gen.Deps), len(built.Deps))
			}
			want := map[string]string{}
			for _, m := range built.Deps {
				want[m.Path] = m.Version + " " + m.Sum
			}
			for _, m := range gen.Deps {
				if want[m.Path] != m.Version+" "+m.Sum {
					t.Errorf("module %s %s %s; go build: %q", m.Path, m.Version, m.Sum, want[m.Path])
				}
			}
			settings := map[string]string{}
			for _, s := range built.Settings {
				settings[s.Key] = s.Value
			}
			for _, s := range gen.Settings {
				if v, ok := settings[s.Key]; ok && v != s.Value && s.Key != "-trimpath" {
					t.Errorf("setting %s=%s; go build with CGO_ENABLED=0 says %s", s.Key, s.Value, v)
				}
			}
		})
	}
}

func TestStarlarkString(t *testing.T) {
	for in, want := range map[string]string{
		"a\tb\nc":    `"a\tb\nc"`,
		`q"uote\`:    `"q\"uote\\"`,
		"h1:AbC+/=~": `"h1:AbC+/=~"`,
	} {
		if got := starlarkString(in); got != want {
			t.Errorf("starlarkString(%q) = %s, want %s", in, got, want)
		}
	}
}
