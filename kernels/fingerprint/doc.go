// Package fingerprint tells copied contributions from original ones.
//
// A market pays the first proposal of an idea; a later proposal of
// another miner that carries the same code is a copy, however it was
// dressed up. Fingerprints cover only a contribution's selected delta —
// the selected payload's files (the Python import closure of the op
// sources, the declared CUDA sources and dependency patches) and its op
// rows — never incumbent or validator bytes, so sharing the validator's
// scaffolding makes nobody a copier.
//
// Of derives three identities from an inspection (kernels/contribution):
//
//   - the selected payload digest, exact bytes (contribution's own);
//   - the normalized delta digest: each file normalized (NormalizePython
//     re-emits Python from its syntax tree without comments, docstrings
//     or formatting; NormalizeCUDA strips comments and whitespace from
//     CUDA/C++; a dependency patch is reduced to its added and removed
//     lines), and the op rows with paths replaced by the normalized
//     digests of the files they name;
//   - per-file fingerprints: winnowed k-gram hashes over each file's
//     normalized tokens, as in MOSS.
//
// Compare checks, in that order, equal payloads, equal normalized deltas
// and symmetric containment: every substantial file of each proposal
// has at least ThresholdPercent of its fingerprints in the other. Census
// applies Compare across a namespace in chain order. The parameters and
// the measurements that chose them are in docs/reference/anti-copy.md.
package fingerprint
