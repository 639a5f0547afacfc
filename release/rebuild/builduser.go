package rebuild

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// asUser makes attr run its process as u, with no supplementary groups:
// the caller's groups are its own, not the build's.
func asUser(attr *syscall.SysProcAttr, u *BuildUser) *syscall.SysProcAttr {
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	return attr
}

// handOver gives u the directories the build steps write: the clone, their
// HOME and their Bazel output base, every entry under them included. The
// rest of the work directory stays the caller's.
func handOver(u *BuildUser, dirs ...string) error {
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(u.UID), int(u.GID))
		})
		if err != nil {
			return fmt.Errorf("hand %s to uid %d: %w", dir, u.UID, err)
		}
	}
	return nil
}

// searchable reports the first directory from dir up to the root that u
// cannot pass through, or "" when u reaches dir: the build steps run in
// the work directory, so every directory above it must let u search it.
func searchable(u *BuildUser, dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return "", err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return "", fmt.Errorf("%s: no owner to check", d)
		}
		mode := fi.Mode().Perm()
		var bit fs.FileMode = 0o001
		switch {
		case st.Uid == u.UID:
			bit = 0o100
		case st.Gid == u.GID:
			bit = 0o010
		}
		if mode&bit == 0 {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", nil
		}
	}
}

// switchable reports why this process cannot run the build steps as
// another user, or nil: only root can.
func switchable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("running as uid %d: only root can run the build steps as another user", os.Geteuid())
	}
	return nil
}
