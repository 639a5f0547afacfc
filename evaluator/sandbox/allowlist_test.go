//go:build linux

package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostDir makes a world-readable directory under parent on the host, as
// another checkout or a host service's socket directory would be:
// outside every path a sandbox is given. Root only (the sandbox tests'
// CI runs as root); parent "" is a directory under / itself.
func hostDir(t *testing.T, parent, pattern string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making directories under / and /home needs root")
	}
	if parent == "" {
		parent = "/"
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listenUnix listens on a unix socket any user may connect to.
func listenUnix(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if !strings.HasPrefix(addr, "@") {
		if err := os.Chmod(addr, 0o777); err != nil {
			t.Fatal(err)
		}
	}
}

// connectScript tries to connect to a unix socket (a leading @ is an
// abstract name) and prints CONNECTED if it could.
func connectScript(addr string) string {
	if name, ok := strings.CutPrefix(addr, "@"); ok {
		addr = `'\0` + name + `'`
	} else {
		addr = "'" + addr + "'"
	}
	return fmt.Sprintf(`python3 -c "
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(%s)
print('CONNECTED')
"; true`, addr)
}

// TestAllowList: a sandboxed process reaches no host socket and no host
// file outside what it was given. Each script prints a marker only if
// the attack worked. On the read-only host tree the sandbox had before,
// every one of these worked but the abstract socket (the network
// namespace separates those; Landlock's scope is the second line).
func TestAllowList(t *testing.T) {
	need(t)
	t.Parallel()
	rootDir := hostDir(t, "", ".cacheon-outside-")
	listenUnix(t, filepath.Join(rootDir, "service.sock"))
	runDir := hostDir(t, "/run", "cacheon-test-")
	listenUnix(t, filepath.Join(runDir, "service.sock"))
	abstract := fmt.Sprintf("@cacheon-test-%d", os.Getpid())
	listenUnix(t, abstract)

	checkout := hostDir(t, "", ".cacheon-checkout-")
	gitConfig := filepath.Join(checkout, ".git", "config")
	homeFile := filepath.Join(hostDir(t, "/home", "cacheon-test-"), "notes.txt")
	for _, f := range []string{gitConfig, homeFile} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("HOST-SECRET\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		name, script, forbid, want string
	}{
		{"connect to a host socket outside any given path", connectScript(filepath.Join(rootDir, "service.sock")), "CONNECTED", ""},
		{"connect to a host socket under /run", connectScript(filepath.Join(runDir, "service.sock")), "CONNECTED", ""},
		{"connect to a host abstract socket", connectScript(abstract), "CONNECTED", ""},
		{"create an AF_VSOCK socket", `python3 -c "
import socket
socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
print('VSOCK-CREATED')
"; true`, "VSOCK-CREATED", "Address family not supported"},
		{"create a packet socket", `python3 -c "
import socket
socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
print('PACKET-CREATED')
"; true`, "PACKET-CREATED", ""},
		{"read another checkout's .git/config", "cat " + gitConfig + "; true", "HOST-SECRET", ""},
		{"read a file under /home", "cat " + homeFile + "; ls /home; true", "HOST-SECRET", ""},
		{"list the host's /run", "ls /run/; ls " + runDir + " && echo SAW-RUN; true", "SAW-RUN", ""},
		{"read the NICs' addresses", "cat /sys/class/net/*/address && echo SAW-NIC; true", "SAW-NIC", ""},
		{"read the host's users", "grep -v -E '^(root|nobody):' /etc/passwd && echo SAW-USER; true", "SAW-USER", ""},
		// What a worker needs is still there.
		{"run the interpreter", `python3 -c "import os, json; print('RAN', os.cpu_count() > 0)"`, "", "RAN True"},
		{"see the CPU topology", "cat /sys/devices/system/cpu/online && echo TOPOLOGY", "", "TOPOLOGY"},
		{"resolve localhost", `python3 -c "import socket; print(socket.gethostbyname('localhost'))"`, "", "127.0.0.1"},
		{"talk over a socket of its own", `python3 -c "
import socket, os
a, b = socket.socketpair()
a.sendall(b'own')
print(b.recv(3).decode().upper())
path = os.environ['WORK'] + '/own.sock'
srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect(path); print('CONNECTED-OWN')
"`, "", "CONNECTED-OWN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			res := runSpec(t, b.spec(tc.script))
			out := b.output(t)
			if !res.Exits[0].Started {
				t.Fatalf("not started: %s", out)
			}
			if tc.forbid != "" && strings.Contains(out, tc.forbid) {
				t.Fatalf("the attack worked:\n%s", out)
			}
			if tc.want != "" && !strings.Contains(out, tc.want) {
				t.Fatalf("want %q in:\n%s", tc.want, out)
			}
		})
	}
}

// TestHiddenInsideAGivenPath: a hidden directory stays hidden when a path
// given read-only holds it (an interpreter's root holding the checkout
// the run directory lies in), and what is given inside it is still
// there.
func TestHiddenInsideAGivenPath(t *testing.T) {
	need(t)
	t.Parallel()
	b := newBox(t)
	outer := filepath.Dir(b.run) // holds the run directory
	if err := os.WriteFile(filepath.Join(outer, "public.txt"), []byte("PUBLIC\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := b.spec(fmt.Sprintf("cat %s/public.txt; cat %s/key && echo SAW-SECRET; cat %s/judge.py; echo ok > $WORK/x && cat $WORK/x",
		outer, b.secret, b.code))
	s.ReadOnly = append(s.ReadOnly, outer)
	runSpec(t, s)
	out := b.output(t)
	if strings.Contains(out, "SAW-SECRET") {
		t.Fatalf("the hidden directory's secret was visible through the path holding it:\n%s", out)
	}
	for _, want := range []string{"PUBLIC", "original", "ok"} {
		if !strings.Contains(out, want) {
			t.Fatalf("want %q in:\n%s", want, out)
		}
	}
}
