package channel_test

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/channel"
	"github.com/cacheon/engine/release/key"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func genKey(t *testing.T, a key.Algorithm) crypto.Signer {
	t.Helper()
	k, err := key.Generate(a)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type fixture struct {
	dir  string
	keys channel.Keys
	root []byte // 1.root.json, the consumer's pinned root
}

func newChannel(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		dir: filepath.Join(t.TempDir(), "channel"),
		keys: channel.Keys{
			Root:    genKey(t, key.Ed25519),
			Targets: genKey(t, key.ECDSAP256),
			Online:  genKey(t, key.Ed25519),
		},
	}
	if err := channel.Init(f.dir, f.keys, t0, channel.DefaultExpiry); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.root, err = os.ReadFile(filepath.Join(f.dir, "1.root.json")); err != nil {
		t.Fatal(err)
	}
	return f
}

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func hexOf(c byte) string { return strings.Repeat(string(c), 64) }

func (f *fixture) publish(t *testing.T, version string, c byte, at time.Time) {
	t.Helper()
	r, err := channel.Open(f.dir, at, channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	rec := channel.Record{Name: "cacheon-engine", Version: version, ImageDigest: digest(c), DescriptorDigest: hexOf(c + 1), KeyID: "key-1", PublishedAt: at}
	if err := r.Publish(rec, f.keys); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) load(t *testing.T, now time.Time, state string) (*channel.Channel, error) {
	t.Helper()
	return channel.Load(channel.Options{Source: channel.Dir(f.dir), TrustedRoot: f.root, Now: now, State: state})
}

func mustRefuse(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want a refusal containing %q", want)
	}
	if !errors.Is(err, channel.ErrChannel) || !reject.Is(err) {
		t.Errorf("error %v is not a channel rejection", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func TestSelect(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "0.1.0", 'a', t0.Add(time.Hour))
	f.publish(t, "0.2.0", 'c', t0.Add(2*time.Hour))
	f.publish(t, "0.2.0-rc.1", 'e', t0.Add(3*time.Hour))
	ch, err := f.load(t, t0.Add(4*time.Hour), "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		q           channel.Query
		wantVersion string
		wantErr     string
	}{
		{"current is the highest version", channel.Query{Name: "cacheon-engine"}, "0.2.0", ""},
		{"a pinned older version", channel.Query{Name: "cacheon-engine", Version: "0.1.0"}, "0.1.0", ""},
		{"a pre-release below its release", channel.Query{Name: "cacheon-engine", Version: "0.2.0-rc.1"}, "0.2.0-rc.1", ""},
		{"minimum met", channel.Query{Name: "cacheon-engine", MinVersion: "0.2.0"}, "0.2.0", ""},
		{"minimum above current", channel.Query{Name: "cacheon-engine", MinVersion: "0.3.0"}, "", "below the minimum 0.3.0"},
		{"unpublished version", channel.Query{Name: "cacheon-engine", Version: "9.9.9"}, "", "not published in the channel (current: 0.2.0)"},
		{"unknown name", channel.Query{Name: "other"}, "", "publishes no release named other"},
		{"bad version", channel.Query{Name: "cacheon-engine", Version: "1.0"}, "", "want a semantic version"},
		{"both version and minimum", channel.Query{Name: "cacheon-engine", Version: "0.1.0", MinVersion: "0.1.0"}, "", "not both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := ch.Select(tc.q)
			if tc.wantErr != "" {
				mustRefuse(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sel.Record.Version != tc.wantVersion || sel.Current != "0.2.0" {
				t.Errorf("selected %s (current %s), want %s (current 0.2.0)", sel.Record.Version, sel.Current, tc.wantVersion)
			}
		})
	}

	// An older signed release offered as the current one (re-tagged) is
	// refused; the current one matches.
	sel, err := ch.Select(channel.Query{Name: "cacheon-engine"})
	if err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, sel.Match(digest('a'), hexOf('b'), "key-1"), "is not the current one")
	mustRefuse(t, sel.Match(digest('c'), hexOf('d'), "key-2"), "recorded key key-1")
	if err := sel.Match(digest('c'), hexOf('d'), "key-1"); err != nil {
		t.Fatal(err)
	}
	// Inside an image the manifest digest is unknown: the descriptor decides.
	if err := sel.Match("", hexOf('d'), "key-1"); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, sel.Match("", hexOf('b'), "key-1"), "release descriptor")
	if got := sel.Record.PublishedAt; !got.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("published_at %s, want %s", got, t0.Add(2*time.Hour))
	}
}

