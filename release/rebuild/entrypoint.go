package rebuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/descriptor"
)

// entrypointMismatch describes an entrypoint rebuilt from source whose
// bytes are not the release's.
func entrypointMismatch(src *descriptor.EntrypointSource, want, got string) *Mismatch {
	return &Mismatch{What: fmt.Sprintf("the entrypoint built by bazel build %s at commit %s is sha256:%s, the release's is sha256:%s (compare `go version -m` of both; a release built from a working tree with uncommitted changes records a commit it was not built from)", src.BazelTarget, src.Commit, got, want)}
}

// fetchHint says where a consumer gets the commit a release's entrypoint
// is built from, for a rebuild that was given no --source-repo: the
// recorded URL when a consumer can fetch it. A rebuild never clones the
// recorded repository itself; the caller chooses what to clone and what
// to trust, and passes the checkout as --source-repo.
func fetchHint(src *descriptor.EntrypointSource) string {
	if url, kind, err := descriptor.ClassifyRepository(src.Repository); err == nil && kind == descriptor.Fetchable {
		return "git clone " + url + " and pass the clone as --source-repo"
	}
	return "the release names no public repository holding it"
}

// binaryPath is where a rules_go go_binary's executable lands under
// bazel-bin: //pkg:name -> pkg/name_/name.
func binaryPath(target string) (string, error) {
	label := strings.TrimPrefix(target, "//")
	pkg, name, ok := strings.Cut(label, ":")
	if !ok {
		pkg, name = label, filepath.Base(label)
	}
	if name == "" || strings.Contains(pkg, "..") {
		return "", fmt.Errorf("bazel target %q: want //package:name of a go_binary", target)
	}
	return filepath.Join(filepath.FromSlash(pkg), name+"_", name), nil
}

// RunSourceBuildFlag is the command line's opt-in to running the source
// repository's own build steps. Its name states the risk: the steps are
// whatever the repository's tools/bootstrap.sh and BUILD files say, code
// chosen by whoever controls that repository (for a consumer, the release
// signer), and they run on this machine as the caller's user.
const RunSourceBuildFlag = "--run-source-build-scripts"

// SourceBuildEnvFlag names a variable the caller hands to those steps on
// purpose (NAME=VALUE); nothing else of the caller's environment reaches
// them.
const SourceBuildEnvFlag = "--source-build-env"

// sourceBuildRefusal is why a rebuild that would run the source's build
// steps stops when the caller has not opted in: the refusal names the
// flag, the risk and the way to rebuild without running them.
func sourceBuildRefusal(src *descriptor.EntrypointSource) error {
	return reject.Errorf("the release records its entrypoint's source (commit %s, bazel build %s): rebuilding it runs "+
		"that commit's tools/bootstrap.sh and bazel build, code the release's signer controls, on this machine as your "+
		"user; pass %s to run them (with an emptied environment, %s), or --entrypoint-from-image to take the binary "+
		"from the image and rebuild the rest", src.Commit, src.BazelTarget, RunSourceBuildFlag, strings.Join(baseEnvNames, ", "))
}

// baseEnvNames are the variables every source build step gets, and the
// only ones unless the caller names more (SourceBuildEnv).
var baseEnvNames = []string{"PATH=/usr/bin:/bin", "HOME=<a fresh directory in the work directory>", "LANG=C.UTF-8", "TZ=UTC"}

// sourceBuildEnv is the whole environment of the source's build steps:
// a search path of the system's own directories, a fresh empty HOME
// under work (so no caller configuration, credential, cache or token
// file under the caller's home is read or written through ~), a fixed
// locale and time zone, then the caller's explicit NAME=VALUE additions,
// which may override those. The build steps are the source's code: the
// caller's environment (tokens, proxies' credentials, agent sockets) is
// not theirs to read.
func sourceBuildEnv(work string, extra []string) ([]string, error) {
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("the source build's home directory: %w", err)
	}
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "TZ": "UTC"}
	for _, kv := range extra {
		name, value, err := parseEnvPair(kv)
		if err != nil {
			return nil, err
		}
		env[name] = value
	}
	out := make([]string, 0, len(env))
	for name, value := range env {
		out = append(out, name+"="+value)
	}
	sort.Strings(out)
	return out, nil
}

