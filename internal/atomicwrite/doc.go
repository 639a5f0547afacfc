// Package atomicwrite publishes files and directory trees so that a reader
// sees either nothing or the complete, verified result, never a partial one.
//
// WriteFile replaces one file through a sibling temporary file. WriteTree
// builds a whole tree in a sibling temporary directory, makes it
// deterministic (files 0444, directories 0755, access and modification
// times of every file, directory and the root at the Unix epoch), syncs it,
// reopens and re-verifies every byte, renames it into place without
// replacing anything that exists, and checks once more, from the files'
// status alone, that the published tree is the one verified (the same
// inodes, none written since: a write moves a file's change time). Any failure
// removes what was written. Nothing about the tree depends on the umask,
// the clock or the path it was built from, so two builds of the same inputs
// are byte-identical wherever they run.
//
// The temporary trees and files, and the work directories callers make
// with MkdirScratch, are scratch entries beside the destination, named
// .<base>.<kind>-<pid>-<random> and flock(2)-locked by their creator
// while in use. A process killed part-way leaves its entry unlocked;
// RemoveStale (called by WriteTree before it starts) removes those that
// are unlocked and over a minute old, never a live run's.
package atomicwrite
