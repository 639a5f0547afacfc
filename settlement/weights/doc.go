// Package weights projects the emissions policy V1 (spec §6.3): from the
// standing and discovery claims settlement wrote, a metagraph and a block,
// one weight vector over hotkeys that sums to exactly 1,000,000 parts per
// million, or a named refusal and no vector at all.
//
// The projection is pure: no chain client, ledger or clock. It reads
// three inputs, each a JSON projection with upstream's field names
// (ParsePolicy, ParseClaims, ParseMetagraph), and returns a Projection.
//
// # The formulas
//
// A standing claim's credit at block b, with h = half_life_blocks:
//
//	credit = (speedup_ppm − 10⁶) · h // (h + (b − crowned_block))
//
// Credits are summed per hotkey; a hotkey not in the metagraph has its
// credit go to the validator's hotkey. Live discovery claims (b −
// awarded_block < discovery_lifetime_blocks) split discovery_pool_ppm in
// proportion to their bounty units; with no live claim that pool returns
// to the standing pool. Each pool is split by the largest-remainder
// method (allocate), so the two together are exactly 10⁶.
//
// # Decisions where the spec is silent
//
//   - Active targets. Without a catalog and evaluation stack, the arenas
//     are those the standing claims name and an arena's active targets are
//     the targets it has claims for; a second claim for one (arena, target)
//     is refused (ErrDuplicateClaim). A claims document may instead list the
//     registered arenas and their active entries ("arenas"): then every
//     listed arena needs an active entry (ErrNoActiveCrown), every entry
//     exactly one claim (ErrMissingClaim, ErrDuplicateClaim), and a claim
//     for another arena, another target, another target spec or another
//     contribution holds the vector (ErrStaleClaim).
//   - Two pools. The standing and discovery pools are each normalized by
//     largest remainder on their own and then added per hotkey, so a
//     discovery bounty never takes a standing hotkey's rounding unit, and
//     the standing pool is exactly 10⁶ − discovery_pool_ppm.
//   - Departed hotkeys. The rule that a hotkey absent from the metagraph
//     has its credit go to the validator applies to discovery claims too;
//     the validator must itself be in the metagraph (ErrValidatorAbsent),
//     since a vector that pays an unregistered hotkey cannot be set.
//   - Zero shares. A hotkey with positive credit whose share rounds to 0
//     stays in the vector with 0 ppm; hotkeys with zero credit (a claim
//     decayed to 0) are left out.
//   - Integers. Every block, ppm and unit is at most 2⁶³−1. One credit is
//     formed in 128 bits (see StandingClaim.CreditAt); sums and the
//     allocation use math/big, since ten thousand credits below 2⁶³ can
//     exceed 2⁶⁴ and a sum times the pool exceeds it sooner.
//   - Digests. Every digest field is 64 lowercase hex and never the
//     all-zero placeholder; a hotkey is 1 to 256 characters without
//     whitespace, as upstream's.
//
// docs/reference/emissions.md has a worked example and the weight-vector
// file format.
package weights
