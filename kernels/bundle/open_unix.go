//go:build unix

package bundle

import "syscall"

// openFlags make OpenRegular's open return at once for FIFOs and devices
// and refuse a final symbolic link.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOFOLLOW
