package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox's root is built from an allow-list: a fresh tmpfs holding
// only what a worker needs, each piece bound read-only from the host or
// written here. A host file is visible inside only when it is named
// below or given in the Spec; everything else (other checkouts, /home,
// /root, /run and the sockets under it, /var, the NICs under /sys) does
// not exist there. See docs/reference/worker-sandbox.md.

// systemTrees are host trees bound read-only at the same path: the
// programs and libraries every worker runs from (the interpreter, its
// standard library and the distribution's packages, torch included, the
// dynamic loader, the C compiler Triton calls).
func systemTrees() []string { return []string{"/usr"} }

// mergedLinks are the top-level names that merged-/usr systems make
// symlinks into /usr; on other systems they are directories, bound
// read-only like /usr.
func mergedLinks() []string {
	return []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
}

// etcFiles are the host files of /etc a worker reads: the dynamic
// loader's cache and configuration (ld.so and `ldconfig -p`, which Triton
// runs to find libcuda), the time zone, and the alternatives links
// (/usr/bin/cc leads through them). Nothing in them names a user or a
// host service.
func etcFiles() []string {
	return []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives"}
}

// etcWritten are the /etc files written for the sandbox instead of bound:
// its own users (the namespace's root and the overflow user every
// unmapped id shows as), a resolver that reads only files, and the
// loopback names (collective ranks resolve "localhost" and the hostname).
func etcWritten() map[string]string {
	return map[string]string{
		"/etc/passwd":        "root:x:0:0:root:/tmp:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"/etc/group":         "root:x:0:\nnogroup:x:65534:\n",
		"/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
		"/etc/hosts":         "127.0.0.1 localhost " + sandboxHostname + "\n::1 localhost ip6-localhost\n",
		"/etc/hostname":      sandboxHostname + "\n",
	}
}

// sandboxHostname is the UTS name every sandbox gets.
const sandboxHostname = "cacheon-worker"

// sysTrees are the parts of /sys a CPU worker reads: the CPU topology and
// the NUMA nodes (torch's and OpenMP's thread placement). The rest of
// /sys (network devices and their addresses, block devices, firmware)
// stays out.
func sysTrees() []string {
	return []string{"/sys/devices/system/cpu", "/sys/devices/system/node"}
}

