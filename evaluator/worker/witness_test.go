package worker

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
)

// TestWitnessCopiesEachCallOnce: the controller copies the arena file of
// a call the harness names, once, and answers every line; a line naming a
// case or phase the run does not have, or a call copied already, makes no
// copy, so a forged line can neither add files nor replace a copy.
func TestWitnessCopiesEachCallOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	arenaDir, snapDir := filepath.Join(dir, "arena"), filepath.Join(dir, "snap")
	cases := []CaseRef{{Index: 0}, {Index: 3, Steps: []CaseStep{{Phase: "big"}, {Phase: "small"}}}}
	w, err := NewWitness(arenaDir, snapDir, cases, false)
	if err != nil {
		t.Fatal(err)
	}
	nobody := &stopper{members: func() ([]int, error) { return nil, nil }}
	annR, out, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	in, ansW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	w.start(nobody, annR, ansW)
	acks := bufio.NewReader(in)
	say := func(arena, content, line string) {
		t.Helper()
		if arena != "" {
			if err := os.WriteFile(filepath.Join(arenaDir, arena), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := out.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
		if got, err := acks.ReadString('\n'); err != nil || got != "k\n" {
			t.Fatalf("answer to %s: %q, %v", line, got, err)
		}
	}
	say("c0.arena", "eager bytes", `{"case": 0, "phase": "eager"}`)
	say("c0.arena", "forged later", `{"case": 0, "phase": "eager"}`)
	say("c0.arena", "repeat bytes", `{"case": 0, "phase": "repeat"}`)
	say("", "", `{"case": 0, "phase": "../../escape"}`)
	say("", "", `{"case": 7, "phase": "eager"}`)
	say("", "", `{"case": 3, "phase": "eager"}`)
	say("c3_small.arena", "small step", `{"case": 3, "phase": "small"}`)
	say("", "", `not json`)
	out.Close()
	w.finish()
	annR.Close()
	ansW.Close()

	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"c0_eager.bin": "eager bytes", "c0_repeat.bin": "repeat bytes", "c3_small.bin": "small step"}
	entries, err := os.ReadDir(snapDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		data, err := os.ReadFile(filepath.Join(snapDir, e.Name()))
		if err != nil || string(data) != want[e.Name()] {
			t.Errorf("%s: %q, %v; want %q", e.Name(), data, err, want[e.Name()])
		}
	}
	sort.Strings(names)
	if len(names) != len(want) {
		t.Errorf("copies %v, want %d", names, len(want))
	}
	if n, _ := w.Calls(); n != len(want) {
		t.Errorf("%d calls witnessed, want %d", n, len(want))
	}
}

// TestWitnessCopiesOnlyTheFileItMade: a file put in place of an arena
// file after the controller adopted it, or a link there, is not copied:
// the call is left without a copy, and fails.
func TestWitnessCopiesOnlyTheFileItMade(t *testing.T) {
	t.Parallel()
	nobody := &stopper{members: func() ([]int, error) { return nil, nil }}
	for _, replace := range []func(path string) error{
		func(path string) error { return os.WriteFile(path+".new", []byte("pristine forgery"), 0o600) },
		func(path string) error { return os.Symlink(path+".old", path+".new") },
	} {
		dir := t.TempDir()
		arenaDir := filepath.Join(dir, "arena")
		w, err := NewWitness(arenaDir, filepath.Join(dir, "snap"), []CaseRef{{Index: 0}}, false)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(arenaDir, "c0.arena")
		if err := os.WriteFile(path, []byte("validator memory"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path, path+".old"); err != nil {
			t.Fatal(err)
		}
		if err := replace(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
		if err := w.witness(nobody, 0, "eager"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "snap", "c0_eager.bin")); !os.IsNotExist(err) {
			t.Errorf("a copy of a file the controller did not make: %v", err)
		}
	}
}

// TestStopperStopsEveryProcess: a group that keeps starting processes is
// stopped as a whole: when stop returns, every thread of every member is
// stopped, including processes started while the stop was under way.
func TestStopperStopsEveryProcess(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("/bin/sh", "-c", "while :; do /bin/sleep 0.01 & done")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	st := groupStopper(pgid)
	for round := 0; round < 3; round++ {
		resume, err := st.stop()
		if err != nil {
			t.Fatal(err)
		}
		members, err := st.members()
		if err != nil {
			t.Fatal(err)
		}
		if len(members) == 0 {
			t.Fatal("no member found")
		}
		for _, pid := range members {
			if !allStopped(pid) {
				t.Errorf("round %d: process %d of the group runs while the group is stopped", round, pid)
			}
		}
		if err := resume(); err != nil {
			t.Fatal(err)
		}
	}
}
