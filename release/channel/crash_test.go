package channel

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The crash tests re-execute this test binary as the channel writer and
// have it SIGKILL itself at one named step of one file write (WriteSteps).
// The environment variables below are read only by the helper test,
// never by the package.
const (
	envChild = "CHANNEL_TEST_CHILD"   // kill (an operation killed at a step) or race (one racing write)
	envOp    = "CHANNEL_TEST_OP"      // the operation, by its name in crashOps, or a race write
	envDir   = "CHANNEL_TEST_DIR"     // the channel directory
	envStep  = "CHANNEL_TEST_KILL_AT" // FILE:STEP
)

// Exit codes of the racing helper, so the parent tells the outcomes
// apart without parsing text.
const (
	exitWritten = 0
	exitOther   = 3
	exitLocked  = 4
)

// The crash tests' keys are derived from fixed seeds: the parent and its
// children must sign with the same keys, and a re-run of init must write
// byte-identical root metadata, so the root a consumer pinned stays valid.
func seedKey(b byte) crypto.Signer { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)) }

var (
	crashKeys = Keys{Root: seedKey(1), Targets: seedKey(2), Online: seedKey(3)}
	// the key each rotation brings in
	rotatedKey = map[string]crypto.Signer{RoleRoot: seedKey(4), RoleTargets: seedKey(5), RoleOnline: seedKey(6)}
	ct0        = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	// when the killed operation runs (and is run again), and when the
	// consumer checks: within every expiry.
	tOp = ct0.Add(time.Hour)
)

func crashRecord(version string, c byte) Record {
	return Record{
		Name: "cacheon-engine", Version: version,
		ImageDigest: "sha256:" + strings.Repeat(string(c), 64), DescriptorDigest: strings.Repeat(string(c+1), 64),
		KeyID: "key-1", PublishedAt: tOp,
	}
}

// withWriter runs fn on the channel under its writer lock, with the fault
// hook set.
func withWriter(dir string, now time.Time, fault func(string), fn func(*Repo) error) error {
	r, err := OpenWriter(dir, now, DefaultExpiry)
	if err != nil {
		return err
	}
	defer r.Close()
	r.fault = fault
	return fn(r)
}

// crashOp is one channel write the crash test kills at each step.
type crashOp struct {
	name string
	// setup builds the channel the operation starts from (in the parent).
	setup func(dir string) error
	// run does the operation; the child runs it with fault killing it at
	// a step, the parent runs it again with fault nil.
	run func(dir string, fault func(string)) error
	// files are the files the operation writes, in the order it writes
	// them; the test checks the writer's steps are exactly these files'
	// WriteSteps, so reordering the writes fails it.
	files []string
	// consumer[n] is what a consumer (Load, what `release verify
	// --channel` runs) sees once the first n files are renamed into
	// place: "old" or "new" (accepted, without or with the operation's
	// effect), "refused" (a transient state the next writer repairs) or
	// "none" (no channel there yet: init).
	consumer []string
	// isNew tells the operation's effect in an accepted channel.
	isNew func(ch *Channel) bool
	// again is the error of running the operation again once it has
	// finished ("" when the second run succeeds, changing nothing).
	again string
	// refresh[n] is what `channel refresh` does to a refused state with
	// n files in place: "" (or no entry) when it repairs it, else the
	// refusal it answers (the same operation again repairs it).
	refresh []string
	// keysAfter are the channel's keys once the operation is done.
	keysAfter Keys
	// check is what must hold of the finished channel beyond isNew: one
	// version more, not two.
	check func(ch *Channel) error
}

func initAndPublish(versions ...string) func(dir string) error {
	return func(dir string) error {
		if err := Init(dir, crashKeys, ct0, DefaultExpiry); err != nil {
			return err
		}
		for i, v := range versions {
			rec := crashRecord(v, byte('a'+2*i))
			rec.PublishedAt = ct0.Add(time.Duration(i+1) * time.Minute)
			if err := withWriter(dir, rec.PublishedAt, nil, func(r *Repo) error { return r.Publish(rec, crashKeys) }); err != nil {
				return err
			}
		}
		return nil
	}
}

func keysWith(role string, k crypto.Signer) Keys {
	keys := crashKeys
	switch role {
	case RoleRoot:
		keys.Root = k
	case RoleTargets:
		keys.Targets = k
	case RoleOnline:
		keys.Online = k
	}
	return keys
}

