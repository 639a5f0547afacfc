//go:build !unix

package writerlock

import "fmt"

// Acquire needs flock(2): without it there is no writer lock.
func Acquire(path string) (*Lock, error) {
	return nil, fmt.Errorf("lock %s: the writer lock needs flock(2)", path)
}

// Release is a no-op here.
func (l *Lock) Release() error { return nil }
