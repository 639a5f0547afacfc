// Package sandbox runs untrusted worker processes contained: every group
// of processes gets its own user, mount, PID, network, IPC, UTS and cgroup
// namespaces, a root built from an allow-list (the system trees, a few
// /etc files, the CPU topology of /sys, and only the paths it was given;
// not the host tree), a private writable /tmp, a minimal /dev (plus the
// device nodes it was given, such as a GPU's), no capabilities,
// no_new_privs, a Landlock domain scoping abstract unix sockets and
// signals, a seccomp filter (socket families included), per-process
// resource limits, and a control group of its own that bounds its memory
// (tmpfs and shared pages included), tasks and CPU as a sum (package
// cgroup), with its writable directories bounded in bytes and inodes.
//
// A sandbox is started by re-executing the running binary (/proc/self/exe)
// under the name InitName; this package's init function recognises that
// name and runs the sandbox's init instead of the program, so every binary
// that links the package (the cacheon command and every test binary) can
// start sandboxes without wiring of its own. The init is PID 1 of its PID
// namespace: when it ends, the kernel kills every process the workers
// started, including ones that left their process group or session. The
// controller kills the init on a timeout; the init dies with the
// controller (PR_SET_PDEATHSIG).
//
// Identity inside the sandbox: the user namespace maps its root to one
// unprivileged host user (65534 when the controller is root, the caller's
// own user otherwise). Workers run as that root with every capability
// dropped and the bounding set empty, so host files owned by anyone else
// keep their permissions (no /etc/shadow), and the writable work
// directories the controller gives are chowned to that user first.
//
// The filter and limits are a second line; the namespaces are the defence.
// See docs/reference/worker-sandbox.md.
package sandbox
