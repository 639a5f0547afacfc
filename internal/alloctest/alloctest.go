// Package alloctest measures what code allocates, for tests that prove a
// cost grows linearly with its input. Bytes allocated, unlike time, do not
// depend on the machine or its load: the same work allocates the same.
package alloctest

import "runtime"

// Bytes returns the bytes the heap handed out while fn ran, the least of
// three runs (the first may pay for lazily built tables).
func Bytes(fn func()) uint64 {
	var least uint64
	for i := 0; i < 3; i++ {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; i == 0 || n < least {
			least = n
		}
	}
	return least
}