// buildAllowListRoot mounts a tmpfs on root and fills it from the
// allow-list and the Spec. It leaves the tmpfs writable: the caller binds
// the Spec's paths and then makes it read-only.
func buildAllowListRoot(root string, s *Spec) error {
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=16m,mode=755"); err != nil {
		return fmt.Errorf("mount the root tmpfs: %w", err)
	}
	at := func(p string) string { return filepath.Join(root, p) }
	for _, t := range systemTrees() {
		if err := bindPath(t, at(t), false); err != nil {
			return err
		}
	}
	for _, l := range mergedLinks() {
		if err := mirror(l, at(l)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(at("/etc"), 0o755); err != nil {
		return err
	}
	for _, f := range etcFiles() {
		if err := mirror(f, at(f)); err != nil {
			return err
		}
	}
	for name, content := range etcWritten() {
		if err := os.WriteFile(at(name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	// Library directories the loader is configured with (a driver's
	// libraries installed under /opt, say) and the processes'
	// LD_LIBRARY_PATH entries: read-only, where /usr does not hold them.
	for _, d := range libraryDirs(s) {
		if err := bindPath(d, at(d), false); err != nil {
			return err
		}
	}
	for _, d := range []string{"/proc", "/sys", "/tmp", "/var/tmp", "/dev"} {
		if err := os.MkdirAll(at(d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("proc", at("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, t := range append(sysTrees(), gpuSysTrees(s.Devices)...) {
		if _, err := os.Stat(t); err != nil {
			continue // a host without NUMA nodes, say
		}
		if err := bindPath(t, at(t), false); err != nil {
			return err
		}
	}
	if err := gpuSysLinks(root, s.Devices); err != nil {
		return err
	}
	// Private, size-bounded scratch space.
	for _, d := range []string{"/tmp", "/var/tmp"} {
		opts := fmt.Sprintf("size=%d,mode=1777", s.Limits.TmpSize)
		if err := unix.Mount("tmpfs", at(d), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("mount %s: %w", d, err)
		}
	}
	return buildDev(root, s)
}

// mirror makes host path src appear at dst: a symlink is copied as a
// symlink (its target is resolved inside the sandbox, so a merged-/usr
// /bin leads to the bound /usr/bin), anything else is bound read-only.
// A missing src is skipped: the allow-list names what a host may have.
func mirror(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return nil
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return fmt.Errorf("read link %s: %w", src, err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return fmt.Errorf("link %s: %w", src, err)
		}
		return nil
	}
	return bindPath(src, dst, false)
}

// covered reports whether path, as its symlinks resolve, lies inside a
// system tree the root always has.
func covered(path string) bool {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	for _, t := range systemTrees() {
		if within(path, t) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// libraryDirs are the directories the dynamic loader may search that the
// system trees do not hold: those its configuration lists and those in
// any process's LD_LIBRARY_PATH. Only existing, absolute directories,
// never "/": a misconfigured entry must not bring the host tree back.
func libraryDirs(s *Spec) []string {
	var dirs []string
	dirs = append(dirs, ldConfigDirs("/etc/ld.so.conf", 0)...)
	for _, p := range s.Procs {
		for _, kv := range p.Env {
			if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
				dirs = append(dirs, filepath.SplitList(v)...)
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		d = filepath.Clean(d)
		if !filepath.IsAbs(d) || d == "/" || seen[d] || covered(d) {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// ldConfigDirs reads an ld.so.conf file: one directory a line, and
// "include" lines naming more files by glob.
func ldConfigDirs(path string, depth int) []string {
	if depth > 4 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "include "); ok {
			pattern := strings.TrimSpace(rest)
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(filepath.Dir(path), pattern)
			}
			matches, _ := filepath.Glob(pattern)
			for _, m := range matches {
				dirs = append(dirs, ldConfigDirs(m, depth+1)...)
			}
			continue
		}
		dirs = append(dirs, line)
	}
	return dirs
}

// gpuSysTrees are the /sys directories the NVIDIA driver's user-space
// libraries read when a GPU's device nodes are given: the driver
// module's parameters and version, and the PCI device directory of each
// device bound to the nvidia driver (NUMA affinity, the device's
// identity). Only GPUs: a NIC's directory is never among them.
// Needs verification on a GPU machine (see worker-sandbox.md).
func gpuSysTrees(devices []string) []string {
	if !hasNvidia(devices) {
		return nil
	}
	var out []string
	for _, d := range []string{"/sys/module/nvidia", "/sys/module/nvidia_uvm"} {
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	for _, dev := range nvidiaPCIDevices() {
		out = append(out, dev.real)
	}
	return out
}

// gpuSysLinks recreates /sys/bus/pci/devices/ADDR for each GPU, the
// links by which libraries find a device from its PCI address.
func gpuSysLinks(root string, devices []string) error {
	if !hasNvidia(devices) {
		return nil
	}
	for _, dev := range nvidiaPCIDevices() {
		link := filepath.Join(root, "/sys/bus/pci/devices", dev.addr)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(dev.real, link); err != nil {
			return fmt.Errorf("link %s: %w", link, err)
		}
	}
	return nil
}

type pciDevice struct{ addr, real string }

// nvidiaPCIDevices lists the PCI devices bound to the nvidia driver.
func nvidiaPCIDevices() []pciDevice {
	entries, err := os.ReadDir("/sys/bus/pci/drivers/nvidia")
	if err != nil {
		return nil
	}
	var out []pciDevice
	for _, e := range entries {
		if !strings.Contains(e.Name(), ":") {
			continue // bind, unbind, module, new_id...
		}
		real, err := filepath.EvalSymlinks(filepath.Join("/sys/bus/pci/drivers/nvidia", e.Name()))
		if err != nil || !strings.HasPrefix(real, "/sys/devices/") {
			continue
		}
		out = append(out, pciDevice{addr: e.Name(), real: real})
	}
	return out
}

func hasNvidia(devices []string) bool {
	for _, d := range devices {
		if strings.HasPrefix(d, "/dev/nvidia") {
			return true
		}
	}
	return false
}

// Provided reports whether every sandbox's root already holds path (as
// its symlinks resolve) read-only: a caller need not bind it.
func Provided(path string) bool { return covered(path) }
