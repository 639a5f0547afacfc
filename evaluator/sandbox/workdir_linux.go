package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cacheon/engine/evaluator/sandbox/cgroup"
)

// A sandbox's writable directories are bounded in bytes and in inodes: one
// verify once wrote 3 GiB and 100,000 files to the host's disk in 24 s
// through its work directory, and RLIMIT_FSIZE bounds only each file.
// While the sandbox runs, each writable directory is a tmpfs of
// Limits.WorkSize bytes and Limits.WorkInodes inodes, mounted by the
// controller on the host over the directory itself, so the sandbox binds
// it as before and the controller reads nothing through the sandbox. Its
// pages are charged to the memory group of the task that writes them, so
// the bytes count against the sandbox's memory bound too. Once every
// process of the sandbox has ended, the controller copies what the
// directory holds (directories and regular files; links and special files
// are dropped, as the controller never follows a worker's links) back onto
// the disk and unmounts the tmpfs. The tmpfs is mounted in the host's
// namespace, which needs the controller to be root; an unprivileged
// controller leaves the directories on the disk (WorkBounded false).

// workSource is the source name of a work directory's tmpfs: what marks it
// as ours in the mount table, with the owner that mounted it.
const workSource = "cacheon-work-"

// workMount is one writable directory bounded for one sandbox's run.
type workMount struct {
	dir   string // the host directory the tmpfs is mounted over
	stash string // a disk directory beside it holding its contents meanwhile
}

// mountWork bounds each of dirs (parents before children); on error,
// whatever was mounted is undone.
func mountWork(dirs []string, l Limits) (mounts []workMount, err error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	owner, err := cgroup.Owner()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	UnmountStaleWork()
	sorted := append([]string{}, dirs...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) < len(sorted[j]) })
	defer func() {
		if err != nil {
			unmountWork(mounts)
			mounts = nil
		}
	}()
	for _, d := range sorted {
		m, err := mountOne(d, owner, l)
		if err != nil {
			return mounts, fmt.Errorf("bound the work directory %s: %w", d, err)
		}
		mounts = append(mounts, m)
	}
	return mounts, nil
}

func mountOne(dir, owner string, l Limits) (workMount, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return workMount{}, err
	}
	if !fi.IsDir() {
		return workMount{}, fmt.Errorf("not a directory")
	}
	st := fi.Sys().(*syscall.Stat_t)
	stash, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".stash-")
	if err != nil {
		return workMount{}, err
	}
	m := workMount{dir: dir, stash: stash}
	// What the directory holds already (the request) moves aside, then
	// comes back inside the tmpfs.
	if err := moveEntries(dir, stash); err != nil {
		return m, errors.Join(err, moveEntries(stash, dir), os.Remove(stash))
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=%o,uid=%d,gid=%d", l.WorkSize, l.WorkInodes, fi.Mode().Perm(), st.Uid, st.Gid)
	if err := unix.Mount(workSource+owner, dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return m, errors.Join(fmt.Errorf("mount a tmpfs (%s): %w", opts, err), moveEntries(stash, dir), os.Remove(stash))
	}
	if err := copyTree(stash, dir); err != nil {
		return m, errors.Join(err, m.unmount())
	}
	if err := clearDir(stash); err != nil {
		return m, errors.Join(err, m.unmount())
	}
	return m, nil
}

// unmount copies the tmpfs's contents onto the disk and unmounts it. Every
// process of the sandbox has ended: nothing changes the tree meanwhile.
func (m workMount) unmount() error {
	var errs []error
	if err := copyTree(m.dir, m.stash); err != nil {
		errs = append(errs, fmt.Errorf("copy the work directory %s back: %w", m.dir, err))
	}
	if err := unix.Unmount(m.dir, unix.MNT_DETACH); err != nil {
		return errors.Join(append(errs, fmt.Errorf("unmount the work directory %s: %w", m.dir, err))...)
	}
	if err := moveEntries(m.stash, m.dir); err != nil {
		errs = append(errs, err)
	} else if err := os.Remove(m.stash); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// unmountWork undoes mounts, children before parents.
func unmountWork(mounts []workMount) error {
	var errs []error
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := mounts[i].unmount(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// moveEntries renames every entry of from into to (one filesystem).
func moveEntries(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the directories and regular files under from into to,
// with their modes and owners; links, devices, FIFOs and sockets are
// dropped. Nothing is followed: a worker's link never leads the controller
// anywhere.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil || rel == "." {
			return err
		}
		dst := filepath.Join(to, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case d.IsDir():
			if err := os.Mkdir(dst, fi.Mode().Perm()|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFile(p, dst, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return nil
		}
		if st != nil {
			if err := os.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
				return err
			}
		}
		return os.Chmod(dst, fi.Mode().Perm())
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	// The file may be read-only for its owner (the request is 0444).
	_ = os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm|0o200)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// UnmountStaleWork unmounts the work tmpfs mounts whose controller ended
// without unmounting them (it crashed, or was killed), so that their
// memory is freed and the directories under them can be removed. What
// they held is lost with the run it belonged to. A live controller's
// mounts, and another PID namespace's, stay. It needs root, as mounting
// them did; otherwise it does nothing.
func UnmountStaleWork() {
	if os.Geteuid() != 0 {
		return
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var stale []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, x := range fields {
			if x != "-" || i+2 >= len(fields) {
				continue
			}
			if fields[i+1] == "tmpfs" && strings.HasPrefix(fields[i+2], workSource) &&
				cgroup.Ended(strings.TrimPrefix(fields[i+2], workSource)) && len(fields) > 4 {
				stale = append(stale, unescapeMount(fields[4]))
			}
			break
		}
	}
	for _, p := range stale {
		_ = unix.Unmount(p, unix.MNT_DETACH)
	}
}

func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}