func versions(ch *Channel, root, targets int64) error {
	if ch.Status.RootVersion != root || ch.Status.TargetsVersion != targets {
		return fmt.Errorf("root v%d, targets v%d; want root v%d, targets v%d", ch.Status.RootVersion, ch.Status.TargetsVersion, root, targets)
	}
	return nil
}

func rotateOp(role string, files, consumer, refresh []string) crashOp {
	return crashOp{
		name:  "rotate " + role,
		setup: initAndPublish("1.0.0"),
		run: func(dir string, fault func(string)) error {
			return withWriter(dir, tOp, fault, func(r *Repo) error { return r.Rotate(role, rotatedKey[role], crashKeys) })
		},
		files:     files,
		consumer:  consumer,
		isNew:     func(ch *Channel) bool { return ch.Status.RootVersion == 2 },
		again:     "already holds the " + role + " role",
		refresh:   refresh,
		keysAfter: keysWith(role, rotatedKey[role]),
		// Rotated once: root version 2, never 3. A root rotation signs
		// nothing else: the release list stays at version 2.
		check: func(ch *Channel) error {
			if ch.Status.RootVersion != 2 || (role == RoleRoot && ch.Status.TargetsVersion != 2) {
				return fmt.Errorf("root v%d, targets v%d; want root v2", ch.Status.RootVersion, ch.Status.TargetsVersion)
			}
			return nil
		},
	}
}

var crashOps = []crashOp{
	{
		name: "init",
		run: func(dir string, fault func(string)) error {
			return initChannel(dir, crashKeys, tOp, DefaultExpiry, fault)
		},
		files:     []string{"1.root.json", "root.json", "targets.json", "snapshot.json", "timestamp.json"},
		consumer:  []string{"none", "none", "none", "none", "none", "new"},
		isNew:     func(ch *Channel) bool { return true },
		again:     "already holds a channel",
		keysAfter: crashKeys,
		check:     func(ch *Channel) error { return versions(ch, 1, 1) },
	},
	{
		name:  "publish",
		setup: initAndPublish("1.0.0"),
		run: func(dir string, fault func(string)) error {
			return withWriter(dir, tOp, fault, func(r *Repo) error { return r.Publish(crashRecord("1.0.1", 'e'), crashKeys) })
		},
		files:    []string{"targets/cacheon-engine/1.0.1.json", "targets.json", "snapshot.json", "timestamp.json"},
		consumer: []string{"old", "old", "refused", "refused", "new"},
		isNew: func(ch *Channel) bool {
			sel, err := ch.Select(Query{Name: "cacheon-engine"})
			return err == nil && sel.Record.Version == "1.0.1"
		},
		keysAfter: crashKeys,
		// Published once: one release list version more, two releases.
		check: func(ch *Channel) error {
			all, err := ch.Releases("")
			if err != nil {
				return err
			}
			if len(all) != 2 {
				return fmt.Errorf("%d releases, want 2", len(all))
			}
			return versions(ch, 1, 3)
		},
	},
	{
		name:  "withdraw",
		setup: initAndPublish("1.0.0", "1.0.1"),
		run: func(dir string, fault func(string)) error {
			return withWriter(dir, tOp, fault, func(r *Repo) error {
				return r.Withdraw("cacheon-engine", "1.0.1", "CVE-2026-0001", crashKeys)
			})
		},
		files:    []string{"targets.json", "snapshot.json", "timestamp.json"},
		consumer: []string{"old", "refused", "refused", "new"},
		isNew: func(ch *Channel) bool {
			_, err := ch.Select(Query{Name: "cacheon-engine", Version: "1.0.1"})
			return err != nil && strings.Contains(err.Error(), "withdrawn")
		},
		again:     "already withdrawn",
		keysAfter: crashKeys,
		check:     func(ch *Channel) error { return versions(ch, 1, 4) },
	},
	{
		name:  "refresh",
		setup: initAndPublish("1.0.0"),
		run: func(dir string, fault func(string)) error {
			return withWriter(dir, tOp, fault, func(r *Repo) error { return r.Refresh(crashKeys) })
		},
		files:     []string{"snapshot.json", "timestamp.json"},
		consumer:  []string{"old", "refused", "new"},
		isNew:     func(ch *Channel) bool { return !ch.Status.TimestampSigned.Before(tOp) },
		keysAfter: crashKeys,
		check:     func(ch *Channel) error { return versions(ch, 1, 2) },
	},
	// A root rotation writes the new root alone: consumers walk to it
	// the moment 2.root.json is in place.
	rotateOp(RoleRoot,
		[]string{"2.root.json", "root.json"},
		[]string{"old", "new", "new"}, nil),
	// Until targets.json is signed with the new key, refresh (which holds
	// only the online key) cannot finish a targets rotation, and says so.
	rotateOp(RoleTargets,
		[]string{"2.root.json", "root.json", "targets.json", "snapshot.json", "timestamp.json"},
		[]string{"old", "refused", "refused", "refused", "refused", "new"},
		[]string{"", "run the same rotation again", "run the same rotation again"}),
	// A refresh with the new online key finishes an online rotation.
	rotateOp(RoleOnline,
		[]string{"2.root.json", "root.json", "targets.json", "snapshot.json", "timestamp.json"},
		[]string{"old", "refused", "refused", "refused", "refused", "new"}, nil),
}

