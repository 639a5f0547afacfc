package worker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cacheon/engine/evaluator/sandbox"
)

// A Witness is the controller's own view of a candidate worker's checked
// calls. The candidate process loads the contribution's code, so every
// check it makes on itself (input digests, output identity, padding) and
// every byte it writes afterwards is the candidate's to forge. Instead,
// the harness places each call's tensors in an arena file the controller
// made (cacheon_reference/arena.py); after each call it says so on its
// witness pipes (fds 4 and 5, the session pipes of the sandbox) and waits,
// and the controller stops the whole sandbox, copies the call's file into
// a directory the candidate cannot reach, and lets it go on. The reference
// role judges those copies.
//
// What the candidate can still do is choose what the memory holds at the
// moment it says the call returned: to pass, the validator's inputs must
// be intact and its outputs right at that moment, which is the contract.
//
// On a GPU the call's memory is device memory the controller cannot read:
// a Checker owns it, and the witness asks the checker for the copy with
// the sandbox stopped (NewDeviceWitness).
type Witness struct {
	arenaDir string
	checker  *Checker
	snapDir  string
	cases    map[int]witnessCase
	files    map[string]fileID // arena file name -> the file the controller copies
	taken    map[string]bool   // snapshot names already copied
	done     chan struct{}

	mu     sync.Mutex
	err    error
	calls  int
	spent  time.Duration // with the group stopped: stopping, copying, resuming
	served bool
}

// fileID names one file: a replaced file has another.
type fileID struct{ dev, ino uint64 }

type witnessCase struct {
	phases map[string]string // phase -> arena file name
}

// Witness limits. The phases of a case are the harness's fixed list (or a
// sequence case's steps), so a forged announcement can name no other file.
const (
	// MaxWitnessBytes bounds one call's arena file: the controller copies
	// no more than this, and a larger file leaves no copy (the call fails).
	MaxWitnessBytes = 4 << 30
	witnessLineMax  = 4096
	// witnessStopTimeout bounds how long stopping the sandbox may take; a
	// sandbox that cannot be stopped is an infrastructure failure.
	witnessStopTimeout = 20 * time.Second
)

// casePhases are the calls of a case that is not a sequence, as the
// harness makes them (cacheon_reference/plan.py phase_seeds).
var casePhases = []string{"eager", "repeat", "nudged", "replay0", "replay1", "replay2"}

var phaseName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// NewWitness makes the arena directory (the worker maps its files; it can
// write them but not add, rename or remove any: the directory is the
// controller's) with one file per call holder of cases, and the snapshot
// directory the copies go to. sandboxed says the worker runs as the
// sandbox user, who must own what it writes.
func NewWitness(arenaDir, snapDir string, cases []CaseRef, sandboxed bool) (*Witness, error) {
	w, err := newWitness(snapDir, cases)
	if err != nil {
		return nil, err
	}
	w.arenaDir = arenaDir
	if err := witnessDir(arenaDir); err != nil {
		return nil, err
	}
	for _, wc := range w.cases {
		for _, name := range wc.phases {
			if _, ok := w.files[name]; ok {
				continue
			}
			path := filepath.Join(arenaDir, name)
			f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
			if err != nil {
				return nil, fmt.Errorf("witness arena: %w", err)
			}
			f.Close()
			if sandboxed && os.Geteuid() == 0 {
				uid, gid := sandbox.HostUser()
				if err := os.Chown(path, uid, gid); err != nil {
					return nil, fmt.Errorf("witness arena: %w", err)
				}
			}
			w.files[name] = fileID{}
		}
	}
	if err := w.adopt(); err != nil {
		return nil, err
	}
	return w, nil
}

// NewDeviceWitness witnesses the calls of a worker whose call memory is
// the checker's block: on each announcement it stops the sandbox and has
// the checker copy the call's holder into the snapshot directory.
func NewDeviceWitness(snapDir string, cases []CaseRef, checker *Checker) (*Witness, error) {
	w, err := newWitness(snapDir, cases)
	if err != nil {
		return nil, err
	}
	w.checker = checker
	return w, nil
}

