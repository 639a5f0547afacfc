package rebuild

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
)

func TestBinaryPath(t *testing.T) {
	for target, want := range map[string]string{
		"//tools/cmd/cacheon:cacheon": "tools/cmd/cacheon/cacheon_/cacheon",
		"//tools/cmd/cacheon":         "tools/cmd/cacheon/cacheon_/cacheon",
		"//a/b:tool":                  "a/b/tool_/tool",
	} {
		if got, err := binaryPath(target); err != nil || got != filepath.FromSlash(want) {
			t.Errorf("binaryPath(%q) = %q, %v; want %q", target, got, err, want)
		}
	}
	if _, err := binaryPath("//../x:y"); err == nil {
		t.Error("a package path with .. was accepted")
	}
}

// A release that records its entrypoint's source: without --source-repo,
// or with --entrypoint-from-image, the binary is taken from the image and
// the result says so; with a repository that lacks the commit, the
// rebuild fails naming it instead of passing silently.
func TestRebuildEntrypointSource(t *testing.T) {
	r := fixture.New(t)
	out := filepath.Join(t.TempDir(), "release")
	in := r.Inputs(out)
	commit := strings.Repeat("c", 40)
	in.EntrypointSource = &descriptor.EntrypointSource{Repository: "https://example.com/cacheon.git", Commit: commit, BazelTarget: "//tools/cmd/cacheon:cacheon"}
	if _, err := build.Build(in, nil); err != nil {
		t.Fatal(err)
	}
	l, err := store.OpenLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	pol, err := key.LoadPolicy(r.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no source repository", Options{Policy: pol}, "no --source-repo to rebuild " + commit},
		{"from the image on request", Options{Policy: pol, SourceRepo: r.Repo, EntrypointFromImage: true}, "--entrypoint-from-image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(l, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Match || res.EntrypointRebuilt || !strings.Contains(res.EntrypointSource, tc.want) {
				t.Fatalf("match %v, rebuilt %v, entrypoint %q; want a match taking it from the image with %q", res.Match, res.EntrypointRebuilt, res.EntrypointSource, tc.want)
			}
		})
	}
	_, err = Run(l, Options{Policy: pol, SourceRepo: r.Repo})
	if err == nil || !strings.Contains(err.Error(), "check out commit "+commit) {
		t.Fatalf("rebuild from a repository without the commit: %v", err)
	}
}
