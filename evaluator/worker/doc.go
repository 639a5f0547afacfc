// Package worker spawns and supervises Python worker processes.
//
// The trusted controller never imports or runs candidate code itself: every
// piece of Python runs in a freshly spawned interpreter in its own process
// group, with a JSON request on stdin, a private work directory as its
// current directory, stdout and stderr captured to files, and a wall-clock
// limit after which the whole process group is killed. A result is read
// from the work directory only after the process has exited; the progress
// log the worker appends as it goes attributes a crash or a timeout to the
// case and call it happened in.
//
// Every request carries the catalog's contract of the slot it concerns
// (SlotContract, built by ContractOf): the Python side holds the slots'
// semantics but none of the values the catalog states.
//
// The validator's Python packages (cacheon_reference and cacheon_worker) are
// embedded in the binary and written read-only under the run's directory
// (ValidatorRoot), so a worker always runs the controller's own validator
// code, never whatever happens to be installed.
package worker