// newWitness makes the snapshot directory and the list of each case's
// calls and their holders, named as the harness names its arena files.
func newWitness(snapDir string, cases []CaseRef) (*Witness, error) {
	w := &Witness{snapDir: snapDir, cases: map[int]witnessCase{}, files: map[string]fileID{},
		taken: map[string]bool{}, done: make(chan struct{})}
	if err := witnessDir(snapDir); err != nil {
		return nil, err
	}
	for _, c := range cases {
		wc := witnessCase{phases: map[string]string{}}
		if len(c.Steps) > 0 {
			for _, st := range c.Steps {
				if !phaseName.MatchString(st.Phase) {
					return nil, fmt.Errorf("witness: case %d step phase %q is not a phase name", c.Index, st.Phase)
				}
				wc.phases[st.Phase] = fmt.Sprintf("c%d_%s.arena", c.Index, st.Phase)
			}
		} else {
			for _, p := range casePhases {
				wc.phases[p] = fmt.Sprintf("c%d.arena", c.Index)
			}
		}
		w.cases[c.Index] = wc
	}
	return w, nil
}

// witnessDir makes d, the controller's: the worker may read it, and write
// files in it it is given, but add, rename or remove none.
func witnessDir(d string) error {
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("witness directory: %w", err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		return fmt.Errorf("witness directory: %w", err)
	}
	return nil
}

// adopt records which file each arena name is, as the worker will see it.
// A sandbox puts its writable directories on a bounded tmpfs of their
// own, with copies of what they held: it is called again once the sandbox
// is made, before the worker can have run any candidate code, and from
// then on a file that is not the adopted one is not copied.
func (w *Witness) adopt() error {
	for name := range w.files {
		fi, err := os.Lstat(filepath.Join(w.arenaDir, name))
		if err != nil {
			return fmt.Errorf("witness arena: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !fi.Mode().IsRegular() {
			return fmt.Errorf("witness arena: %s is not a regular file", name)
		}
		w.files[name] = fileID{dev: uint64(st.Dev), ino: st.Ino}
	}
	return nil
}

// Dir is the arena directory the worker is told about; "" when the
// checker's block holds the calls' memory.
func (w *Witness) Dir() string { return w.arenaDir }

// Calls is how many calls the controller copied, and the time it held
// the group stopped to do so.
func (w *Witness) Calls() (int, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls, w.spent
}

// Err is the infrastructure failure that made the witness stop (the
// sandbox could not be stopped, a copy could not be written): the calls
// after it have no copy, and the row has no decision.
func (w *Witness) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Witness) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// start serves the worker's announcements, read from frames, answered on
// answers, until frames ends (the worker's end closed, or finish).
func (w *Witness) start(st *stopper, frames io.Reader, answers io.Writer) {
	w.mu.Lock()
	w.served = true
	w.mu.Unlock()
	go w.serve(st, frames, answers)
}

// serve answers the worker's announcements until its pipe ends.
func (w *Witness) serve(st *stopper, frames io.Reader, answers io.Writer) {
	defer close(w.done)
	r := bufio.NewReaderSize(frames, witnessLineMax)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Not the harness's line: skip to the next one.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			return
		}
		var a struct {
			Case  *int   `json:"case"`
			Phase string `json:"phase"`
		}
		if json.Unmarshal(line, &a) == nil && a.Case != nil && w.Err() == nil {
			// After a failure the worker runs on without copies: the row
			// has no decision, and it ends without waiting for a timeout.
			if err := w.witness(st, *a.Case, a.Phase); err != nil {
				w.fail(err)
			}
		}
		// Every line is answered, even one that names no call: only the
		// first copy of a call counts, and a forged line costs the
		// candidate nothing but its own time.
		if _, err := answers.Write([]byte("k\n")); err != nil {
			return
		}
	}
}

// witness copies the arena file of the call (case, phase) with the
// sandbox stopped. A call that is not the case's, or copied already, is
// ignored.
func (w *Witness) witness(st *stopper, index int, phase string) error {
	wc, ok := w.cases[index]
	if !ok {
		return nil
	}
	name, ok := wc.phases[phase]
	if !ok {
		return nil
	}
	snap := fmt.Sprintf("c%d_%s.bin", index, phase)
	if w.taken[snap] {
		return nil
	}
	w.taken[snap] = true
	t0 := time.Now()
	resume, err := st.stop()
	if err != nil {
		return fmt.Errorf("witness of case %d %s call: %w", index, phase, err)
	}
	if w.checker != nil {
		err = w.checker.Copy(name, filepath.Join(w.snapDir, snap))
	} else {
		err = w.copy(name, filepath.Join(w.snapDir, snap))
	}
	if rerr := resume(); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("witness of case %d %s call: %w", index, phase, err)
	}
	w.mu.Lock()
	w.calls++
	w.spent += time.Since(t0)
	w.mu.Unlock()
	return nil
}

