// Package manifest parses and validates a contribution bundle's
// manifest.toml, byte-compatible with bundles written for the upstream
// Python SDK.
//
// A manifest is data, never code: it names the slots a bundle implements,
// the source file and entry callable of each implementation row, optional
// eligibility metadata, declared CUDA sources, validator-prebuilt (AOT)
// exports and dependency patches. Parse checks the document alone; Load
// also enforces the intake limits on the bundle directory, checks that
// every declared path is a contained regular file, parses declared
// dependency patches and metadata JSON. Neither ever imports or runs
// bundle code.
//
// Every rejection is an *Error naming the file, the TOML key (for example
// "ops[1].source") and the reason, and wraps one of the sentinel classes
// (ErrSyntax, ErrSchema, ErrPath, ErrLimit, ErrDepPatch, ErrMetadata), so
// callers branch with errors.Is and people read one line.
package bundle
