package sandbox

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// landlockABI is the Landlock ABI the sandbox needs: version 6 scopes
// abstract unix sockets and signals to a domain.
const landlockABI = 6

// landlockErrataSignal is the erratum bit that says the kernel's signal
// scoping is fixed (before it, a scoped domain could still signal out
// through a thread's file owner); go-landlock treats a kernel without it
// as ABI 5, and so does the check below.
const landlockErrataSignal = 0x2

// checkLandlock says why this kernel cannot scope a sandbox, wrapping
// ErrUnavailable as a host without user namespaces is: the controller
// refuses before it makes anything.
func checkLandlock() error {
	v, verr := ll.LandlockGetABIVersion()
	errata, eerr := ll.LandlockGetErrata()
	if eerr != nil {
		errata = 0 // pretend none fixed
	}
	return landlockSupport(v, errata, verr)
}

// landlockSupport judges what the kernel reported: its ABI version (or
// the error asking for it) and its errata bits.
func landlockSupport(version, errata int, err error) error {
	if err != nil {
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) {
			return fmt.Errorf("%w: Landlock is not enabled in this kernel (boot with lsm=...,landlock); "+
				"the sandbox needs it to refuse abstract unix sockets and signals outside itself", ErrUnavailable)
		}
		return fmt.Errorf("%w: Landlock ABI: %v", ErrUnavailable, err)
	}
	if version >= landlockABI && errata&landlockErrataSignal == 0 {
		version = landlockABI - 1
	}
	if version < landlockABI {
		return fmt.Errorf("%w: the kernel's Landlock ABI is %d (with its errata); the sandbox needs %d "+
			"(Linux 6.12 or later) to refuse abstract unix sockets and signals outside itself", ErrUnavailable, version, landlockABI)
	}
	return nil
}

// restrictScopes puts the init, and so every process it starts, in a
// Landlock domain of its own that scopes abstract unix sockets and
// signals: a worker may connect only to abstract sockets that processes
// of its own sandbox bound (the ranks of a collective share one), and
// signal only them. The network namespace already separates abstract
// sockets and the PID namespace hides outside processes; this holds even
// if either is shared by mistake. Pathname sockets are not Landlock's
// here (its resolve-unix right is ABI 9): the allow-list root keeps host
// sockets out of sight instead.
func restrictScopes() error {
	if err := landlock.V6.RestrictScoped(); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}