// parseEnvPair reads one NAME=VALUE of SourceBuildEnv. A bad one is
// refused before anything runs.
func parseEnvPair(kv string) (string, string, error) {
	name, value, ok := strings.Cut(kv, "=")
	if !ok || name == "" {
		return "", "", reject.Errorf("%s %q: want NAME=VALUE", SourceBuildEnvFlag, kv)
	}
	for i, c := range name {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return "", "", reject.Errorf("%s %q: %q is not a variable name", SourceBuildEnvFlag, kv, name)
		}
	}
	if strings.ContainsRune(value, 0) {
		return "", "", reject.Errorf("%s %q: the value holds a NUL byte", SourceBuildEnvFlag, name)
	}
	return name, value, nil
}

// buildEntrypoint rebuilds the entrypoint from source: a clone of repo at
// the recorded commit, the repository's own bootstrap, then the recorded
// Bazel target, in a Bazel output base of its own under work (removed
// with it). The clone and checkout are this program's git, run as the
// caller. The bootstrap and Bazel are the source's own steps: they run
// with env (sourceBuildEnv) and nothing else of the caller's environment.
// A HOME of their own also means a cold Bazel disk cache and Go module
// cache unless the caller hands its own over (SourceBuildEnv HOME=...),
// which it should do only for a source it trusts as much as itself.
//
// With a user, the steps run as that user (the caller being root), and
// the directories they write (the clone, their HOME, the output base) are
// handed to it first: the build then cannot write anything the caller
// owns, nor read what only the caller may read.
func buildEntrypoint(src *descriptor.EntrypointSource, repo, work string, env []string, user *BuildUser, progress func(string)) ([]byte, error) {
	rel, err := binaryPath(src.BazelTarget)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "entrypoint-source")
	// run runs one step in the clone; env nil is the caller's environment
	// (git), otherwise exactly env.
	run := func(what string, env []string, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if env != nil {
			cmd.Env = env
			if user != nil {
				cmd.SysProcAttr = asUser(cmd.SysProcAttr, user)
			}
			// Found on the steps' own PATH, not the caller's.
			if p, err := lookPath(name, env); err == nil {
				cmd.Path = p
			} else {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			tail := out.String()
			if len(tail) > 4000 {
				tail = "..." + tail[len(tail)-4000:]
			}
			return fmt.Errorf("%s: %v\n%s", what, err, tail)
		}
		return nil
	}
	progress(fmt.Sprintf("cloning %s at %s", repo, src.Commit))
	if out, err := exec.Command("git", "clone", "--quiet", "--no-checkout", repo, dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("clone the entrypoint's source %s: %v: %s", repo, err, out)
	}
	if err := run("check out commit "+src.Commit, nil, "git", "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", src.Commit); err != nil {
		return nil, err
	}
	names := make([]string, len(env))
	for i, kv := range env {
		names[i], _, _ = strings.Cut(kv, "=")
	}
	outputBase := filepath.Join(work, "bazel-output-base")
	who := "as this user"
	if user != nil {
		if err := os.MkdirAll(outputBase, 0o700); err != nil {
			return nil, err
		}
		if err := handOver(user, dir, filepath.Join(work, "home"), outputBase); err != nil {
			return nil, err
		}
		who = fmt.Sprintf("as uid %d, gid %d", user.UID, user.GID)
	}
	progress("running the source's build steps " + who + ", with only " + strings.Join(names, ", ") + " in their environment")
	progress("bootstrapping the build (tools/bootstrap.sh build: what bazel build needs, nothing more)")
	if err := run("bootstrap", env, "bash", "tools/bootstrap.sh", "build"); err != nil {
		return nil, err
	}
	progress("bazel build " + src.BazelTarget)
	buildErr := run("bazel build "+src.BazelTarget, env, "bazel", "--output_base="+outputBase, "build", src.BazelTarget)
	// The server of this output base is not needed afterwards.
	_ = run("bazel shutdown", env, "bazel", "--output_base="+outputBase, "shutdown")
	if buildErr != nil {
		return nil, buildErr
	}
	b, err := os.ReadFile(filepath.Join(dir, "bazel-bin", rel))
	if err != nil {
		return nil, fmt.Errorf("the rebuilt entrypoint: %w", err)
	}
	// Bazel leaves its output base read-only in places; make it
	// removable with the work directory.
	_ = exec.Command("chmod", "-R", "u+w", outputBase).Run()
	return b, nil
}

// lookPath finds name on the PATH of env, as the child would: a step's
// program is looked up where its own environment says, never on the
// caller's PATH.
func lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // a relative entry would resolve in the clone
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on the build steps' PATH %q", name, path)
}
