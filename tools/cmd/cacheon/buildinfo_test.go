package main

import (
	"debug/buildinfo"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var binary = flag.String("cacheon", "", "the cacheon binary Bazel linked (set by the go_test's args)")

// The binary Bazel links carries Go's module information: what `go
// version -m` and vulnerability scanners read from the file, and what the
// program itself reads at run time.
func TestBazelBinaryCarriesGoBuildInfo(t *testing.T) {
	if *binary == "" {
		t.Skip("run by bazel test //tools/cmd/cacheon:cacheon_test, which passes the linked binary")
	}
	// rootpath is relative to the runfiles tree; the test runs in its
	// package's directory inside it.
	bin := *binary
	if dir := os.Getenv("TEST_SRCDIR"); dir != "" && !filepath.IsAbs(bin) {
		bin = filepath.Join(dir, os.Getenv("TEST_WORKSPACE"), bin)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != "github.com/cacheon/engine/tools/cmd/cacheon" || info.Main.Path != "github.com/cacheon/engine" || info.Main.Version != "(devel)" {
		t.Fatalf("path %q, main module %+v", info.Path, info.Main)
	}
	deps := map[string]string{}
	for _, m := range info.Deps {
		if m.Version == "" || !strings.HasPrefix(m.Sum, "h1:") {
			t.Errorf("module %s %s has no version or go.sum hash (%q)", m.Path, m.Version, m.Sum)
		}
		deps[m.Path] = m.Version
	}
	for _, want := range []string{"github.com/spf13/cobra", "github.com/google/go-containerregistry", "modernc.org/sqlite", "github.com/theupdateframework/go-tuf/v2"} {
		if deps[want] == "" {
			t.Errorf("module %s is not listed (deps: %d)", want, len(deps))
		}
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["GOOS"] != runtime.GOOS || settings["GOARCH"] != runtime.GOARCH {
		t.Errorf("settings %v, want CGO_ENABLED=0 GOOS=%s GOARCH=%s", settings, runtime.GOOS, runtime.GOARCH)
	}

	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		MainModule string `json:"main_module"`
		Modules    []struct {
			Path, Version string
		} `json:"modules"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	if rep.MainModule != info.Main.Path || len(rep.Modules) != len(info.Deps) {
		t.Errorf("at run time: main %q, %d modules; in the file: %q, %d", rep.MainModule, len(rep.Modules), info.Main.Path, len(info.Deps))
	}
}