func TestPublishRefusals(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	r, err := channel.Open(f.dir, t0, channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	same := channel.Record{Name: "cacheon-engine", Version: "1.0.0", ImageDigest: digest('a'), DescriptorDigest: hexOf('b'), KeyID: "key-1"}
	if err := r.Publish(same, f.keys); err != nil {
		t.Fatalf("publishing the same record again: %v", err)
	}
	tests := []struct {
		name string
		rec  channel.Record
		keys channel.Keys
		want string
	}{
		{"another image under a published version", channel.Record{Name: "cacheon-engine", Version: "1.0.0", ImageDigest: digest('c'), DescriptorDigest: hexOf('d'), KeyID: "key-1"}, f.keys, "names one image forever"},
		{"the published image under another version", channel.Record{Name: "cacheon-engine", Version: "1.1.0", ImageDigest: digest('a'), DescriptorDigest: hexOf('b'), KeyID: "key-1"}, f.keys, "is already published as cacheon-engine 1.0.0"},
		{"bad name", channel.Record{Name: "Cacheon", Version: "1.0.1", ImageDigest: digest('c'), DescriptorDigest: hexOf('d'), KeyID: "key-1"}, f.keys, "lower-case"},
		{"bad digest", channel.Record{Name: "cacheon-engine", Version: "1.0.1", ImageDigest: "sha256:ab", DescriptorDigest: hexOf('d'), KeyID: "key-1"}, f.keys, "image_digest"},
		{"no key id", channel.Record{Name: "cacheon-engine", Version: "1.0.1", ImageDigest: digest('c'), DescriptorDigest: hexOf('d')}, f.keys, "key_id"},
		{"a targets key the root does not name", channel.Record{Name: "cacheon-engine", Version: "1.0.1", ImageDigest: digest('c'), DescriptorDigest: hexOf('d'), KeyID: "key-1"},
			channel.Keys{Root: f.keys.Root, Targets: genKey(t, key.Ed25519), Online: f.keys.Online}, "not the channel's targets key"},
		{"an online key the root does not name", channel.Record{Name: "cacheon-engine", Version: "1.0.1", ImageDigest: digest('c'), DescriptorDigest: hexOf('d'), KeyID: "key-1"},
			channel.Keys{Root: f.keys.Root, Targets: f.keys.Targets, Online: genKey(t, key.Ed25519)}, "not the channel's snapshot key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshotDir(t, f.dir)
			r, err := channel.Open(f.dir, t0, channel.DefaultExpiry)
			if err != nil {
				t.Fatal(err)
			}
			err = r.Publish(tc.rec, tc.keys)
			if err == nil || !reject.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("publish: %v, want a rejection containing %q", err, tc.want)
			}
			if after := snapshotDir(t, f.dir); after != before {
				t.Errorf("a refused publish changed the channel")
			}
		})
	}
	if err := channel.Init(f.dir, f.keys, t0, channel.DefaultExpiry); err == nil || !strings.Contains(err.Error(), "already holds a channel") {
		t.Errorf("init over a channel: %v", err)
	}
}

// snapshotDir summarizes a directory's files and contents.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		b.WriteString(p + "\x00" + string(data) + "\x00")
		return nil
	})
	return b.String()
}

