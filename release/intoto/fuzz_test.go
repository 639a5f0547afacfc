package intoto_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	toto "github.com/in-toto/in-toto-golang/in_toto"

	"github.com/cacheon/engine/release/intoto"
	"github.com/cacheon/engine/release/key"
	fixture "github.com/cacheon/engine/release/releasetest"
)

// FuzzLoad feeds arbitrary bytes, as a layout file, to the in-toto layout
// loader: it refuses or returns a layout, never panics.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	_, privPath, pubPath := fixture.Keys(f, dir, "owner", key.Ed25519)
	_, _, otherPath := fixture.Keys(f, dir, "validator", key.Ed25519)
	priv, _ := os.ReadFile(privPath)
	pub, _ := os.ReadFile(pubPath)
	other, _ := os.ReadFile(otherPath)
	fs := intoto.Functionaries{}
	for _, step := range intoto.Steps {
		fs[step] = [][]byte{pub}
	}
	fs[intoto.StepQualify] = [][]byte{pub, other}
	mb, err := intoto.New(priv, fs, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		f.Fatal(err)
	}
	good, err := json.Marshal(mb)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"signed":{"_type":"link","name":"x"},"signatures":[]}`))
	f.Add([]byte(`{"signed":{"_type":"layout","expires":"x","steps":[{"name":""}]},"signatures":[{"keyid":"","sig":""}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "root.layout")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		mb, err := intoto.Load(p)
		if err != nil {
			return
		}
		if _, ok := mb.Signed.(toto.Layout); !ok {
			t.Fatalf("Load returned a %T", mb.Signed)
		}
	})
}
