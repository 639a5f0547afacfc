package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/image"
	"github.com/cacheon/engine/release/key"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/sign"
	"github.com/cacheon/engine/release/store"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// signedVersion builds and signs the fixture's release under another image
// name and date, so each version is a distinct image.
func signedVersion(t *testing.T, r *fixture.Release, name string, epoch int64) (dir, imageDigest string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "release")
	in := r.Inputs(dir)
	in.Name, in.Epoch = name, epoch
	res, err := build.Build(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := store.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Release(l, r.Signer); err != nil {
		t.Fatal(err)
	}
	return dir, res.ImageDigest
}

// channelVerifyReport is the part of verify's JSON report with a channel.
type channelVerifyReport struct {
	verifyReport
	Channel *struct {
		Record struct {
			Version     string `json:"version"`
			ImageDigest string `json:"image_digest"`
		} `json:"record"`
		Current string `json:"current"`
		Channel struct {
			TimestampVersion int64  `json:"timestamp_version"`
			Age              string `json:"age"`
		} `json:"channel"`
	} `json:"channel"`
}

func (r channelVerifyReport) last() (name string, ok bool, detail string) {
	c := r.Checks[len(r.Checks)-1]
	return c.Name, c.OK, c.Detail
}

// The consumer's channel workflow through the CLI: publish two versions,
// verify the current one, refuse the older one offered as current, pin it,
// withdraw, judge freshness, keep a retired key's release valid, and the
// entrypoint's same checks.
func TestReleaseChannelCommands(t *testing.T) {
	r := fixture.New(t)
	work := t.TempDir()
	keyFiles := map[string]string{}
	for _, role := range []string{"root", "targets", "online"} {
		prefix := filepath.Join(work, role)
		if code, _, errOut := run(t, "", "release", "keygen", "--out", prefix); code != 0 {
			t.Fatalf("keygen %s: %s", role, errOut)
		}
		keyFiles[role] = prefix + ".key"
	}
	ch := filepath.Join(work, "channel")
	root := filepath.Join(ch, "1.root.json")
	signing := []string{"--targets-key", keyFiles["targets"], "--online-key", keyFiles["online"]}
	code, out, errOut := run(t, "", "release", "channel", "init", ch, "--root-key", keyFiles["root"], "--targets-key", keyFiles["targets"], "--online-key", keyFiles["online"], "--now", "2026-06-01T00:00:00Z")
	if code != 0 || !strings.Contains(out, "consumers pin") {
		t.Fatalf("channel init: %d %s %s", code, out, errOut)
	}

	v1, v1Digest := signedVersion(t, r, "cacheon-engine:1.0.0", 1767225600)
	v2, v2Digest := signedVersion(t, r, "cacheon-engine:1.1.0", 1767312000)
	if v1Digest == v2Digest {
		t.Fatal("the two versions are one image")
	}
	publish := func(version, dir, now string) {
		t.Helper()
		args := append([]string{"release", "channel", "publish", ch, "--json", "--key", r.PublicKey, "--name", "cacheon-engine", "--version", version, "--now", now}, signing...)
		code, out, errOut := run(t, "", append(args, dir)...)
		if code != 0 {
			t.Fatalf("publish %s: %d %s %s", version, code, out, errOut)
		}
	}
	publish("1.0.0", v1, "2026-06-01T01:00:00Z")
	publish("1.1.0", v2, "2026-06-01T02:00:00Z")

	verifyAt := func(now string, extra []string, dir string) (int, channelVerifyReport, string) {
		t.Helper()
		args := append([]string{"release", "verify", "--json", "--key", r.PublicKey, "--now", now,
			"--channel", ch, "--channel-root", root, "--name", "cacheon-engine"}, extra...)
		code, out, errOut := run(t, "", append(args, dir)...)
		var rep channelVerifyReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("verify JSON: %v\n%s\n%s", err, out, errOut)
		}
		return code, rep, errOut
	}
	expectRefused := func(code int, rep channelVerifyReport, want string) {
		t.Helper()
		name, ok, detail := rep.last()
		if code != enginecli.ExitRejected || rep.Verified || name != "channel" || ok || !strings.Contains(detail, want) {
			t.Fatalf("exit %d, last check %s ok=%v %q; want channel refusing with %q", code, name, ok, detail, want)
		}
	}

	code, rep, errOut := verifyAt("2026-06-01T03:00:00Z", nil, v2)
	if name, ok, detail := rep.last(); code != 0 || !rep.Verified || name != "channel" || !ok || !strings.Contains(detail, "1.1.0 (the current release)") {
		t.Fatalf("verify the current release: exit %d, %s %v %q\n%s", code, name, ok, detail, errOut)
	}
	if rep.Channel == nil || rep.Channel.Record.ImageDigest != v2Digest || rep.Channel.Channel.Age != "1h0m0s ago" {
		t.Fatalf("report's channel object: %+v", rep.Channel)
	}
	// The older signed release offered under the current name.
	code, rep, _ = verifyAt("2026-06-01T03:00:00Z", nil, v1)
	expectRefused(code, rep, "is not the current one")
	// Pinned, it is accepted; a minimum above it is refused.
	if code, rep, errOut = verifyAt("2026-06-01T03:00:00Z", []string{"--version", "1.0.0"}, v1); code != 0 || !rep.Verified {
		t.Fatalf("verify a pinned version: %d %s", code, errOut)
	}
	code, rep, _ = verifyAt("2026-06-01T03:00:00Z", []string{"--min-version", "2.0.0"}, v2)
	expectRefused(code, rep, "below the minimum 2.0.0")
	// Frozen: a day after the last timestamp.
	code, rep, _ = verifyAt("2026-06-02T03:00:00Z", nil, v2)
	expectRefused(code, rep, "timestamp.json is expired")

	// Withdraw 1.1.0: it is refused with the reason, 1.0.0 is current again.
	args := append([]string{"release", "channel", "withdraw", ch, "--name", "cacheon-engine", "--version", "1.1.0", "--reason", "wrong logits at batch 64", "--now", "2026-06-01T04:00:00Z"}, signing...)
	if code, out, errOut := run(t, "", args...); code != 0 || !strings.Contains(out, "withdrew cacheon-engine 1.1.0") {
		t.Fatalf("withdraw: %d %s %s", code, out, errOut)
	}
	code, rep, _ = verifyAt("2026-06-01T05:00:00Z", []string{"--version", "1.1.0"}, v2)
	expectRefused(code, rep, "wrong logits at batch 64")
	if code, rep, errOut = verifyAt("2026-06-01T05:00:00Z", nil, v1); code != 0 || rep.Channel.Current != "1.0.0" {
		t.Fatalf("verify 1.0.0 after the withdrawal: %d %+v %s", code, rep.Channel, errOut)
	}
	code, out, _ = run(t, "", "release", "channel", "show", ch, "--channel-root", root, "--now", "2026-06-01T05:00:00Z")
	if code != 0 || !strings.Contains(out, "cacheon-engine 1.1.0 "+v2Digest+" WITHDRAWN 2026-06-01T04:00:00Z: wrong logits") {
		t.Fatalf("channel show: %d\n%s", code, out)
	}

	// The release key is retired after publication: without the channel
	// the release no longer verifies; with it, the key is judged at the
	// recorded publication time.
	pub, err := os.ReadFile(r.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	policy, _ := json.Marshal(map[string]any{"type": key.PolicyType, "keys": []map[string]string{{"public_key": string(pub), "not_after": "2026-06-01T01:30:00Z"}}})
	policyFile := filepath.Join(work, "retired.json")
	if err := os.WriteFile(policyFile, policy, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := run(t, "", "release", "verify", "--key", policyFile, "--now", "2026-06-01T05:00:00Z", v1); code != enginecli.ExitRejected {
		t.Fatalf("a retired key without the channel: exit %d, want %d", code, enginecli.ExitRejected)
	}
	code, out, errOut = run(t, "", "release", "verify", "--key", policyFile, "--now", "2026-06-01T05:00:00Z", "--channel", ch, "--channel-root", root, "--name", "cacheon-engine", v1)
	if code != 0 || !strings.Contains(out, "valid at 2026-06-01T01:00:00Z") {
		t.Fatalf("a retired key with the channel: %d\n%s\n%s", code, out, errOut)
	}

	// The entrypoint: serve --dry-run on the unpacked 1.0.0 image checks the
	// channel the same way.
	rootfs := filepath.Join(work, "rootfs")
	lp, err := layout.FromPath(v1)
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := lp.ImageIndex()
	im, _ := idx.IndexManifest()
	img, err := lp.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := image.Unpack(img, 0, rootfs); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(work, "v1.sigstore.json")
	if code, _, errOut = run(t, "", "release", "verify", "--key", r.PublicKey, "--bundle-out", bundle, v1); code != 0 {
		t.Fatalf("verify --bundle-out: %s", errOut)
	}
	serve := []string{"release", "serve", "--dry-run", "--root", rootfs, "--key", policyFile, "--bundle", bundle, "--model", r.ModelDir,
		"--channel", ch, "--channel-root", root, "--name", "cacheon-engine"}
	code, out, errOut = run(t, "", append(serve, "--now", "2026-06-01T05:00:00Z")...)
	if code != 0 || !strings.Contains(out, `"verified": true`) || !strings.Contains(out, `"current": "1.0.0"`) {
		t.Fatalf("serve --dry-run with the channel: %d\n%s\n%s", code, out, errOut)
	}
	// Publishing 1.2.0 makes 1.0.0 stale: the entrypoint refuses it.
	v3, _ := signedVersion(t, r, "cacheon-engine:1.2.0", 1767398400)
	publish("1.2.0", v3, "2026-06-01T06:00:00Z")
	serve[6] = r.PublicKey // the key flag's value: 1.2.0 was published after the retirement date
	code, _, errOut = run(t, "", append(serve, "--now", "2026-06-01T07:00:00Z")...)
	if code != enginecli.ExitRejected || !strings.Contains(errOut, "refusing to start") || !strings.Contains(errOut, "release descriptor") {
		t.Fatalf("serve a superseded release: %d %s", code, errOut)
	}
	code, _, errOut = run(t, "", append(serve, "--now", "2026-06-03T07:00:00Z", "--version", "1.0.0")...)
	if code != enginecli.ExitRejected || !strings.Contains(errOut, "timestamp.json is expired") {
		t.Fatalf("serve on an expired channel: %d %s", code, errOut)
	}

	// Bad input: a channel flag without its root, a missing channel.
	if code, _, errOut = run(t, "", "release", "verify", "--key", r.PublicKey, "--channel", ch, "--name", "cacheon-engine", v1); code == 0 || !strings.Contains(errOut, "--channel-root") {
		t.Fatalf("verify --channel without --channel-root: %d %s", code, errOut)
	}
	code, rep, _ = verifyAt("2026-06-01T07:00:00Z", nil, v3)
	if code != 0 {
		t.Fatalf("verify 1.2.0: %d", code)
	}
	// A channel that is not there or cannot be reached gave nothing to
	// judge: exit 1 (the contract's no verdict), naming where it looked.
	for _, where := range []string{filepath.Join(work, "nowhere"), "http://127.0.0.1:1/channel/"} {
		args = []string{"release", "verify", "--json", "--key", r.PublicKey, "--channel", where, "--channel-root", root, "--name", "cacheon-engine", v3}
		code, out, errOut = run(t, "", args...)
		if code != enginecli.ExitError || !strings.Contains(errOut, strings.TrimSuffix(where, "channel/")) {
			t.Fatalf("verify against a missing channel %s: %d %s %s", where, code, out, errOut)
		}
	}
}
