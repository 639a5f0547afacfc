// Package prebuild compiles a contribution's declared CUDA sources before
// any engine or verify worker runs, in a contained compiler child, and
// seals what it built.
//
// A row with cuda_sources is a native rebuild (spec §1.4: not
// hot-swappable). Its .cu translation units (with the .cuh headers they
// include) are compiled into one shared library per row, a torch operator
// library that registers its operators with TORCH_LIBRARY. The compiler
// runs in an evaluator/sandbox sandbox: no network, no device nodes (so no
// GPU), the host file system read-only, the bundle bound read-only, one
// private writable staging directory, resource limits and a time budget.
//
// What the compiler left in the staging output directory is inventoried
// (every file regular, with its SHA-256), copied into a content-addressed
// artifact directory named by the seal digest, H(cacheon.prebuild.artifact,
// artifact.json), made read-only, and reopened: Open re-hashes every file
// against the sealed inventory before a controller hands the directory to
// a worker. Workers load only the sealed library (torch.ops.load_library)
// and never compile.
//
// Outcomes are classed: a compile error or a refused include closure is a
// rejection of the contribution (internal/reject, a FAIL); a build over its
// time budget is *NoDecisionError (infrastructure, never a loss); anything
// else (no compiler, no sandbox) is an error of the host.
//
// See docs/reference/prebuild.md.
package prebuild
