package models

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// benchTreeSize is the size of the benchmark tree: 1 GiB in eight 128 MiB
// shards, the shape of a sharded safetensors checkpoint.
const (
	benchTreeSize = 1 << 30
	benchShards   = 8
)

// benchTree writes the benchmark tree and returns it with its shard bytes,
// so the raw SHA-256 baseline hashes exactly the same bytes.
func benchTree(b *testing.B) (string, [][]byte) {
	b.Helper()
	root := filepath.Join(b.TempDir(), "model")
	if err := os.Mkdir(root, 0o755); err != nil {
		b.Fatal(err)
	}
	rng := rand.NewChaCha8([32]byte{'c', 'a', 'c', 'h', 'e', 'o', 'n'})
	shards := make([][]byte, benchShards)
	for i := range shards {
		shards[i] = make([]byte, benchTreeSize/benchShards)
		rng.Read(shards[i])
		name := filepath.Join(root, fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, benchShards))
		if err := os.WriteFile(name, shards[i], 0o444); err != nil {
			b.Fatal(err)
		}
	}
	return root, shards
}

// BenchmarkProvision1GiB compares provisioning a 1 GiB tree (page cache
// warm) with SHA-256 of the same bytes in memory, one stream and one
// stream per core.
func BenchmarkProvision1GiB(b *testing.B) {
	root, shards := benchTree(b)
	b.Run("sha256-raw/streams=1", func(b *testing.B) {
		b.SetBytes(benchTreeSize)
		for b.Loop() {
			for _, s := range shards {
				sha256.Sum256(s)
			}
		}
	})
	cores := runtime.GOMAXPROCS(0)
	b.Run(fmt.Sprintf("sha256-raw/streams=%d", cores), func(b *testing.B) {
		b.SetBytes(benchTreeSize)
		for b.Loop() {
			var wg sync.WaitGroup
			next := make(chan []byte, len(shards))
			for _, s := range shards {
				next <- s
			}
			close(next)
			for w := 0; w < cores; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for s := range next {
						sha256.Sum256(s)
					}
				}()
			}
			wg.Wait()
		}
	})
	for _, workers := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("provision/workers=%d", workers), func(b *testing.B) {
			b.SetBytes(benchTreeSize)
			for b.Loop() {
				if _, err := Provision(root, Options{Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
