package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cacheon/engine/evaluator/engine/enginetest"
)

// treeSum is the SHA-256 of every regular file under dir, by path: what an
// engine must not be able to change.
func treeSum(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%x\x00", p, sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestEnginesAreContained starts engines whose code (the session module a
// candidate's kernels run inside) attacks the host: each attack must fail
// inside the sandbox, the engine must end as a fault (the candidate's
// FAIL, an incumbent's NO_DECISION), and the host must show no trace of it.
func TestEnginesAreContained(t *testing.T) {
	f := enginetest.New(t)
	if f.Iso.Unsafe {
		t.Skip("no sandbox on this host: containment cannot be shown")
	}
	// A listener on the host's loopback that an escaped engine could reach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	treeBefore, modelBefore := treeSum(t, f.Tree), treeSum(t, f.Model)
	// Each attack raises when it fails, as a kernel that needs what it
	// tried would: the engine then never gets ready.
	cases := []struct {
		name, source string
		mem          uint64
	}{
		{"connects to a host listener", `import socket
s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
send({"escaped": "network"})
`, 0},
		{"writes into its engine tree", `open(os.path.join(TREE, "manifest.toml"), "a").write("pwned")
`, 0},
		{"writes into the model", `open(os.path.join(MODEL, "config.json"), "a").write("pwned")
`, 0},
		{"replaces a model file", `os.replace(os.path.join(MODEL, "config.json"), os.path.join(MODEL, "x"))
`, 0},
		{"fills memory", `hog = []
while True:
    hog.append(bytearray(64 << 20))
`, 1 << 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := strings.ReplaceAll(c.name, " ", "-")
			src := strings.NewReplacer("PORT", strconv.Itoa(port), "TREE", strconv.Quote(f.Tree), "MODEL", strconv.Quote(f.Model)).Replace(c.source)
			s := spec(f, name)
			s.Root = f.HostileRoot(t, name, enginetest.Prelude+src+enginetest.ReadyFrame+"time.sleep(600)\n")
			s.StartTimeout = 60 * time.Second
			mark := enginetest.Mark(t)
			s.Env = append(s.Env, mark)
			iso := f.Iso
			iso.Limits.Memory = c.mem
			e, err := Start(context.Background(), iso, s)
			if err == nil {
				e.Close()
				t.Fatalf("the engine got ready after %s", c.name)
			}
			if !isFault(err, FaultStart) {
				t.Fatalf("start: %v, want a start fault", err)
			}
			if pids := enginetest.Strays(mark); len(pids) > 0 {
				t.Errorf("processes %v outlived the engine", pids)
			}
			t.Logf("%s: %v", c.name, err)
		})
	}
	select {
	case <-accepted:
		t.Fatal("an engine reached the host's listener")
	default:
	}
	if treeSum(t, f.Tree) != treeBefore || treeSum(t, f.Model) != modelBefore {
		t.Fatal("an engine changed its tree or the model")
	}
}
