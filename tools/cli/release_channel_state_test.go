package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/cacheon/engine/release/channel"
	"github.com/cacheon/engine/release/image"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// channelWorld is a channel that published 1.0.0 and then 1.1.0, a copy
// of it from before 1.1.0 (what a stale mirror serves), and 1.0.0's image
// unpacked with the bundle the entrypoint needs.
type channelWorld struct {
	r                *fixture.Release
	ch, old, root    string
	v1, v2           string
	rootfs, bundle   string
	other, otherRoot string // a second channel, under other keys, listing 1.0.0
}

func newChannelWorld(t *testing.T) *channelWorld {
	t.Helper()
	w := &channelWorld{r: fixture.New(t)}
	work := t.TempDir()
	keys := func(prefix string) []string {
		var flags []string
		for _, role := range []string{"root", "targets", "online"} {
			p := filepath.Join(work, prefix+role)
			if code, _, errOut := run(t, "", "release", "keygen", "--out", p); code != 0 {
				t.Fatalf("keygen %s: %s", role, errOut)
			}
			flags = append(flags, "--"+role+"-key", p+".key")
		}
		return flags
	}
	initChannel := func(dir string, keyFlags []string) {
		t.Helper()
		if code, out, errOut := run(t, "", append([]string{"release", "channel", "init", dir, "--now", "2026-06-01T00:00:00Z"}, keyFlags...)...); code != 0 {
			t.Fatalf("channel init: %s %s", out, errOut)
		}
	}
	publish := func(dir string, keyFlags []string, version, release, now string) {
		t.Helper()
		args := append([]string{"release", "channel", "publish", dir, "--key", w.r.PublicKey, "--name", "cacheon-engine", "--version", version, "--now", now}, keyFlags[2:]...)
		if code, out, errOut := run(t, "", append(args, release)...); code != 0 {
			t.Fatalf("publish %s: %s %s", version, out, errOut)
		}
	}
	w.v1, _ = signedVersion(t, w.r, "cacheon-engine:1.0.0", 1767225600)
	w.v2, _ = signedVersion(t, w.r, "cacheon-engine:1.1.0", 1767312000)
	first := keys("")
	w.ch, w.old = filepath.Join(work, "channel"), filepath.Join(work, "old")
	w.root = filepath.Join(w.ch, "1.root.json")
	initChannel(w.ch, first)
	publish(w.ch, first, "1.0.0", w.v1, "2026-06-01T01:00:00Z")
	copyDir(t, w.ch, w.old)
	publish(w.ch, first, "1.1.0", w.v2, "2026-06-01T02:00:00Z")
	second := keys("other-")
	w.other = filepath.Join(work, "other")
	w.otherRoot = filepath.Join(w.other, "1.root.json")
	initChannel(w.other, second)
	publish(w.other, second, "1.0.0", w.v1, "2026-06-01T01:00:00Z")

	// 1.0.0 unpacked, for the entrypoint.
	w.rootfs = filepath.Join(work, "rootfs")
	lp, err := layout.FromPath(w.v1)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := lp.ImageIndex()
	im, _ := idx.IndexManifest()
	img, err := lp.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(w.rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := image.Unpack(img, 0, w.rootfs); err != nil {
		t.Fatal(err)
	}
	w.bundle = filepath.Join(work, "v1.sigstore.json")
	if code, _, errOut := run(t, "", "release", "verify", "--key", w.r.PublicKey, "--bundle-out", w.bundle, w.v1); code != 0 {
		t.Fatalf("verify --bundle-out: %s", errOut)
	}
	return w
}

// stateFileOf is the state file a check of the channel whose root is
// rootFile keeps under dir.
func stateFileOf(t *testing.T, dir, rootFile string) string {
	t.Helper()
	b, err := os.ReadFile(rootFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := channel.StatePath(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReleaseChannelStateByDefault: with no state flag, verify and serve
// keep the channel's state in the cache directory, so a second run,
// another process, refuses the older copy of the channel a stale mirror
// serves; --no-channel-state accepts it and warns; each channel has its
// own state; a corrupt state or no place for one is an error, not a
// silent check without protection.
func TestReleaseChannelStateByDefault(t *testing.T) {
	w := newChannelWorld(t)
	const now = "2026-06-01T03:00:00Z"
	verify := func(ch, root, release string, extra ...string) []string {
		return append([]string{"release", "verify", "--key", w.r.PublicKey, "--now", now,
			"--channel", ch, "--channel-root", root, "--name", "cacheon-engine"}, append(extra, release)...)
	}
	serve := func(ch, root string, extra ...string) []string {
		args := []string{"release", "serve", "--dry-run", "--root", w.rootfs, "--key", w.r.PublicKey, "--bundle", w.bundle, "--model", w.r.ModelDir, "--now", now}
		if ch != "" {
			args = append(args, "--channel", ch, "--channel-root", root, "--name", "cacheon-engine", "--version", "1.0.0")
		}
		return append(args, extra...)
	}
	type step struct {
		args []string
		// env is added to the process's environment; cache is replaced
		// by the case's own cache directory.
		env  []string
		code int
		want []string // in stdout or stderr; {state} is the default state file, {dir} the case's state directory
		not  []string
	}
	warning := "warning: --no-channel-state: rollback protection is off"
	cases := []struct {
		name  string
		steps []step
		// after checks the case's cache directory.
		after func(t *testing.T, cache string)
	}{
		{
			name: "a rollback is refused across two runs with no flags",
			steps: []step{
				{args: verify(w.ch, w.root, w.v2), want: []string{"cacheon-engine 1.1.0 (the current release)", "state {state} (new)"}},
				{args: verify(w.old, w.root, w.v1), code: enginecli.ExitRejected, want: []string{
					"FAIL channel", "an older copy of the channel: timestamp.json is version 2, but this machine accepted version 3 on 2026-06-01T03:00:00Z (state {state})"}},
			},
		},
		{
			name: "--no-channel-state accepts the older copy and warns",
			steps: []step{
				{args: verify(w.ch, w.root, w.v2)},
				{args: verify(w.old, w.root, w.v1, "--no-channel-state"), want: []string{warning, "cacheon-engine 1.0.0 (the current release)", "no state kept (--no-channel-state)"}},
			},
		},
		{
			name: "a state directory given is used instead of the cache",
			steps: []step{
				{args: verify(w.ch, w.root, w.v2, "--channel-state", "{dir}"), want: []string{"state {dir}/"}, not: []string{warning}},
				{args: verify(w.old, w.root, w.v1, "--channel-state", "{dir}"), code: enginecli.ExitRejected, want: []string{"an older copy of the channel"}},
				// The cache directory holds nothing of it.
				{args: verify(w.old, w.root, w.v1), want: []string{"state {state} (new)"}},
			},
		},
		{
			name: "two channels keep a state each",
			steps: []step{
				{args: verify(w.ch, w.root, w.v2), want: []string{"state {state} (new)"}},
				{args: verify(w.other, w.otherRoot, w.v1), want: []string{"(new)"}},
				{args: verify(w.ch, w.root, w.v2), want: []string{"; state {state}\n"}, not: []string{"(new)"}},
				{args: verify(w.other, w.otherRoot, w.v1), not: []string{"(new)"}},
			},
			after: func(t *testing.T, cache string) {
				files, _ := filepath.Glob(filepath.Join(cache, "channel-state", "*.json"))
				if len(files) != 2 {
					t.Errorf("state files %v, want one per channel", files)
				}
			},
		},
		{
			name: "a corrupt state file is an error naming it",
			steps: []step{
				{args: verify(w.ch, w.root, w.v2)},
				{args: []string{"CORRUPT"}},
				{args: verify(w.ch, w.root, w.v2), code: enginecli.ExitRejected, want: []string{"channel state {state}: does not parse", "it is not replaced"}},
			},
		},
		{
			name: "no cache directory and no flag: no check without protection",
			steps: []step{
				{args: verify(w.ch, w.root, w.v2), env: []string{enginecli.CacheEnv + "=off"}, code: enginecli.ExitError, want: []string{"no directory to keep the channel's state in", "--channel-state DIR", "--no-channel-state"}},
				{args: verify(w.ch, w.root, w.v2, "--no-channel-state"), env: []string{enginecli.CacheEnv + "=off"}, want: []string{warning}},
			},
		},
		{
			name: "contradicting or idle state flags",
			steps: []step{
				{args: verify(w.ch, w.root, w.v2, "--no-channel-state", "--channel-state", "{dir}"), code: enginecli.ExitError, want: []string{"not both"}},
				{args: []string{"release", "verify", "--key", w.r.PublicKey, "--no-channel-state", w.v2}, code: enginecli.ExitError, want: []string{"need --channel"}},
			},
		},
		{
			name: "serve says which channel, release and state it checked",
			steps: []step{
				{args: serve(w.ch, w.root), want: []string{
					"cacheon release serve: channel " + w.ch + ": cacheon-engine 1.0.0 is pinned (current is 1.1.0) (root v1, timestamp v3 signed 1h0m0s ago); state {state} (new)"}},
				{args: serve(w.old, w.root), code: enginecli.ExitRejected, want: []string{"refusing to start", "an older copy of the channel", "(state {state})"}},
				{args: serve(w.old, w.root, "--no-channel-state"), want: []string{warning,
					"cacheon release serve: channel " + w.old + ": cacheon-engine 1.0.0 is the current release (root v1, timestamp v2 signed 2h0m0s ago); no state kept (--no-channel-state)"}},
			},
		},
		{
			name: "serve says it checked no channel",
			steps: []step{
				{args: serve("", ""), want: []string{"cacheon release serve: no release channel checked (no --channel)"}, not: []string{"cacheon release serve: channel "}},
			},
		},
		{
			// As for verify: no channel to judge is no verdict (exit 1),
			// never a refusal of the release.
			name: "serve with a channel that is not there or cannot be reached does not start",
			steps: []step{
				{args: serve(w.ch+"-nowhere", w.root), code: enginecli.ExitError, want: []string{"cannot start: ", w.ch + "-nowhere"}, not: []string{"refusing to start"}},
				{args: serve("http://127.0.0.1:1/channel/", w.root), code: enginecli.ExitError, want: []string{"cannot start: ", "http://127.0.0.1:1/channel/"}, not: []string{"refusing to start"}},
			},
		},
		{
			name: "serve with nowhere to keep state does not start",
			steps: []step{
				{args: serve(w.ch, w.root), env: []string{enginecli.CacheEnv + "=off"}, code: enginecli.ExitError, want: []string{"cannot start: release channel: no directory to keep the channel's state in"}, not: []string{"refusing to start"}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cache, dir := t.TempDir(), filepath.Join(t.TempDir(), "state")
			state := stateFileOf(t, filepath.Join(cache, "channel-state"), w.root)
			for i, s := range c.steps {
				if len(s.args) == 1 && s.args[0] == "CORRUPT" {
					if err := os.WriteFile(state, []byte("{\"type\": "), 0o600); err != nil {
						t.Fatal(err)
					}
					continue
				}
				args := make([]string, len(s.args))
				for j, a := range s.args {
					args[j] = strings.ReplaceAll(a, "{dir}", dir)
				}
				// Each step is its own process, as two runs of a
				// consumer are.
				env := []string{enginecli.CacheEnv + "=" + cache}
				env = append(env, s.env...)
				code, out, errOut := subprocess{dir: t.TempDir(), env: env, args: args}.run(t)
				all := out + errOut
				if code != s.code {
					t.Fatalf("step %d (%s): exit %d, want %d\n%s", i, strings.Join(s.args, " "), code, s.code, all)
				}
				for _, want := range s.want {
					want = strings.ReplaceAll(strings.ReplaceAll(want, "{state}", state), "{dir}", dir)
					if !strings.Contains(all, want) {
						t.Errorf("step %d: output lacks %q\n%s", i, want, all)
					}
				}
				for _, not := range s.not {
					if strings.Contains(all, not) {
						t.Errorf("step %d: output has %q\n%s", i, not, all)
					}
				}
			}
			if c.after != nil {
				c.after(t, cache)
			}
		})
	}
}
