package worker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// clockTicks is the kernel's USER_HZ, the unit of the times in
// /proc/<pid>/stat. It is 100 on every Linux architecture the evaluator
// runs on (the kernel fixes the user-visible unit at 100 whatever its
// internal HZ), and Go cannot ask sysconf without cgo.
const clockTicks = 100

// ErrProcessGone is a process whose CPU time was asked for after it ended.
var ErrProcessGone = errors.New("the process is gone")

// TreeCPUSeconds is the CPU time, user and system, that the process pid
// and every process under it have consumed so far: each live process's
// own time (all its threads) plus the time of its children it has reaped,
// so work of a process that ended inside the tree is still counted. The
// controller reads it from /proc, in its own PID namespace, so nothing in
// a sandbox can hide from it or report for itself. The difference of two
// readings is the tree's CPU time between them.
func TreeCPUSeconds(pid int) (float64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("process CPU time: no process (pid %d)", pid)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("process CPU time: %w", err)
	}
	children := map[int][]int{}
	ticks := map[int]uint64{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p <= 0 {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // it ended while the table was read
		}
		ppid, t, err := parseStat(data)
		if err != nil {
			return 0, fmt.Errorf("process CPU time: /proc/%d/stat: %w", p, err)
		}
		children[ppid] = append(children[ppid], p)
		ticks[p] = t
	}
	if _, ok := ticks[pid]; !ok {
		return 0, fmt.Errorf("process CPU time: process %d: %w", pid, ErrProcessGone)
	}
	var total uint64
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		total += ticks[p]
		queue = append(queue, children[p]...)
	}
	return float64(total) / clockTicks, nil
}

// parseStat reads the parent pid and utime+stime+cutime+cstime of one
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself hold spaces and parentheses, so the fields are counted from
// the last ')'.
func parseStat(data []byte) (ppid int, ticks uint64, err error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("no command name")
	}
	// After the name: state(3) ppid(4) … utime(14) stime(15) cutime(16) cstime(17).
	f := bytes.Fields(data[i+1:])
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("%d fields after the command name, want at least 15", len(f))
	}
	if ppid, err = strconv.Atoi(string(f[1])); err != nil {
		return 0, 0, fmt.Errorf("ppid: %w", err)
	}
	for _, s := range f[11:15] {
		// cutime and cstime are signed in the kernel's format; they are
		// never negative in practice.
		v, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || v < 0 {
			return 0, 0, fmt.Errorf("CPU time field %q", s)
		}
		ticks += uint64(v)
	}
	return ppid, ticks, nil
}
