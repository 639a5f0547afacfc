package rebuild_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/publish"
	"github.com/cacheon/engine/release/rebuild"
	"github.com/cacheon/engine/release/registrytest"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/store/remote"
	"github.com/cacheon/engine/release/verify"
)

// onlyHost is an HTTP transport that reaches one host and fails the test
// on any other request: the consumer's side of a release talks to the
// registry and nothing else.
type onlyHost struct {
	t    *testing.T
	host string
}

func (o onlyHost) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != o.host {
		o.t.Errorf("request to %s; only the registry %s may be reached", r.URL, o.host)
		return nil, fmt.Errorf("%s is not reachable", r.URL.Host)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestVerifyAndRebuildNeedOnlyTheRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	r := fixture.New(t)
	l := signed(t, r, nil)
	ref := reg.Host + "/cacheon/engine:1.0"
	target, _ := remote.Open(ref, false)
	if _, err := publish.Layout(l, target, nil); err != nil {
		t.Fatal(err)
	}
	open := func() *remote.Registry {
		s, err := remote.Open(ref, false, remote.WithTransport(onlyHost{t, reg.Host}))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := verify.Run(open(), verify.Options{Policy: policy(t, r)}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	res, err := rebuild.Run(open(), rebuild.Options{Policy: policy(t, r)})
	if err != nil || !res.Match {
		t.Fatalf("rebuild: %+v %v", res, err)
	}
}

// Nothing a release ships or attaches names a chain, a wallet, a miner's
// URL or a referee database.
var chainReference = regexp.MustCompile(`(?i)bittensor|subtensor|finney|netuid|hotkey|coldkey|wallet|miner|extrinsic|\bsubnet\b|referee|ledger\.(db|sqlite)|\.sqlite\b|wss://|ws://`)

// allowedURL are the only URLs a release may carry: format identifiers
// (in-toto, SLSA, SPDX and its in-toto predicate type, the project's build type and builder ids).
var anyURL = regexp.MustCompile(`https?://[^\s"'<>\\]+`)

func allowedURL(u string) bool {
	for _, p := range []string{"https://in-toto.io/", "https://slsa.dev/", "https://spdx.org/", "https://spdx.dev/", "https://cacheon.dev/"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

func TestReleaseContentsAreChainIndependent(t *testing.T) {
	r := fixture.New(t)
	l := signed(t, r, nil)
	blobs, err := filepath.Glob(filepath.Join(l.Dir(), "blobs", "sha256", "*"))
	if err != nil || len(blobs) == 0 {
		t.Fatalf("no blobs: %v", err)
	}
	scanned := 0
	scan := func(name string, b []byte) {
		scanned++
		if m := chainReference.Find(b); m != nil {
			t.Errorf("%s mentions %q", name, m)
		}
		for _, u := range anyURL.FindAll(b, -1) {
			if !allowedURL(string(u)) {
				t.Errorf("%s carries the URL %s", name, u)
			}
		}
	}
	for _, p := range blobs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			tarBytes, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			scan(filepath.Base(p)+" (layer)", tarBytes)
			continue
		}
		scan(filepath.Base(p), b)
	}
	if scanned < 8 {
		t.Errorf("scanned only %d blobs", scanned)
	}
	// The serve environment cannot configure a chain client either.
	for _, env := range []string{"BT_WALLET_PATH=/w", "WALLET_NAME=x", "MINER_URL=https://m", "BITTENSOR_NETWORK=finney"} {
		if err := descriptor.CheckEnvironment([]string{env}); err == nil || !strings.Contains(err.Error(), "chain-independent") {
			t.Errorf("serve environment %s: err = %v", env, err)
		}
	}
	in := r.Inputs(filepath.Join(t.TempDir(), "x"))
	in.ServeEnv = []string{"BT_NETWORK=finney"}
	if _, err := build.Build(in, nil); err == nil {
		t.Errorf("a release with a chain variable in its serve environment was built")
	}
}
