// Package cgroup gives each worker sandbox a control group of its own that
// bounds what the sandbox takes from the host as a sum over everything in
// it: memory (shared mappings, memfd and tmpfs pages included), tasks, and
// CPU time. Per-process rlimits cannot do that: RLIMIT_DATA misses shared
// and tmpfs memory, and RLIMIT_NPROC times the per-process bounds is no
// bound on the whole.
//
// The host is probed, not assumed: cgroup v1 (one hierarchy per
// controller, as the 2-core hosts mount memory, pids and cpu) and cgroup v2
// (one unified hierarchy with the controllers delegated) are both
// supported. Where neither offers the three controllers writable, Probe
// says why and the caller refuses to run untrusted code, as it does where
// namespaces are missing. See docs/reference/worker-sandbox.md.
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Controllers are the controllers every sandbox's group needs.
var Controllers = []string{"memory", "pids", "cpu"}

// ErrUnavailable marks a host where sandbox groups cannot be made.
var ErrUnavailable = errors.New("cgroups unavailable")

// Host is the probed layout: under which directory of which hierarchy
// each controller's sandbox groups are made.
type Host struct {
	// Version is 1 or 2.
	Version int
	// Parents maps each controller to the directory its sandbox groups
	// are made in: the controller's own group of this process (where it
	// may create children) joined with ParentName. Under v2 every
	// controller maps to the same directory.
	Parents map[string]string
	// own is this process's group directory per controller (v2: one).
	own map[string]string
}

// ParentName is the directory, inside the controller's own group, that
// holds every sandbox group; one name so stale ones are found in one place.
const ParentName = "cacheon-sandboxes"

// mount is one cgroup filesystem mount of /proc/self/mountinfo.
type mount struct {
	root, point string
	v2          bool
	controllers []string // v1 only
}

// Probe reads this process's cgroup membership and the mounted cgroup
// filesystems and picks v1 when all of Controllers are mounted as v1
// hierarchies, v2 when the unified hierarchy offers all of them, and
// fails naming what is missing otherwise. It creates nothing; Prepare
// does.
func Probe() (*Host, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return probe(mi, cg, func(p string) ([]byte, error) { return os.ReadFile(p) })
}

// probe is Probe on given file contents; read reads cgroup files (the v2
// cgroup.controllers list).
func probe(mountinfo, cgroupFile []byte, read func(string) ([]byte, error)) (*Host, error) {
	mounts, err := parseMountinfo(mountinfo)
	if err != nil {
		return nil, err
	}
	v1Own, v2Own, err := parseCgroupFile(cgroupFile)
	if err != nil {
		return nil, err
	}
	// v1: every controller in a hierarchy of its own mount, and this
	// process's path in it under that mount's root.
	own := map[string]string{}
	var missing []string
	for _, c := range Controllers {
		dir, ok := v1Dir(mounts, v1Own, c)
		if !ok {
			missing = append(missing, c)
			continue
		}
		own[c] = dir
	}
	if len(missing) == 0 {
		h := &Host{Version: 1, Parents: map[string]string{}, own: own}
		for c, d := range own {
			h.Parents[c] = filepath.Join(d, ParentName)
		}
		return h, nil
	}
	v1Missing := missing
	// A v2 controller that moved itself into its leaf (Prepare) makes its
	// groups where it made them before: beside the leaf.
	if path.Base(v2Own) == controllerLeaf {
		v2Own = path.Dir(v2Own)
	}
	// v2: the unified mount, and this process's group in it offering every
	// controller (the parent enabled them in its subtree_control).
	for _, m := range mounts {
		if !m.v2 || v2Own == "" {
			continue
		}
		dir, ok := under(m, v2Own)
		if !ok {
			continue
		}
		data, err := read(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return nil, fmt.Errorf("%w: cgroup v2 at %s: %v", ErrUnavailable, dir, err)
		}
		have := strings.Fields(string(data))
		var lack []string
		for _, c := range Controllers {
			if !contains(have, c) {
				lack = append(lack, c)
			}
		}
		if len(lack) > 0 {
			return nil, fmt.Errorf("%w: cgroup v1 lacks %s and the cgroup v2 group %s offers only [%s], not %s "+
				"(its parent's cgroup.subtree_control does not delegate them; start the controller in the leaf of a group "+
				"whose parent does, e.g. as root: mkdir -p /sys/fs/cgroup/cacheon/"+controllerLeaf+" && echo $$ > "+
				"/sys/fs/cgroup/cacheon/"+controllerLeaf+"/cgroup.procs, then run it from that shell)",
				ErrUnavailable, strings.Join(v1Missing, ", "), dir, strings.Join(have, " "), strings.Join(lack, ", "))
		}
		h := &Host{Version: 2, Parents: map[string]string{}, own: map[string]string{"": dir}}
		for _, c := range Controllers {
			h.Parents[c] = filepath.Join(dir, ParentName)
		}
		return h, nil
	}
	return nil, fmt.Errorf("%w: no writable cgroup hierarchy mounted for %s (cgroup v1) and no cgroup v2 group of this process",
		ErrUnavailable, strings.Join(v1Missing, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// v1Dir is the directory of this process's group in controller c's v1
// hierarchy.
func v1Dir(mounts []mount, own map[string]string, c string) (string, bool) {
	path, ok := own[c]
	if !ok {
		return "", false
	}
	for _, m := range mounts {
		if !m.v2 && contains(m.controllers, c) {
			if dir, ok := under(m, path); ok {
				return dir, true
			}
		}
	}
	return "", false
}

// under maps a group path (as /proc/self/cgroup names it) onto mount m,
// whose root may be a group below the hierarchy's root (a container's
// bind of its own group).
func under(m mount, path string) (string, bool) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.Join(m.point, rel), true
}

// parseMountinfo finds the cgroup and cgroup2 mounts of a
// /proc/self/mountinfo: "id parent major:minor root point opts [tags] -
// fstype source superopts".
func parseMountinfo(data []byte) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 > len(f) {
			continue
		}
		fstype := f[sep+1]
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		m := mount{root: unescape(f[3]), point: unescape(f[4]), v2: fstype == "cgroup2"}
		if !m.v2 {
			if sep+3 >= len(f) {
				continue
			}
			for _, o := range strings.Split(f[sep+3], ",") {
				if o != "rw" && o != "ro" && !strings.Contains(o, "=") {
					m.controllers = append(m.controllers, o)
				}
			}
		}
		// A read-only mount is no place to make groups.
		if contains(strings.Split(f[5], ","), "ro") {
			continue
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: /proc/self/mountinfo: %v", ErrUnavailable, err)
	}
	return out, nil
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// parseCgroupFile reads /proc/self/cgroup: "id:controllers:path" lines;
// v1 lines name their controllers, the v2 line is "0::path".
func parseCgroupFile(data []byte) (v1 map[string]string, v2 string, err error) {
	v1 = map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" && !strings.HasPrefix(c, "name=") {
				v1[c] = parts[2]
			}
		}
	}
	if len(v1) == 0 && v2 == "" {
		return nil, "", fmt.Errorf("%w: /proc/self/cgroup names no group", ErrUnavailable)
	}
	return v1, v2, nil
}

// String describes the layout for messages and reports, e.g. "cgroup v1
// (memory: /sys/fs/cgroup/memory/..., ...)".
func (h *Host) String() string {
	var parts []string
	for c, d := range h.Parents {
		parts = append(parts, c+": "+d)
	}
	sort.Strings(parts)
	return fmt.Sprintf("cgroup v%d (%s)", h.Version, strings.Join(parts, ", "))
}
