//go:build !unix

package bundle

// openFlags: without O_NONBLOCK and O_NOFOLLOW, OpenRegular relies on the
// fstat check alone.
const openFlags = 0
