package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside a sandbox: nothing a kernel needs,
// everything that reaches past the namespaces (mounts, new namespaces,
// tracing other processes, kernel modules and keyrings, BPF, io_uring,
// userfaultfd, clocks, reboot).
var deniedSyscalls = []uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP, unix.SYS_PIDFD_GETFD,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_MOUNT_SETATTR,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_BPF, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_USERFAULTFD, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT, unix.SYS_QUOTACTL,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
	unix.SYS_FANOTIFY_INIT, unix.SYS_LOOKUP_DCOOKIE,
}

// namespaceFlags are the clone flags that make new namespaces.
const namespaceFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// auditArch is the seccomp arch value of the architecture we were built for.
func auditArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
}

// Offsets into struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian machines
	offArg2 = 32
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jeq(k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: jt, Jf: jf, K: k}
}

// filter is the sandbox's seccomp program: a foreign architecture (or the
// x32 ABI) kills the process; the denied calls, clone with namespace flags
// and unshare return EPERM; clone3, whose flags a classic filter cannot
// read, returns ENOSYS so libc falls back to clone; socket and socketpair
// are allowed only for the families a worker needs (socketFilter).
func filter() ([]unix.SockFilter, error) {
	arch, err := auditArch()
	if err != nil {
		return nil, err
	}
	const (
		ld     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		ret    = unix.BPF_RET | unix.BPF_K
		allow  = unix.SECCOMP_RET_ALLOW
		kill   = unix.SECCOMP_RET_KILL_PROCESS
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	p := []unix.SockFilter{
		stmt(ld, offArch),
		jeq(arch, 1, 0),
		stmt(ret, kill),
		stmt(ld, offNr),
	}
	if runtime.GOARCH == "amd64" {
		// x32 system calls carry bit 30; they would bypass the numbers below.
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, Jt: 0, Jf: 1, K: 0x40000000},
			stmt(ret, kill))
	}
	for _, nr := range deniedSyscalls {
		p = append(p, jeq(uint32(nr), 0, 1), stmt(ret, eperm))
	}
	p = append(p, jeq(unix.SYS_CLONE3, 0, 1), stmt(ret, enosys))
	p = append(p, socketFilter()...)
	p = append(p,
		jeq(unix.SYS_CLONE, 0, 3),
		stmt(ld, offArg0),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, Jt: 0, Jf: 1, K: namespaceFlags},
		stmt(ret, eperm),
		stmt(ret, allow),
	)
	return p, nil
}

// loadFilter installs the filter on every thread of this process (TSYNC);
// every process started afterwards inherits it.
func loadFilter() error {
	p, err := filter()
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}

// socketFilter allows socket(2) only for the families a worker uses, each
// of which the sandbox's namespaces confine: AF_UNIX (NCCL and the
// interpreter's own pipes; the allow-list root and Landlock keep it to
// the sandbox's own sockets), AF_INET and AF_INET6 (a collective's
// rendezvous on the empty network namespace's loopback), and AF_NETLINK
// for NETLINK_ROUTE only (libc's getaddrinfo asks it which address
// families the namespace has). Every other family fails with
// EAFNOSUPPORT, as on a kernel built without it: AF_VSOCK, which reaches
// the hypervisor host and other guests past any network namespace;
// AF_PACKET, AF_BLUETOOTH, AF_ALG, AF_XDP and the rest, attack surface a
// kernel does not need. socketpair(2) makes only AF_UNIX pairs. It runs
// with the system call number loaded; every path ends in a return.
func socketFilter() []unix.SockFilter {
	const (
		ld      = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		ret     = unix.BPF_RET | unix.BPF_K
		allow   = unix.SECCOMP_RET_ALLOW
		refused = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)
	)
	socket := []unix.SockFilter{
		stmt(ld, offArg0),             // 0: domain
		jeq(unix.AF_UNIX, 5, 0),       // 1 -> 7
		jeq(unix.AF_INET, 4, 0),       // 2 -> 7
		jeq(unix.AF_INET6, 3, 0),      // 3 -> 7
		jeq(unix.AF_NETLINK, 0, 3),    // 4 -> 5, else 8
		stmt(ld, offArg2),             // 5: protocol
		jeq(unix.NETLINK_ROUTE, 0, 1), // 6 -> 7, else 8
		stmt(ret, allow),              // 7
		stmt(ret, refused),            // 8
	}
	pair := []unix.SockFilter{
		stmt(ld, offArg0),
		jeq(unix.AF_UNIX, 0, 1),
		stmt(ret, allow),
		stmt(ret, refused),
	}
	var p []unix.SockFilter
	p = append(p, jeq(unix.SYS_SOCKET, 0, uint8(len(socket))))
	p = append(p, socket...)
	p = append(p, jeq(unix.SYS_SOCKETPAIR, 0, uint8(len(pair))))
	p = append(p, pair...)
	return p
}
