package channel_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cacheon/engine/internal/writerlock"
	"github.com/cacheon/engine/release/channel"
	"github.com/cacheon/engine/release/key"
)

func (f *fixture) refresh(t *testing.T, at time.Time, keys channel.Keys) {
	t.Helper()
	r, err := channel.Open(f.dir, at, channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Refresh(keys); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) rotate(t *testing.T, at time.Time, role string, newKey key.Algorithm) {
	t.Helper()
	k := genKey(t, newKey)
	r, err := channel.Open(f.dir, at, channel.DefaultExpiry)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Rotate(role, k, f.keys); err != nil {
		t.Fatal(err)
	}
	switch role {
	case channel.RoleRoot:
		f.keys.Root = k
	case channel.RoleTargets:
		f.keys.Targets = k
	case channel.RoleOnline:
		f.keys.Online = k
	}
}

// statePath is the one state file a check with state dir made.
func statePath(t *testing.T, f *fixture, dir string) string {
	t.Helper()
	p, err := channel.StatePath(dir, f.root)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustAccept returns a check's channel, failing the test when the check
// (given to the function it returns) refused: mustAccept(t, what)(Load(…)).
func mustAccept(t *testing.T, what string) func(*channel.Channel, error) *channel.Channel {
	t.Helper()
	return func(ch *channel.Channel, err error) *channel.Channel {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return ch
	}
}

// TestStateRefusesAnOlderChannel: with state, every way of offering an
// older view of the channel than the one accepted last is refused, naming
// the offered and the stored version and the state file; without state
// the same copy is accepted (which is why state is the default).
func TestStateRefusesAnOlderChannel(t *testing.T) {
	cases := []struct {
		name string
		// older makes the older view of f's channel, after the state
		// accepted the current one at t0+3h.
		older func(t *testing.T, f *fixture, old string) *fixture
		want  string
	}{
		{
			name: "a mirror serving the copy from before a withdrawal",
			older: func(t *testing.T, f *fixture, old string) *fixture {
				return &fixture{dir: old, root: f.root}
			},
			want: "timestamp.json is version 2, but this machine accepted version 4 on 2026-06-01T15:00:00Z",
		},
		{
			// The online key's holder signs a new timestamp and
			// snapshot over the old release list: only the release
			// list is older.
			name: "a fresh timestamp over the old release list",
			older: func(t *testing.T, f *fixture, old string) *fixture {
				b, err := os.ReadFile(filepath.Join(old, "targets.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(f.dir, "targets.json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
				f.refresh(t, t0.Add(3*time.Hour+time.Minute), f.keys)
				return f
			},
			want: "targets.json is version 2, but this machine accepted version 4",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newChannel(t)
			f.publish(t, "1.0.0", 'a', t0)
			old := filepath.Join(t.TempDir(), "old")
			copyDir(t, f.dir, old)
			r, err := channel.Open(f.dir, t0.Add(time.Hour), channel.DefaultExpiry)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Withdraw("cacheon-engine", "1.0.0", "broken", f.keys); err != nil {
				t.Fatal(err)
			}
			f.publish(t, "1.0.1", 'c', t0.Add(2*time.Hour))
			state := filepath.Join(t.TempDir(), "state")
			ch := mustAccept(t, "the genuine channel")(channel.Load(channel.Options{Source: channel.Dir(f.dir), TrustedRoot: f.root, Now: t0.Add(3 * time.Hour), State: state}))
			file := statePath(t, f, state)
			if ch.Status.State != file || !ch.Status.StateCreated {
				t.Errorf("status names state %q (created %v), want %q created", ch.Status.State, ch.Status.StateCreated, file)
			}
			before, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}

			older := c.older(t, f, old)
			if _, err := older.load(t, t0.Add(4*time.Hour), ""); err != nil {
				t.Fatalf("without state the older view is accepted: %v", err)
			}
			_, err = older.load(t, t0.Add(4*time.Hour), state)
			mustRefuse(t, err, c.want)
			mustRefuse(t, err, "an older copy of the channel")
			mustRefuse(t, err, "(state "+file+")")
			if after, _ := os.ReadFile(file); string(after) != string(before) {
				t.Error("a refused check rewrote the state")
			}
			if c.name == "a mirror serving the copy from before a withdrawal" {
				mustAccept(t, "the genuine channel again")(f.load(t, t0.Add(4*time.Hour), state))
			}
		})
	}
}

// TestStateStaysWithItsChannel: two channels checked with one state
// directory keep a file each, named by their root key, and neither's
// check disturbs the other's.
func TestStateStaysWithItsChannel(t *testing.T) {
	a, b := newChannel(t), newChannel(t)
	a.publish(t, "1.0.0", 'a', t0)
	b.publish(t, "2.0.0", 'b', t0)
	state := t.TempDir()
	for i := range 2 {
		for _, f := range []*fixture{a, b} {
			ch := mustAccept(t, "check")(channel.Load(channel.Options{Source: channel.Dir(f.dir), TrustedRoot: f.root, Now: t0.Add(time.Duration(i+1) * time.Hour), State: state}))
			if ch.Status.State != statePath(t, f, state) || ch.Status.StateCreated != (i == 0) {
				t.Fatalf("check %d of %s: state %q created %v", i, f.dir, ch.Status.State, ch.Status.StateCreated)
			}
		}
	}
	if statePath(t, a, state) == statePath(t, b, state) {
		t.Fatal("two channels share a state file")
	}
	files, _ := filepath.Glob(filepath.Join(state, "*.json"))
	if len(files) != 2 {
		t.Fatalf("state files %v, want one per channel", files)
	}
}

// TestStateKeepsTheNewestRoot: once a check has accepted a root rotation,
// a mirror that withholds it cannot bring the retired online key back,
// even when the consumer still pins the first root; and a consumer that
// pins the newer root starts from it whatever an older state holds.
func TestStateKeepsTheNewestRoot(t *testing.T) {
	setup := func(t *testing.T) (f *fixture, retired *fixture) {
		f = newChannel(t)
		f.publish(t, "1.0.0", 'a', t0)
		old := filepath.Join(t.TempDir(), "old")
		copyDir(t, f.dir, old)
		retiredKeys := f.keys
		f.rotate(t, t0.Add(time.Hour), channel.RoleOnline, key.Ed25519)
		// Whoever holds the retired online key signs newer timestamps
		// over the old copy, which has no 2.root.json.
		retired = &fixture{dir: old, root: f.root}
		for i := range 3 {
			retired.refresh(t, t0.Add(2*time.Hour+time.Duration(i)*time.Minute), retiredKeys)
		}
		return f, retired
	}
	rootV2 := func(t *testing.T, f *fixture) []byte {
		b, err := os.ReadFile(filepath.Join(f.dir, "2.root.json"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		// prepare fills the state before the retired key's copy is
		// offered, and returns the root the consumer pins then.
		prepare func(t *testing.T, f, retired *fixture, state string) []byte
	}{
		{"the state walked to root 2, the pin is root 1", func(t *testing.T, f, _ *fixture, state string) []byte {
			ch := mustAccept(t, "the rotated channel")(f.load(t, t0.Add(150*time.Minute), state))
			if ch.Status.RootVersion != 2 {
				t.Fatalf("root version %d, want 2", ch.Status.RootVersion)
			}
			return f.root
		}},
		{"the state holds root 1, the pin is root 2", func(t *testing.T, f, retired *fixture, state string) []byte {
			// The state was made under root 1, before the consumer
			// knew of the rotation; then the consumer pins root 2.
			mustAccept(t, "the copy under root 1")(retired.load(t, t0.Add(150*time.Minute), state))
			return rootV2(t, f)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, retired := setup(t)
			state := t.TempDir()
			pin := c.prepare(t, f, retired, state)
			if _, err := channel.Load(channel.Options{Source: channel.Dir(retired.dir), TrustedRoot: f.root, Now: t0.Add(3 * time.Hour)}); err != nil {
				t.Fatalf("a stateless client pinned to root 1 accepts the retired key's timestamps (the attack state prevents): %v", err)
			}
			_, err := channel.Load(channel.Options{Source: channel.Dir(retired.dir), TrustedRoot: pin, Now: t0.Add(3 * time.Hour), State: state})
			mustRefuse(t, err, "timestamp.json")
			mustRefuse(t, err, "not enough signatures")
		})
	}
	// The message says what happened when the state brought the root.
	f, retired := setup(t)
	state := t.TempDir()
	mustAccept(t, "the rotated channel")(f.load(t, t0.Add(150*time.Minute), state))
	_, err := retired.load(t, t0.Add(3*time.Hour), state)
	mustRefuse(t, err, "this machine accepted root version 2 before (state "+statePath(t, f, state)+"), and the channel does not hold 2.root.json")
}

// TestAnOnlineKeyRotationResetsItsVersions: versions signed by an online
// key that was rotated out are no floor for the new key's (a thief of the
// old key may have pushed them up), as TUF's fast-forward recovery says.
func TestAnOnlineKeyRotationResetsItsVersions(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	stolen := &fixture{dir: filepath.Join(t.TempDir(), "stolen"), root: f.root}
	copyDir(t, f.dir, stolen.dir)
	for i := range 5 {
		stolen.refresh(t, t0.Add(time.Hour+time.Duration(i)*time.Minute), f.keys)
	}
	state := t.TempDir()
	ch := mustAccept(t, "the copy pushed up with the stolen key")(stolen.load(t, t0.Add(2*time.Hour), state))
	if ch.Status.TimestampVersion != 7 {
		t.Fatalf("timestamp version %d, want 7", ch.Status.TimestampVersion)
	}
	f.rotate(t, t0.Add(3*time.Hour), channel.RoleOnline, key.Ed25519)
	ch = mustAccept(t, "the channel under its new online key")(f.load(t, t0.Add(4*time.Hour), state))
	if ch.Status.TimestampVersion >= 7 || ch.Status.RootVersion != 2 {
		t.Fatalf("status %+v", ch.Status)
	}
}

// TestARecreatedChannelIsRefused: a channel made again under the same
// keys repeats version numbers with other content; a consumer that kept
// state refuses it rather than accept one of two histories.
func TestARecreatedChannelIsRefused(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	state := t.TempDir()
	mustAccept(t, "the first channel")(f.load(t, t0.Add(time.Hour), state))
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	if err := channel.Init(f.dir, f.keys, t0.Add(2*time.Hour), channel.DefaultExpiry); err != nil {
		t.Fatal(err)
	}
	f.publish(t, "1.0.0", 'b', t0.Add(2*time.Hour))
	_, err := f.load(t, t0.Add(3*time.Hour), state)
	mustRefuse(t, err, "timestamp.json version 2 is not the version 2 this machine accepted on 2026-06-01T13:00:00Z")
	mustRefuse(t, err, "re-created or forked")
}

// TestACorruptStateIsAnError: a state file that does not parse or check
// is refused, naming the file and what is wrong, and is left as it is: a
// silent reset would be a rollback's way in.
func TestACorruptStateIsAnError(t *testing.T) {
	edit := func(field string, value any) func(t *testing.T, b []byte) []byte {
		return func(t *testing.T, b []byte) []byte {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			m[field] = value
			out, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, b []byte) []byte
		want   string
	}{
		{"empty", func(*testing.T, []byte) []byte { return nil }, "does not parse: EOF"},
		{"truncated", func(_ *testing.T, b []byte) []byte { return b[:len(b)/2] }, "does not parse"},
		{"trailing data", func(_ *testing.T, b []byte) []byte { return append(b, "{}"...) }, "trailing data"},
		{"unknown field", edit("extra", 1), `unknown field "extra"`},
		{"wrong type", edit("type", "cacheon.channel-state.v0"), `field type is "cacheon.channel-state.v0"`},
		{"no timestamp version", edit("timestamp_version", 0), "field timestamp_version is 0"},
		{"a timestamp of another version", edit("timestamp_version", 99), "field timestamp is version 2, but timestamp_version says 99"},
		{"a root it does not hold", edit("root_version", 7), "field root is version 1, but root_version says 7"},
		{"a root whose signature fails", func(t *testing.T, b []byte) []byte {
			return []byte(strings.Replace(string(b), `"consistent_snapshot": false`, `"consistent_snapshot": true`, 1))
		}, "field root is not a root signed by its own keys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newChannel(t)
			f.publish(t, "1.0.0", 'a', t0)
			state := t.TempDir()
			mustAccept(t, "first check")(f.load(t, t0.Add(time.Hour), state))
			file := statePath(t, f, state)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			damaged := c.damage(t, b)
			if string(damaged) == string(b) {
				t.Fatal("the damage changed nothing")
			}
			if err := os.WriteFile(file, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = f.load(t, t0.Add(2*time.Hour), state)
			mustRefuse(t, err, "channel state "+file+": ")
			mustRefuse(t, err, c.want)
			if after, _ := os.ReadFile(file); string(after) != string(damaged) {
				t.Error("the corrupt state was replaced")
			}
		})
	}
	t.Run("not a file", func(t *testing.T) {
		f := newChannel(t)
		state := t.TempDir()
		file := statePath(t, f, state)
		if err := os.Mkdir(file, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := f.load(t, t0.Add(time.Hour), state)
		mustRefuse(t, err, "channel state "+file+": not a regular file")
	})
}

// slowSource holds a read of one file until released, so that a test can
// run another check while this one is between its reads of the state and
// its write.
type slowSource struct {
	channel.Source
	file    string
	reached chan struct{}
	release chan struct{}
}

func (s *slowSource) Read(name string) ([]byte, error) {
	if name == s.file {
		close(s.reached)
		<-s.release
	}
	return s.Source.Read(name)
}

// TestConcurrentChecksKeepTheNewestState: checks of one channel at once
// are serialized on the state's lock: an older copy checked slowly while
// a newer one is checked does not write its older state over the newer
// (which would let the older copy in for good), and many checks at once
// leave one whole state file.
func TestConcurrentChecksKeepTheNewestState(t *testing.T) {
	f := newChannel(t)
	f.publish(t, "1.0.0", 'a', t0)
	old := &fixture{dir: filepath.Join(t.TempDir(), "old"), root: f.root}
	copyDir(t, f.dir, old.dir)
	f.publish(t, "1.0.1", 'c', t0.Add(time.Hour))
	state := t.TempDir()
	now := t0.Add(2 * time.Hour)

	slow := &slowSource{Source: channel.Dir(old.dir), file: "targets.json", reached: make(chan struct{}), release: make(chan struct{})}
	slowDone := make(chan error, 1)
	go func() {
		_, err := channel.Load(channel.Options{Source: slow, TrustedRoot: f.root, Now: now, State: state})
		slowDone <- err
	}()
	<-slow.reached // the old copy's check has read the (empty) state
	fastDone := make(chan *channel.Channel, 1)
	go func() {
		ch, err := f.load(t, now, state)
		if err != nil {
			t.Error(err)
		}
		fastDone <- ch
	}()
	select {
	case <-fastDone:
		t.Fatal("a second check of the channel ran while the first held the state")
	case <-time.After(200 * time.Millisecond):
	}
	close(slow.release)
	if err := <-slowDone; err != nil {
		t.Fatalf("the old copy, first with no state: %v", err)
	}
	if ch := <-fastDone; ch == nil || ch.Status.TimestampVersion != 3 {
		t.Fatalf("the newer check: %+v", ch)
	}
	_, err := old.load(t, now, state)
	mustRefuse(t, err, "timestamp.json is version 2, but this machine accepted version 3")

	// Many checks at once: all accepted, one whole state.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := channel.Load(channel.Options{Source: channel.Dir(f.dir), TrustedRoot: f.root, Now: now, State: state})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	mustAccept(t, "after the concurrent checks")(f.load(t, now, state))
}

// TestAStateLockedTooLongIsAnError: a check that cannot get the state's
// lock says who holds it, and is no verdict on the channel.
func TestAStateLockedTooLongIsAnError(t *testing.T) {
	f := newChannel(t)
	state := t.TempDir()
	file := statePath(t, f, state)
	lock, err := writerlock.Acquire(strings.TrimSuffix(file, ".json") + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	wait := channel.StateLockWait
	channel.StateLockWait = 100 * time.Millisecond
	defer func() { channel.StateLockWait = wait }()
	_, err = f.load(t, t0.Add(time.Hour), state)
	if !errors.Is(err, channel.ErrStateLocked) || errors.Is(err, channel.ErrChannel) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "pid ") {
		t.Fatalf("a locked state: %v", err)
	}
}