// copy writes the whole arena file name to dst. A file that is not the
// adopted one (replaced, or a link), or larger than MaxWitnessBytes,
// leaves no copy: the call fails for want of one.
func (w *Witness) copy(name, dst string) error {
	src, err := os.OpenFile(filepath.Join(w.arenaDir, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() || (fileID{dev: uint64(st.Dev), ino: st.Ino}) != w.files[name] || fi.Size() > MaxWitnessBytes {
		return nil
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = out.ReadFrom(&io.LimitedReader{R: src, N: fi.Size()})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// finish waits for serve, once the worker's pipes have ended; a witness
// is used for one run.
func (w *Witness) finish() {
	w.mu.Lock()
	served := w.served
	w.mu.Unlock()
	if served {
		<-w.done
	}
}

// A stopper stops every process of one worker group and resumes them: the
// processes of a sandbox's PID namespace (all but its init, which runs no
// candidate code), or of an unisolated worker's process group.
type stopper struct {
	mu      sync.Mutex
	members func() ([]int, error)
}

// namespaceStopper stops the processes that share init's PID namespace.
func namespaceStopper(init int) *stopper {
	return &stopper{members: func() ([]int, error) {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", init))
		if err != nil {
			return nil, fmt.Errorf("the sandbox's PID namespace: %w", err)
		}
		return procsWhere(func(pid int) bool {
			if pid == init {
				return false
			}
			other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
			return err == nil && other == ns
		})
	}}
}

// groupStopper stops the processes of process group pgid. A process that
// left the group is not stopped: the unisolated mode contains nothing.
func groupStopper(pgid int) *stopper {
	return &stopper{members: func() ([]int, error) {
		return procsWhere(func(pid int) bool {
			f, err := procStat(pid)
			return err == nil && len(f) > 2 && f[2] == strconv.Itoa(pgid)
		})
	}}
}

func procsWhere(keep func(pid int) bool) ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err == nil && keep(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// procStat returns the fields of /proc/PID/stat after the command name:
// state, ppid, pgrp, ...
func procStat(pid int) ([]string, error) {
	return taskStat(fmt.Sprintf("/proc/%d/stat", pid))
}

func taskStat(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, fmt.Errorf("%s: no command name", path)
	}
	return strings.Fields(s[i+1:]), nil
}

// allStopped reports whether every thread of pid is stopped or dead.
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true // gone
	}
	for _, t := range tasks {
		f, err := taskStat(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		if len(f) == 0 {
			return false
		}
		switch f[0] {
		case "T", "t", "Z", "X":
		default:
			return false
		}
	}
	return true
}

// stop sends SIGSTOP to every member and returns once every thread of
// every member is stopped, and a fresh look finds no member it has not
// stopped: with nothing running, nothing new can start. resume sends
// SIGCONT to them all.
func (s *stopper) stop() (resume func() error, err error) {
	s.mu.Lock()
	stopped := map[int]bool{}
	resume = func() error {
		defer s.mu.Unlock()
		for pid := range stopped {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		return nil
	}
	deadline := time.Now().Add(witnessStopTimeout)
	for {
		pids, err := s.members()
		if err != nil {
			resume()
			return nil, err
		}
		fresh := false
		for _, pid := range pids {
			if !stopped[pid] {
				fresh = true
				stopped[pid] = true
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
		if !fresh {
			return resume, nil
		}
		pause := 50 * time.Microsecond
		for _, pid := range pids {
			for !allStopped(pid) {
				if time.Now().After(deadline) {
					resume()
					return nil, fmt.Errorf("process %d of the worker did not stop within %s", pid, witnessStopTimeout)
				}
				time.Sleep(pause)
				if pause < 5*time.Millisecond {
					pause *= 2
				}
			}
		}
	}
}