func opNamed(name string) *crashOp {
	for i := range crashOps {
		if crashOps[i].name == name {
			return &crashOps[i]
		}
	}
	return nil
}

// TestHelperChannelWriter is not a test: run as a child by the tests
// below, it does one channel write, killing itself at $CHANNEL_TEST_KILL_AT
// (kill), or waits for its stdin to close and then races another child
// (race).
func TestHelperChannelWriter(t *testing.T) {
	dir := os.Getenv(envDir)
	switch os.Getenv(envChild) {
	case "":
		t.Skip("helper process only")
	case "kill":
		op := opNamed(os.Getenv(envOp))
		step := os.Getenv(envStep)
		err := op.run(dir, func(s string) {
			if s == step {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		})
		// The step was never reached: the parent sees a clean exit (or
		// the error) instead of a SIGKILL.
		fmt.Println("not killed:", err)
	case "race":
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		var err error
		if v, ok := strings.CutPrefix(os.Getenv(envOp), "publish "); ok {
			err = withWriter(dir, tOp, nil, func(r *Repo) error { return r.Publish(crashRecord(v, v[len(v)-1]), crashKeys) })
		} else {
			err = withWriter(dir, tOp, nil, func(r *Repo) error { return r.Refresh(crashKeys) })
		}
		switch {
		case err == nil:
			fmt.Println("written")
			os.Exit(exitWritten)
		case errors.Is(err, ErrLocked):
			fmt.Println(err)
			os.Exit(exitLocked)
		default:
			fmt.Println(err)
			os.Exit(exitOther)
		}
	}
}

// consumerView is what a consumer pinned to root says of the channel:
// "old", "new", "refused" or "none" (nothing there to judge).
func consumerView(op *crashOp, dir string, root []byte) (string, *Channel, error) {
	if _, err := os.Stat(filepath.Join(dir, "timestamp.json")); op.name == "init" && err != nil {
		return "none", nil, nil
	}
	ch, err := Load(Options{Source: Dir(dir), TrustedRoot: root, Now: tOp})
	if err != nil {
		return "refused", nil, err
	}
	if op.isNew(ch) {
		return "new", ch, nil
	}
	return "old", ch, nil
}

// pinnedRoot is the 1.root.json consumers pin: the first root of the
// channel the operation starts from, or for init the one init writes
// (the same bytes every time: fixed keys and time).
func pinnedRoot(t *testing.T, op *crashOp) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "reference")
	if op.setup != nil {
		if err := op.setup(dir); err != nil {
			t.Fatal(err)
		}
	} else if err := op.run(dir, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "1.root.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stepsOf runs the operation on a fresh channel and records every step
// its writes reach.
func stepsOf(t *testing.T, op *crashOp) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "channel")
	if op.setup != nil {
		if err := op.setup(dir); err != nil {
			t.Fatal(err)
		}
	}
	var steps []string
	if err := op.run(dir, func(s string) { steps = append(steps, s) }); err != nil {
		t.Fatal(err)
	}
	return steps
}

func runKilledAt(t *testing.T, op, dir, step string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChannelWriter$")
	cmd.Env = append(os.Environ(), envChild+"=kill", envOp+"="+op, envDir+"="+dir, envStep+"="+step)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the writer was not killed at %s: %v\n%s", step, err, out)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the writer ended with %v, not SIGKILL at %s\n%s", err, step, out)
	}
}

