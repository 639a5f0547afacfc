package bundle

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

const benchFileSize = 64 << 20

// BenchmarkContentHashLargeFiles hashes a bundle of four 64 MiB files. Set
// against BenchmarkRawSHA256 it shows how close hashing a tree gets to the
// machine's single-core SHA-256 rate.
func BenchmarkContentHashLargeFiles(b *testing.B) {
	dir := b.TempDir()
	buf := make([]byte, benchFileSize)
	rand.Read(buf)
	for i := 0; i < 4; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("weights_%d.bin", i)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(4 * benchFileSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ContentHash(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContentHashManySmallFiles hashes 2,000 files of 4 KiB, where the
// walk and the sort, not SHA-256, dominate.
func BenchmarkContentHashManySmallFiles(b *testing.B) {
	dir := b.TempDir()
	buf := make([]byte, 4096)
	rand.Read(buf)
	for i := 0; i < 2000; i++ {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%20), fmt.Sprintf("mod_%04d.py", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(2000 * 4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ContentHash(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawSHA256 is the floor: crypto/sha256 over bytes in memory.
func BenchmarkRawSHA256(b *testing.B) {
	buf := make([]byte, 1<<20)
	rand.Read(buf)
	b.SetBytes(int64(len(buf)))
	for i := 0; i < b.N; i++ {
		sha256.Sum256(buf)
	}
}
