// Package speed grades the speed reads of one qualification: the resident
// speed policies v7 (hot-swappable candidates: B, C, and B′ only when the
// two-leg limits are inconclusive) and v8 (non-swappable candidates: B, C
// and B′ always, one concluding grade over all three).
//
// Grading is a pure function of a Policy and the raw reads, so anyone can
// re-grade a decision from retained evidence with no GPU: the controller's
// live verdict and `cacheon speed grade` run the same code. The arithmetic
// follows the upstream definitions (spec §5.2): a read's scored rate is the
// median of its per-window token rates; the relative spread of two rates
// is (max−min)/mean and of three or more the population standard deviation
// over the mean; means and standard deviations are computed exactly and
// rounded once, as Python's statistics module does, so a decision on the
// edge of a limit is the same on every machine.
//
// Evidence of the wrong shape for its version (a clear v7 decision that
// carries a B′, an inconclusive one without, a v8 set without its three
// reads, a read with too few windows) is rejected with ErrEvidence and a
// named reason; it is never graded into a verdict.
package speed
