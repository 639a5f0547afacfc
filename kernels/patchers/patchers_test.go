package patchers

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"github.com/cacheon/engine/kernels/bundle"
)

// Every built-in patcher is a registered one, and its digest is the
// SHA-256 of the file a reviewer reads in this directory.
func TestReviewedAreRegisteredAndHashTheirFiles(t *testing.T) {
	registered := map[string]bool{}
	for _, p := range bundle.Patchers {
		registered[p.Name] = true
	}
	for name, digest := range Reviewed() {
		t.Run(name, func(t *testing.T) {
			if !registered[name] {
				t.Fatalf("%s is not a registered patcher (kernels/bundle.Patchers)", name)
			}
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if want := hex.EncodeToString(sum[:]); digest != want {
				t.Fatalf("digest %s, the file hashes to %s", digest, want)
			}
		})
	}
	m := Reviewed()
	m[BuildCUDAExtName] = "changed"
	if Reviewed()[BuildCUDAExtName] == "changed" {
		t.Fatal("Reviewed must return a fresh map")
	}
}
