package rebuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cacheon/engine/release/descriptor"
)

// entrypointMismatch describes an entrypoint rebuilt from source whose
// bytes are not the release's.
func entrypointMismatch(src *descriptor.EntrypointSource, want, got string) *Mismatch {
	return &Mismatch{What: fmt.Sprintf("the entrypoint built by bazel build %s at commit %s is sha256:%s, the release's is sha256:%s (compare `go version -m` of both; a release built from a working tree with uncommitted changes records a commit it was not built from)", src.BazelTarget, src.Commit, got, want)}
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

// buildEntrypoint rebuilds the entrypoint from source: a clone of repo at
// the recorded commit, the repository's own bootstrap, then the recorded
// Bazel target, in a Bazel output base of its own under work (removed
// with it). The shared disk cache of the repository's .bazelrc makes a
// rebuild on a machine that built the release mostly cache hits; on
// another machine it compiles everything.
func buildEntrypoint(src *descriptor.EntrypointSource, repo, work string, progress func(string)) ([]byte, error) {
	rel, err := binaryPath(src.BazelTarget)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(work, "entrypoint-source")
	run := func(what string, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
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
	if err := run("check out commit "+src.Commit, "git", "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", src.Commit); err != nil {
		return nil, err
	}
	progress("bootstrapping the build (tools/bootstrap.sh build: what bazel build needs, nothing more)")
	if err := run("bootstrap", "bash", "tools/bootstrap.sh", "build"); err != nil {
		return nil, err
	}
	outputBase := filepath.Join(work, "bazel-output-base")
	progress("bazel build " + src.BazelTarget)
	buildErr := run("bazel build "+src.BazelTarget, "bazel", "--output_base="+outputBase, "build", src.BazelTarget)
	// The server of this output base is not needed afterwards.
	_ = run("bazel shutdown", "bazel", "--output_base="+outputBase, "shutdown")
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
