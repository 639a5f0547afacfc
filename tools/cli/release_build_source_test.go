package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/provenance"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// What release build records as its entrypoint's source: the URL given,
// normalized; a local path refused (exit 2, naming the flag and the way
// out) before anything is written; and with --allow-local-source, a
// loud warning and a release that records an unpublished local checkout,
// never the builder's path.
func TestReleaseBuildEntrypointSource(t *testing.T) {
	r := fixture.New(t)
	dir := t.TempDir()
	commit := strings.Repeat("c", 40)
	build := func(out string, extra ...string) (int, string, string) {
		args := append([]string{"release", "build",
			"--engine-tree", r.EngineTree, "--release-manifest", r.ReleaseManifest, "--review", r.ReviewFile,
			"--substrate", r.Substrate, "--model-receipt", r.ModelReceipt, "--entrypoint", r.Entrypoint,
			"--name", "cacheon-engine:1.0", "--source-date-epoch", "1767225600", "--out", out,
			"--entrypoint-source-commit", commit}, extra...)
		return run(t, "", args...)
	}
	recorded := func(out string) (*provenance.Resource, string) {
		t.Helper()
		p, err := provenance.Parse(fixture.Attached(t, out, store.ArtifactProvenance))
		if err != nil {
			t.Fatal(err)
		}
		dep, ok := provenance.Find(p.Dependencies, provenance.DepEntrypointSrc)
		if !ok {
			t.Fatalf("the provenance of %s has no %s dependency", out, provenance.DepEntrypointSrc)
		}
		return dep, string(fixture.Attached(t, out, store.ArtifactSBOM))
	}

	t.Run("a URL is recorded", func(t *testing.T) {
		out := filepath.Join(dir, "url")
		code, _, errOut := build(out, "--entrypoint-source-repo", "HTTPS://Example.com/cacheon/engine.git/")
		if code != 0 {
			t.Fatalf("release build: %d %s", code, errOut)
		}
		if strings.Contains(errOut, "WARNING") {
			t.Errorf("a fetchable source warned: %s", errOut)
		}
		dep, sbomDoc := recorded(out)
		if want := "git+https://example.com/cacheon/engine.git"; dep.URI != want || dep.Digest["gitCommit"] != commit {
			t.Errorf("provenance records %q at %v, want %q at %s", dep.URI, dep.Digest, want, commit)
		}
		if !strings.Contains(sbomDoc, "built from https://example.com/cacheon/engine.git at git commit "+commit) {
			t.Errorf("the SBOM does not name the URL and commit")
		}
	})

	for name, local := range map[string]string{"absolute path": r.Repo, "file URL": "file://" + r.Repo, "relative path": "."} {
		t.Run("refused "+name, func(t *testing.T) {
			out := filepath.Join(dir, "refused")
			code, _, errOut := build(out, "--entrypoint-source-repo", local)
			if code != enginecli.ExitRejected || !strings.Contains(errOut, "--entrypoint-source-repo") || !strings.Contains(errOut, "local path") ||
				!strings.Contains(errOut, "--allow-local-source") {
				t.Fatalf("exit %d, stderr %q; want exit %d naming --entrypoint-source-repo, why, and --allow-local-source", code, errOut, enginecli.ExitRejected)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused build left %s (%v)", out, err)
			}
		})
	}

	t.Run("allowed", func(t *testing.T) {
		out := filepath.Join(dir, "allowed")
		code, _, errOut := build(out, "--entrypoint-source-repo", r.Repo, "--allow-local-source")
		if code != 0 {
			t.Fatalf("release build: %d %s", code, errOut)
		}
		if !strings.Contains(errOut, "WARNING: --allow-local-source") || !strings.Contains(errOut, "no consumer can fetch") {
			t.Errorf("no warning on stderr: %q", errOut)
		}
		dep, sbomDoc := recorded(out)
		if dep.URI != "" || dep.Annotations["repository"] != descriptor.UnpublishedRepository || dep.Digest["gitCommit"] != commit {
			t.Errorf("provenance records uri %q, annotations %v, digest %v; want no URI, an unpublished checkout at %s", dep.URI, dep.Annotations, dep.Digest, commit)
		}
		prov := string(fixture.Attached(t, out, store.ArtifactProvenance))
		for what, doc := range map[string]string{"provenance": prov, "SBOM": sbomDoc} {
			if strings.Contains(doc, r.Repo) || strings.Contains(doc, r.Dir) {
				t.Errorf("the %s names the builder's path %s", what, r.Repo)
			}
		}
	})

	t.Run("neither URL nor path", func(t *testing.T) {
		code, _, errOut := build(filepath.Join(dir, "bad"), "--entrypoint-source-repo", "https://user:token@example.com/engine.git", "--allow-local-source")
		if code != enginecli.ExitRejected || !strings.Contains(errOut, "password or token") || strings.Contains(errOut, "token@") {
			t.Fatalf("exit %d, stderr %q; want a refusal of the credential that does not repeat it", code, errOut)
		}
	})

	t.Run("allow without a source", func(t *testing.T) {
		code, _, errOut := run(t, "", "release", "build", "--engine-tree", r.EngineTree, "--release-manifest", r.ReleaseManifest,
			"--substrate", r.Substrate, "--model-receipt", r.ModelReceipt, "--entrypoint", r.Entrypoint,
			"--name", "x:1", "--out", filepath.Join(dir, "none"), "--allow-local-source")
		if code != enginecli.ExitRejected || !strings.Contains(errOut, "--allow-local-source goes with --entrypoint-source-repo") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
	})
}