func TestWithdraw(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	f.publish(t, "1.1.0", 'c', t0.Add(time.Hour))
	r, err := channel.Open(f.dir, t0.Add(2*time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Withdraw("cacheon-engine", "1.1.0", "CVE-2026-0001 in the attention kernel", f.keys); err != nil {
		t.Fatal(err)
	}
	ch, err := f.load(t, t0.Add(3*time.Hour), "")
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ch.Select(channel.Query{Name: "cacheon-engine"})
	if err != nil {
		t.Fatal(err)
	}
	if sel.Record.Version != "1.0.0" {
		t.Errorf("current after withdrawing 1.1.0 is %s, want 1.0.0", sel.Record.Version)
	}
	_, err = ch.Select(channel.Query{Name: "cacheon-engine", Version: "1.1.0"})
	mustRefuse(t, err, "withdrawn on 2026-06-01T14:00:00Z: CVE-2026-0001")

	for _, tc := range []struct{ name, version, reason, want string }{
		{"again", "1.1.0", "x", "already withdrawn"},
		{"unpublished", "2.0.0", "x", "not published"},
		{"no reason", "1.0.0", "", "needs a reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := channel.Open(f.dir, t0.Add(4*time.Hour), channel.DefaultExpiry)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Withdraw("cacheon-engine", tc.version, tc.reason, f.keys); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("withdraw: %v, want %q", err, tc.want)
			}
		})
	}
	r, err = channel.Open(f.dir, t0.Add(5*time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Publish(channel.Record{Name: "cacheon-engine", Version: "1.1.0", ImageDigest: digest('c'), DescriptorDigest: hexOf('d'), KeyID: "key-1"}, f.keys)
	if err == nil || !strings.Contains(err.Error(), "cannot be published again") {
		t.Errorf("republishing a withdrawn version: %v", err)
	}
}

func TestFreshness(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	ch, err := f.load(t, t0.Add(23*time.Hour), "")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Status.Age != "23h0m0s ago" || !ch.Status.TimestampExpires.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("status %+v", ch.Status)
	}
	// Frozen: nobody refreshed the timestamp for a day.
	_, err = f.load(t, t0.Add(25*time.Hour), "")
	mustRefuse(t, err, "timestamp.json is expired")
	mustRefuse(t, err, "expired on 2026-06-02T12:00:00Z, 1h0m0s ago")
	// The scheduled refresh brings it back.
	r, err := channel.Open(f.dir, t0.Add(25*time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Refresh(f.keys); err != nil {
		t.Fatal(err)
	}
	if _, err := f.load(t, t0.Add(26*time.Hour), ""); err != nil {
		t.Fatal(err)
	}
	// Refreshing the timestamp does not extend the release list: after 90
	// days without a targets signature the channel is refused, and a
	// refresh says so instead of "ok", writing nothing.
	r, err = channel.Open(f.dir, t0.Add(91*24*time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, f.dir)
	err = r.Refresh(f.keys)
	if err == nil || !reject.Is(err) || !strings.Contains(err.Error(), "consumers would refuse the channel this leaves") || !strings.Contains(err.Error(), "targets is expired") {
		t.Fatalf("refresh over an expired release list: %v", err)
	}
	if snapshotDir(t, f.dir) != before {
		t.Error("a refused refresh wrote to the channel")
	}
	_, err = f.load(t, t0.Add(91*24*time.Hour+time.Hour), "")
	mustRefuse(t, err, "expired")
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
}

func TestKeyRotation(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	newTargets := genKey(t, key.Ed25519)
	r, err := channel.Open(f.dir, t0.Add(time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Rotate(channel.RoleTargets, newTargets, f.keys); err != nil {
		t.Fatal(err)
	}
	// The retired targets key can no longer publish.
	r, err = channel.Open(f.dir, t0.Add(2*time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Publish(channel.Record{Name: "cacheon-engine", Version: "1.0.1", ImageDigest: digest('c'), DescriptorDigest: hexOf('d'), KeyID: "key-1"}, f.keys)
	if err == nil || !strings.Contains(err.Error(), "not the channel's targets key") {
		t.Fatalf("publish with the retired targets key: %v", err)
	}
	f.keys.Targets = newTargets
	f.publish(t, "1.0.1", 'c', t0.Add(2*time.Hour))

	// The root itself, then the online key.
	newRoot := genKey(t, key.ECDSAP256)
	r, err = channel.Open(f.dir, t0.Add(3*time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Rotate(channel.RoleRoot, newRoot, f.keys); err != nil {
		t.Fatal(err)
	}
	f.keys.Root = newRoot
	newOnline := genKey(t, key.Ed25519)
	r, err = channel.Open(f.dir, t0.Add(4*time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Rotate(channel.RoleOnline, newOnline, f.keys); err != nil {
		t.Fatal(err)
	}

	// A client pinned to root version 1 walks to version 4.
	ch, err := f.load(t, t0.Add(5*time.Hour), "")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Status.RootVersion != 4 {
		t.Errorf("root version %d, want 4", ch.Status.RootVersion)
	}
	sel, err := ch.Select(channel.Query{Name: "cacheon-engine"})
	if err != nil || sel.Record.Version != "1.0.1" {
		t.Fatalf("select: %v %+v", err, sel)
	}

	// A root not signed by the previous root's key breaks the chain.
	forged := newChannel(t) // another channel's keys
	b, err := os.ReadFile(filepath.Join(forged.dir, "1.root.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "5.root.json"), []byte(strings.Replace(string(b), `"version": 1`, `"version": 5`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = f.load(t, t0.Add(5*time.Hour), "")
	mustRefuse(t, err, "5.root.json")
}

func TestTamperedChannel(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		edit   func(string) string
		remove bool
		want   string
	}{
		{"release record edited", "targets/cacheon-engine/1.0.0.json", func(s string) string { return strings.Replace(s, "aaaa", "bbbb", 1) }, false, "does not match its signed length and hash"},
		{"release record removed", "targets/cacheon-engine/1.0.0.json", nil, true, "no such file"},
		{"targets edited", "targets.json", func(s string) string {
			return strings.Replace(s, `"targets": {`, `"targets": {"x/1.0.0.json": {"length": 1, "hashes": {"sha256": "00"}},`, 1)
		}, false, "targets.json"},
		{"timestamp signature replaced", "timestamp.json", func(s string) string { return strings.Replace(s, `"sig": "`, `"sig": "00`, 1) }, false, "timestamp.json"},
		{"snapshot removed", "snapshot.json", nil, true, "snapshot.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newChannel(t)
			f.publish(t, "1.0.0", 'a', t0)
			p := filepath.Join(f.dir, filepath.FromSlash(tc.file))
			if tc.remove {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			} else {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				edited := tc.edit(string(b))
				if edited == string(b) {
					t.Fatal("the edit changed nothing")
				}
				if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ch, err := f.load(t, t0.Add(time.Hour), "")
			if err == nil {
				_, err = ch.Select(channel.Query{Name: "cacheon-engine"})
			}
			mustRefuse(t, err, tc.want)
		})
	}
}

func TestDirRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.json"), make([]byte, channel.MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"big.json", "larger than"},
		{"link.json", "not a regular file"},
		{"../x.json", "not a clean relative path"},
		{"missing.json", "no such file"},
	} {
		if _, err := channel.Dir(dir).Read(tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("read %s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	// Ascending by semantic-version precedence (semver.org's own example).
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0", "10.0.0"}
	for i := range order {
		if err := channel.CheckVersion(order[i]); err != nil {
			t.Fatal(err)
		}
		for j := range order {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := channel.CompareVersions(order[i], order[j]); got != want {
				t.Errorf("CompareVersions(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	for _, bad := range []string{"1.0", "01.0.0", "1.0.0+build", "v1.0.0", "1.0.0-", ""} {
		if channel.CheckVersion(bad) == nil {
			t.Errorf("CheckVersion(%q) accepted", bad)
		}
	}
}

// A channel served over HTTP (the publisher's directory behind a file
// server) checks like the directory; a server answering oversized files
// or errors is refused.
func TestHTTPSource(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	srv := httptest.NewServer(http.FileServer(http.Dir(f.dir)))
	defer srv.Close()
	src, err := channel.OpenSource(context.Background(), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	ch, err := channel.Load(channel.Options{Source: src, TrustedRoot: f.root, Now: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ch.Select(channel.Query{Name: "cacheon-engine"})
	if err != nil || sel.Record.ImageDigest != digest('a') {
		t.Fatalf("select over HTTP: %v %+v", err, sel)
	}
	if _, err := src.Read("2.root.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a 404 is %v, want fs.ErrNotExist", err)
	}

	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, channel.MaxFileBytes+1))
	}))
	defer huge.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer broken.Close()
	for _, tc := range []struct{ url, want string }{
		{huge.URL, "larger than"},
		{broken.URL, "503"},
	} {
		src, err := channel.OpenSource(context.Background(), tc.url)
		if err != nil {
			t.Fatal(err)
		}
		_, err = channel.Load(channel.Options{Source: src, TrustedRoot: f.root, Now: t0.Add(time.Hour)})
		mustRefuse(t, err, tc.want)
	}
	if _, err := channel.NewHTTP(context.Background(), "ftp://example.com/"); err == nil {
		t.Error("an ftp URL was accepted")
	}
}

// TestOneWriterAtATime: while one publisher holds the channel (from
// OpenWriter to Close), every other write — publish, init, another
// writer — is refused at once naming the holder, and nothing is written;
// after Close the next writer goes on from what the first committed.
func TestOneWriterAtATime(t *testing.T) {
	f := newChannel(t)
	first, err := channel.OpenWriter(f.dir, t0, channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(f.dir, "targets.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		write func() error
	}{
		{"a second writer", func() error {
			r, err := channel.OpenWriter(f.dir, t0, channel.DefaultExpiry)
			if err == nil {
				r.Close()
			}
			return err
		}},
		{"init over it", func() error { return channel.Init(f.dir, f.keys, t0, channel.DefaultExpiry) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.write()
			if !errors.Is(err, channel.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d holds %s", os.Getpid(), channel.LockPath(f.dir))) {
				t.Fatalf("error %v, want ErrLocked naming this process", err)
			}
			if reject.Is(err) {
				t.Errorf("a held lock is not a rejected input: %v", err)
			}
		})
	}
	if after, _ := os.ReadFile(filepath.Join(f.dir, "targets.json")); string(after) != string(before) {
		t.Fatal("a refused writer changed targets.json")
	}
	rec := channel.Record{Name: "cacheon-engine", Version: "0.1.0", ImageDigest: digest('a'), DescriptorDigest: hexOf('b'), KeyID: "key-1", PublishedAt: t0}
	if err := first.Publish(rec, f.keys); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := channel.OpenWriter(f.dir, t0.Add(time.Minute), channel.DefaultExpiry)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	defer second.Close()
	rec.Version, rec.ImageDigest, rec.DescriptorDigest = "0.2.0", digest('c'), hexOf('d')
	if err := second.Publish(rec, f.keys); err != nil {
		t.Fatal(err)
	}
	got, err := second.Releases()
	if err != nil || len(got) != 2 {
		t.Fatalf("releases %+v, %v; want both", got, err)
	}
}

// TestRotateRootWithAKeyTheRootDoesNotName: a root rotation signed with a
// key the current root does not name would leave a root no consumer can
// reach from the first one; it is refused before anything is written.
func TestRotateRootWithAKeyTheRootDoesNotName(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	r, err := channel.Open(f.dir, t0.Add(time.Hour), channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshotDir(t, f.dir)
	wrong := f.keys
	wrong.Root = genKey(t, key.Ed25519)
	err = r.Rotate(channel.RoleRoot, genKey(t, key.ECDSAP256), wrong)
	if err == nil || !reject.Is(err) {
		t.Fatalf("rotate with a root key the root does not name: %v", err)
	}
	if snapshotDir(t, f.dir) != before {
		t.Fatal("a refused rotation wrote to the channel")
	}
	if _, err := f.load(t, t0.Add(2*time.Hour), ""); err != nil {
		t.Fatalf("the channel after the refused rotation: %v", err)
	}
}

// TestAClockFarBehindIsRefused: a consumer whose clock is far behind the
// channel's signing (where nothing has expired yet) is refused and told
// to set its clock; a few minutes of skew is accepted.
func TestAClockFarBehindIsRefused(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0.Add(24*time.Hour))
	if _, err := f.load(t, t0.Add(24*time.Hour-5*time.Minute), ""); err != nil {
		t.Fatalf("five minutes behind: %v", err)
	}
	_, err := f.load(t, t0.Add(24*time.Hour-2*time.Hour), "")
	mustRefuse(t, err, "2h0m0s after this machine's clock")
	mustRefuse(t, err, "the clock is behind")
}