// TestAWriteKilledAtEachStep kills every channel write (init, publish,
// withdraw, refresh, and the rotation of each role) at every step of
// every file it writes, in a real child process, and then checks:
//
//   - what a consumer sees is exactly the op's consumer[n] for the n
//     files in place: the old channel, the new one, or (between the
//     release list and the timestamp, the only pointer a consumer
//     follows) a refused channel;
//   - the kernel released the dead writer's lock;
//   - the operation run again finishes: the channel verifies, with the
//     operation's effect once (one version more, not two);
//   - on a copy of a refused state, `refresh` repairs it, or refuses
//     naming what will (a targets rotation needs the targets key).
func TestAWriteKilledAtEachStep(t *testing.T) {
	for i := range crashOps {
		op := &crashOps[i]
		t.Run(op.name, func(t *testing.T) {
			var want []string
			for _, f := range op.files {
				for _, s := range WriteSteps {
					want = append(want, f+":"+s)
				}
			}
			if got := stepsOf(t, op); !slices.Equal(got, want) {
				t.Fatalf("the writer's steps are\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if len(op.consumer) != len(op.files)+1 {
				t.Fatalf("%d consumer views for %d files", len(op.consumer), len(op.files))
			}
			root := pinnedRoot(t, op)
			for n, step := range want {
				// Files renamed into place when the writer died at step.
				renamed := n / len(WriteSteps)
				if n%len(WriteSteps) >= slices.Index(WriteSteps, "renamed") {
					renamed++
				}
				t.Run(strings.ReplaceAll(step, "/", "_"), func(t *testing.T) {
					var refresh string
					if renamed < len(op.refresh) {
						refresh = op.refresh[renamed]
					}
					killedAt(t, op, root, step, op.consumer[renamed], refresh)
				})
			}
		})
	}
}

func killedAt(t *testing.T, op *crashOp, root []byte, step, wantView, wantRefresh string) {
	dir := filepath.Join(t.TempDir(), "channel")
	if op.setup != nil {
		if err := op.setup(dir); err != nil {
			t.Fatal(err)
		}
	}
	runKilledAt(t, op.name, dir, step)

	view, _, err := consumerView(op, dir, root)
	if view != wantView {
		t.Fatalf("killed at %s, a consumer sees the channel %s (%v), want %s", step, view, err, wantView)
	}

	// The dead writer's lock is gone with it.
	lock, err := lockChannel(dir)
	if err != nil {
		t.Fatalf("killed at %s, the next writer cannot take the lock: %v", step, err)
	}
	lock.Release()

	if view == "refused" {
		cp := filepath.Join(t.TempDir(), "copy")
		if out, err := exec.Command("cp", "-a", dir, cp).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		err := withWriter(cp, tOp.Add(time.Minute), nil, func(r *Repo) error { return r.Refresh(op.keysAfter) })
		switch {
		case wantRefresh == "" && err != nil:
			t.Fatalf("killed at %s, refresh does not repair the channel: %v", step, err)
		case wantRefresh != "" && (err == nil || !strings.Contains(err.Error(), wantRefresh)):
			t.Fatalf("killed at %s, refresh answered %v, want a refusal containing %q", step, err, wantRefresh)
		case wantRefresh == "":
			if v, _, err := consumerView(op, cp, root); v != "new" {
				t.Fatalf("killed at %s and refreshed, a consumer sees the channel %s (%v), want new", step, v, err)
			}
		}
	}

	// The same operation again finishes what the killed one began.
	err = op.run(dir, nil)
	if err != nil && (view != "new" || op.again == "" || !strings.Contains(err.Error(), op.again)) {
		t.Fatalf("killed at %s (a consumer saw %s), the operation again: %v", step, view, err)
	}
	if err == nil && view == "new" && op.again != "" {
		t.Fatalf("killed at %s after the operation was done, running it again succeeded; want %q", step, op.again)
	}
	view, ch, err := consumerView(op, dir, root)
	if view != "new" {
		t.Fatalf("killed at %s and run again, a consumer sees the channel %s (%v), want new", step, view, err)
	}
	if err := op.check(ch); err != nil {
		t.Fatalf("killed at %s and run again: %v", step, err)
	}
	// And the channel goes on: a publish with the keys it now has.
	if op.name == "init" {
		return
	}
	err = withWriter(dir, tOp.Add(2*time.Minute), nil, func(r *Repo) error { return r.Publish(crashRecord("2.0.0", '8'), op.keysAfter) })
	if err != nil {
		t.Fatalf("killed at %s and run again, the next publish: %v", step, err)
	}
	if _, err := Load(Options{Source: Dir(dir), TrustedRoot: root, Now: tOp.Add(3 * time.Minute)}); err != nil {
		t.Fatalf("killed at %s, run again and published to: %v", step, err)
	}
}

// raceChild is one racing writer: started and ready, waiting for its
// stdin to close.
type raceChild struct {
	write string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startRacer(t *testing.T, dir, write string) *raceChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperChannelWriter$")
	cmd.Env = append(os.Environ(), envChild+"=race", envOp+"="+write, envDir+"="+dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &raceChild{write: write, cmd: cmd, stdin: in, out: bufio.NewReader(out)}
	if line, err := c.out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("racer %s: %q, %v", write, line, err)
	}
	return c
}

var holderPID = regexp.MustCompile(`pid (\d+) holds`)

// TestTwoWritersRace runs two real processes writing to one channel at
// the same moment, many times: two publishes of different releases, and
// a publish against a refresh. Each either writes or is refused because
// the other holds the lock (never anything else); the channel afterwards
// verifies and holds every release whose publish said it was written.
func TestTwoWritersRace(t *testing.T) {
	const tries = 20
	for _, tc := range []struct {
		name   string
		writes [2]string
	}{
		{"two publishes", [2]string{"publish 1.0.1", "publish 1.0.2"}},
		{"publish and refresh", [2]string{"publish 1.0.1", "refresh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			locked := 0
			for try := range tries {
				dir := filepath.Join(t.TempDir(), "channel")
				if err := initAndPublish("1.0.0")(dir); err != nil {
					t.Fatal(err)
				}
				root, err := os.ReadFile(filepath.Join(dir, "1.root.json"))
				if err != nil {
					t.Fatal(err)
				}
				kids := []*raceChild{startRacer(t, dir, tc.writes[0]), startRacer(t, dir, tc.writes[1])}
				// Both are waiting: release them together.
				kids[0].stdin.Close()
				kids[1].stdin.Close()
				code := make([]int, 2)
				msg := make([]string, 2)
				for i, c := range kids {
					b, _ := io.ReadAll(c.out)
					msg[i] = strings.TrimSpace(string(b))
					err := c.cmd.Wait()
					code[i] = c.cmd.ProcessState.ExitCode()
					if code[i] != exitWritten && code[i] != exitLocked {
						t.Fatalf("try %d: %s ended %v: %s", try, c.write, err, msg[i])
					}
				}
				if code[0] == exitLocked && code[1] == exitLocked {
					t.Fatalf("try %d: both writers were refused as locked: %q", try, msg)
				}
				for i, c := range kids {
					if code[i] != exitLocked {
						continue
					}
					locked++
					other := kids[1-i].cmd.Process.Pid
					if !strings.Contains(msg[i], "locked by another writer") || !strings.Contains(msg[i], LockPath(dir)) {
						t.Errorf("try %d: %s was refused with %q; want the lock named", try, c.write, msg[i])
					}
					// The holder is named by pid unless it finished before
					// the loser read who holds the lock.
					if m := holderPID.FindStringSubmatch(msg[i]); m != nil && m[1] != fmt.Sprint(other) {
						t.Errorf("try %d: %s names pid %s as the holder, want %d", try, c.write, m[1], other)
					}
				}
				ch, err := Load(Options{Source: Dir(dir), TrustedRoot: root, Now: tOp})
				if err != nil {
					t.Fatalf("try %d (%q): consumers refuse the channel: %v", try, msg, err)
				}
				all, err := ch.Releases("cacheon-engine")
				if err != nil {
					t.Fatal(err)
				}
				have := map[string]bool{}
				for _, e := range all {
					have[e.Record.Version] = true
				}
				for i, c := range kids {
					v, isPublish := strings.CutPrefix(c.write, "publish ")
					if isPublish && code[i] == exitWritten && !have[v] {
						t.Errorf("try %d: %s said written, but the channel lists %v", try, c.write, all)
					}
				}
			}
			t.Logf("%d tries, %d writers refused as locked", tries, locked)
		})
	}
}
