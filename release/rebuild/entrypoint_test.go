package rebuild

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/key"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store"
)

func TestBinaryPath(t *testing.T) {
	for target, want := range map[string]string{
		"//tools/cmd/cacheon-engine:cacheon-engine": "tools/cmd/cacheon-engine/cacheon-engine_/cacheon-engine",
		"//tools/cmd/cacheon-engine":                "tools/cmd/cacheon-engine/cacheon-engine_/cacheon-engine",
		"//tools/cmd/cacheon:cacheon":               "tools/cmd/cacheon/cacheon_/cacheon",
		"//tools/cmd/cacheon":                       "tools/cmd/cacheon/cacheon_/cacheon",
		"//a/b:tool":                                "a/b/tool_/tool",
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
	commit := strings.Repeat("c", 40)
	l, pol := signedWithSource(t, r, "https://example.com/cacheon.git", commit)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no source repository", Options{Policy: pol}, "no --source-repo to rebuild " + commit + " from; git clone https://example.com/cacheon.git"},
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
	_, err := Run(l, Options{Policy: pol, SourceRepo: r.Repo, RunSourceBuild: true})
	if err == nil || !strings.Contains(err.Error(), "check out commit "+commit) {
		t.Fatalf("rebuild from a repository without the commit: %v", err)
	}
}

// A release built from an unpublished local checkout records no path,
// only the commit: it still verifies and rebuilds byte for byte (the
// recorded repository is copied, not fetched), and a rebuild from source
// clones what --source-repo names, at the recorded commit.
func TestRebuildUnpublishedSource(t *testing.T) {
	r := fixture.New(t)
	commit := hostileSource(t, r.Repo, "")
	l, pol := signedWithSource(t, r, descriptor.UnpublishedRepository, commit)
	res, err := Run(l, Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Match || !res.ProvenanceMatch || !res.SBOMMatch || !strings.Contains(res.EntrypointSource, "names no public repository") {
		t.Fatalf("match %v, provenance %v, SBOM %v, entrypoint %q; want a byte-for-byte match saying no repository is named",
			res.Match, res.ProvenanceMatch, res.SBOMMatch, res.EntrypointSource)
	}
	// The bootstrap of that commit stops the build (exit 3): reaching it
	// shows the clone came from --source-repo at the recorded commit.
	_, err = Run(l, Options{Policy: pol, SourceRepo: r.Repo, RunSourceBuild: true})
	if err == nil || !strings.Contains(err.Error(), "bootstrap: exit status 3") {
		t.Fatalf("rebuild from --source-repo: %v; want the commit's own bootstrap to have run", err)
	}
}

// signedWithSource builds and signs the fixture's release recording that
// its entrypoint is built from commit of repo.
func signedWithSource(t *testing.T, r *fixture.Release, repo, commit string) (store.Store, *key.Policy) {
	t.Helper()
	out := r.SignedFrom(t, &descriptor.EntrypointSource{Repository: repo, Commit: commit, BazelTarget: "//tools/cmd/cacheon-engine:cacheon-engine"})
	l, err := store.OpenLayout(out)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := key.LoadPolicy(r.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return l, pol
}

// hostileSource commits to the git repository repo a tools/bootstrap.sh
// as a hostile release signer would ship it: it runs more (shell lines),
// writes its whole environment into the clone it runs in (where the test
// reads it back) and stops the build, so no Bazel runs. It returns the
// commit.
func hostileSource(t *testing.T, repo, more string) string {
	t.Helper()
	script := "#!/bin/sh\n" + more + "env > build-env.txt\nexit 3\n"
	if err := os.MkdirAll(filepath.Join(repo, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "tools", "bootstrap.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=signer", "-c", "user.email=signer@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("add", "tools/bootstrap.sh")
	git("commit", "--quiet", "-m", "bootstrap")
	return git("rev-parse", "HEAD")
}

// A rebuild from source runs the source's own tools/bootstrap.sh: code
// the release's signer chose. Without the opt-in it is refused (a
// rejection naming the flag and the risk) and nothing is cloned or run;
// with it, the script sees only the allow-listed environment (PATH, a
// fresh HOME in the work directory, LANG, TZ, and what the caller names
// on purpose), never the caller's: a canary variable set here must not
// reach it.
func TestRebuildFromSourceIsContained(t *testing.T) {
	const canary = "CACHEON_REBUILD_CANARY"
	t.Setenv(canary, "the caller's secret")
	r := fixture.New(t)
	repo := r.Repo
	l, pol := signedWithSource(t, r, repo, hostileSource(t, repo, ""))

	work := t.TempDir()
	_, err := Run(l, Options{Policy: pol, SourceRepo: repo, Work: work})
	if !reject.Is(err) || !strings.Contains(err.Error(), RunSourceBuildFlag) || !strings.Contains(err.Error(), "tools/bootstrap.sh") ||
		!strings.Contains(err.Error(), "--entrypoint-from-image") {
		t.Fatalf("without %s: err = %v, want a rejection naming the flag, the script and the way around it", RunSourceBuildFlag, err)
	}
	if left, _ := filepath.Glob(filepath.Join(work, "*", "entrypoint-source")); len(left) > 0 {
		t.Fatalf("the source was cloned without consent: %v", left)
	}

	_, err = Run(l, Options{Policy: pol, SourceRepo: repo, Work: work, RunSourceBuild: true, SourceBuildEnv: []string{"GOFLAGS=-mod=mod"}})
	if err == nil || !strings.Contains(err.Error(), "bootstrap: exit status 3") {
		t.Fatalf("err = %v, want the hostile bootstrap's own failure", err)
	}
	found, _ := filepath.Glob(filepath.Join(work, "*", "entrypoint-source", "build-env.txt"))
	if len(found) != 1 {
		t.Fatalf("the bootstrap left no record of its environment: %v", found)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(mustReadFile(t, found[0]))), "\n") {
		name, value, _ := strings.Cut(line, "=")
		got[name] = value
	}
	if _, ok := got[canary]; ok {
		t.Errorf("the caller's %s reached the source's build script", canary)
	}
	home, err := filepath.EvalSymlinks(got["HOME"])
	if err != nil {
		t.Fatalf("HOME %q: %v", got["HOME"], err)
	}
	root, _ := filepath.EvalSymlinks(work)
	if !strings.HasPrefix(home, root+string(filepath.Separator)) {
		t.Errorf("HOME = %q, want a fresh directory in the work directory %s", got["HOME"], work)
	}
	for name, want := range map[string]string{"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC", "GOFLAGS": "-mod=mod"} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
	// What sh itself sets (PWD, SHLVL, _) aside, nothing else.
	for name := range got {
		switch name {
		case "PATH", "HOME", "LANG", "TZ", "GOFLAGS", "PWD", "OLDPWD", "SHLVL", "_":
		default:
			t.Errorf("%s reached the source's build script", name)
		}
	}
}

// A variable handed over on purpose must be NAME=VALUE with a variable's
// name; anything else is refused before any work.
func TestRebuildRefusesABadSourceBuildEnv(t *testing.T) {
	t.Parallel()
	r := fixture.New(t)
	l, pol := signedWithSource(t, r, r.Repo, strings.Repeat("c", 40))
	for _, kv := range []string{"NOVALUE", "=x", "1X=y", "A-B=c", "A=b\x00c"} {
		_, err := Run(l, Options{Policy: pol, SourceRepo: r.Repo, RunSourceBuild: true, SourceBuildEnv: []string{kv}})
		if !reject.Is(err) || !strings.Contains(err.Error(), SourceBuildEnvFlag) {
			t.Errorf("%q: err = %v, want a rejection naming %s", kv, err, SourceBuildEnvFlag)
		}
	}
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Run as root, the source's build steps can be run as an unprivileged
// user: the hostile bootstrap then runs as that uid and gid with no other
// groups, and cannot write a file the caller owns, which as root it could.
// A work directory the user cannot reach is refused before any build step
// runs, naming the directory in the way.
func TestRebuildFromSourceAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching the build steps' user needs root")
	}
	t.Parallel()
	victimDir, err := os.MkdirTemp("", "rebuild-victim-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(victimDir) })
	if err := os.Chmod(victimDir, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(victimDir, "caller-owned.txt")
	if err := os.WriteFile(victim, []byte("the caller's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := fixture.New(t)
	more := "id -u > uid.txt\nid -g > gid.txt\nid -G > groups.txt\necho planted >> " + victim + "\n"
	l, pol := signedWithSource(t, r, r.Repo, hostileSource(t, r.Repo, more))
	user := &BuildUser{UID: 65534, GID: 65534}

	unreachable := t.TempDir() // below the test's own 0700 directory
	_, err = Run(l, Options{Policy: pol, SourceRepo: r.Repo, Work: unreachable, RunSourceBuild: true, BuildUser: user})
	if !reject.Is(err) || !strings.Contains(err.Error(), "cannot search "+filepath.Dir(unreachable)) {
		t.Fatalf("err = %v, want a rejection naming %s", err, filepath.Dir(unreachable))
	}
	if left, _ := filepath.Glob(filepath.Join(unreachable, "*", "entrypoint-source")); len(left) > 0 {
		t.Fatalf("the source was cloned for a build its user could not run: %v", left)
	}

	work, err := os.MkdirTemp("", "rebuild-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Run(l, Options{Policy: pol, SourceRepo: r.Repo, Work: work, RunSourceBuild: true, BuildUser: user})
	if err == nil || !strings.Contains(err.Error(), "bootstrap: exit status 3") {
		t.Fatalf("err = %v, want the hostile bootstrap's own failure", err)
	}
	clone, _ := filepath.Glob(filepath.Join(work, "*", "entrypoint-source"))
	if len(clone) != 1 {
		t.Fatalf("clones: %v", clone)
	}
	for file, want := range map[string]string{"uid.txt": "65534", "gid.txt": "65534", "groups.txt": "65534"} {
		if got := strings.TrimSpace(string(mustReadFile(t, filepath.Join(clone[0], file)))); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if got := string(mustReadFile(t, victim)); got != "the caller's\n" {
		t.Errorf("the build steps wrote the caller's file: %q", got)
	}
}

func TestParseBuildUser(t *testing.T) {
	t.Parallel()
	if u, err := ParseBuildUser("65534:65533"); err != nil || *u != (BuildUser{UID: 65534, GID: 65533}) {
		t.Errorf("ParseBuildUser(65534:65533) = %v, %v", u, err)
	}
	for _, s := range []string{"", "65534", "nobody:nogroup", "0:65534", "65534:0", "-1:5", "65534:65534:1", "4294967296:1"} {
		if _, err := ParseBuildUser(s); !reject.Is(err) || !strings.Contains(err.Error(), SourceBuildUserFlag) {
			t.Errorf("ParseBuildUser(%q) = %v, want a rejection naming %s", s, err, SourceBuildUserFlag)
		}
	}
}
