// Package registrytest runs a real OCI registry (Debian's docker-registry,
// the CNCF distribution server) on a free loopback port for tests, with
// its own storage directory and configuration, and stops it when the test
// ends. Tests skip, saying why, when the binary is not installed.
package registrytest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Binary is the registry executable looked up on PATH.
const Binary = "docker-registry"

// Registry is a running registry.
type Registry struct {
	// Host is "127.0.0.1:<port>", usable in references.
	Host    string
	Storage string
	log     *syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start starts a registry for t and registers its shutdown.
func Start(t testing.TB) *Registry {
	t.Helper()
	bin, err := exec.LookPath(Binary)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install docker-registry); registry tests need a real registry", Binary)
	}
	dir := t.TempDir()
	storage := filepath.Join(dir, "storage")
	if err := os.Mkdir(storage, 0o700); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, storage, host)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited before serving: %v\n%s", bin, err, log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer on %s within 15s\n%s", bin, host, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &Registry{Host: host, Storage: storage, log: log}
}

// Log returns what the registry printed so far.
func (r *Registry) Log() string { return r.log.String() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
