package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/descriptor"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// A release that records its entrypoint's source: rebuilding it from
// --source-repo would run that commit's tools/bootstrap.sh and bazel
// build, code the release's signer chose. Without
// --run-source-build-scripts the command refuses (exit 2) naming the flag
// and the risk, and a malformed --source-build-env or a build user of
// root is refused too; with --entrypoint-from-image nothing of the source
// runs and no opt-in is needed.
func TestReleaseRebuildFromSourceNeedsConsent(t *testing.T) {
	t.Parallel()
	r := fixture.New(t)
	head, err := exec.Command("git", "-C", r.Repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	out := r.SignedFrom(t, &descriptor.EntrypointSource{Repository: r.Repo, Commit: strings.TrimSpace(string(head)), BazelTarget: "//tools/cmd/cacheon-engine:cacheon-engine"})
	rebuild := []string{"release", "rebuild", "--key", r.PublicKey, "--source-repo", r.Repo}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // in stderr
	}{
		{"no consent", nil, enginecli.ExitRejected, []string{"--run-source-build-scripts", "tools/bootstrap.sh", "code the release's signer controls", "--entrypoint-from-image"}},
		{"a malformed variable", []string{"--run-source-build-scripts", "--source-build-env", "NOT-A-NAME=1"}, enginecli.ExitRejected, []string{"--source-build-env", "is not a variable name"}},
		{"the build user root", []string{"--run-source-build-scripts", "--source-build-user", "0:0"}, enginecli.ExitRejected, []string{"--source-build-user", "must not run as root"}},
		{"the entrypoint from the image", []string{"--entrypoint-from-image"}, enginecli.ExitOK, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", append(append(append([]string{}, rebuild...), tc.args...), out)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not name %q:\n%s", w, stderr)
				}
			}
		})
	}
}
