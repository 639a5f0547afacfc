package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cacheon/engine/release/layer"
)

var amd64 = Platform{OS: "linux", Architecture: "amd64"}

func testLayer(t *testing.T, body string) FileLayer {
	t.Helper()
	w, err := layer.Write(filepath.Join(t.TempDir(), "l"), []layer.Entry{{Path: "cacheon/x", Data: []byte(body)}},
		layer.Options{Epoch: 0, Compression: layer.Gzip})
	if err != nil {
		t.Fatal(err)
	}
	return FileLayer{W: w}
}

func TestAssembleUsesOCIMediaTypesAndEpoch(t *testing.T) {
	base, err := Scratch(amd64)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Assemble(Spec{
		Base: base, BaseName: "scratch", Platform: amd64, Epoch: 1234,
		Layers: []Added{{Layer: testLayer(t, "a"), CreatedBy: "test layer"}},
		Config: Config{Entrypoint: []string{"/cacheon/bin/cacheon"}, Env: []string{"A=1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s config %s, want OCI types", m.MediaType, m.Config.MediaType)
	}
	for _, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("layer %s media type %s, want %s", l.Digest, l.MediaType, types.OCILayer)
		}
	}
	if got := m.Annotations[AnnotationCreated]; got != "1970-01-01T00:20:34Z" {
		t.Errorf("created annotation %q", got)
	}
	cfg, _ := img.ConfigFile()
	if cfg.Created.Unix() != 1234 || len(cfg.History) != 1 || cfg.History[0].Created.Unix() != 1234 {
		t.Errorf("config dates not at the epoch: %+v", cfg)
	}
}

func TestAssembleIsDeterministic(t *testing.T) {
	digest := func() v1.Hash {
		base, _ := Scratch(amd64)
		img, err := Assemble(Spec{Base: base, Platform: amd64, Layers: []Added{{Layer: testLayer(t, "same")}}})
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if a, b := digest(), digest(); a != b {
		t.Fatalf("two assemblies differ: %s vs %s", a, b)
	}
}

// Base diff IDs the caller measured give the same image as computing them
// from the layers; a count that does not match the base's layers is an
// error.
func TestAssembleWithMeasuredBaseDiffIDs(t *testing.T) {
	scratch, _ := Scratch(amd64)
	base, err := Assemble(Spec{Base: scratch, Platform: amd64, Layers: []Added{{Layer: testLayer(t, "one")}, {Layer: testLayer(t, "two")}}})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := base.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var measured []v1.Hash
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := v1.SHA256(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		measured = append(measured, h)
	}
	digest := func(ids []v1.Hash) (v1.Hash, error) {
		img, err := Assemble(Spec{Base: base, Platform: amd64, BaseDiffIDs: ids, Layers: []Added{{Layer: testLayer(t, "top")}}})
		if err != nil {
			return v1.Hash{}, err
		}
		return img.Digest()
	}
	computed, err := digest(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := digest(measured); err != nil || got != computed {
		t.Errorf("with measured diff IDs: %s (%v), computed: %s", got, err, computed)
	}
	if _, err := digest(measured[:1]); err == nil || !strings.Contains(err.Error(), "1 base diff IDs for 2 base layers") {
		t.Errorf("one diff ID for two layers: %v", err)
	}
}

func TestLoadBaseChecksThePin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "base")
	pin, err := WriteScratchLayout(dir, amd64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBase(dir, pin, amd64); err != nil {
		t.Fatalf("load pinned base: %v", err)
	}
	other := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	if _, err := LoadBase(dir, other, amd64); err == nil || !strings.Contains(err.Error(), "no manifest "+other.String()) {
		t.Errorf("unknown pin: err = %v", err)
	}
	arm := Platform{OS: "linux", Architecture: "arm64"}
	if _, err := LoadBase(dir, pin, arm); err == nil || !strings.Contains(err.Error(), "want linux/arm64") {
		t.Errorf("wrong platform: err = %v", err)
	}
	// A base whose manifest blob was replaced no longer matches its pin.
	blob := filepath.Join(dir, "blobs", "sha256", pin.Hex)
	os.Chmod(blob, 0o644)
	if err := os.WriteFile(blob, []byte(`{"schemaVersion":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBase(dir, pin, arm); err == nil {
		t.Errorf("tampered base manifest accepted")
	}
}

func TestParsePlatform(t *testing.T) {
	for in, ok := range map[string]bool{"linux/amd64": true, "linux/arm64/v8": true, "linux": false, "linux//x": false, "a/b/c/d": false} {
		_, err := ParsePlatform(in)
		if (err == nil) != ok {
			t.Errorf("ParsePlatform(%q) err = %v", in, err)
		}
	}
}
