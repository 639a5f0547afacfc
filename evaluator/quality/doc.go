// Package quality is the pristine reference T of a qualification: an
// engine built from the reference stack (no contribution at all) that
// teacher-forces the token trajectories the speed stage's B, C and B′
// engines generated for a secretly selected set of prompts, and a
// familywise decision over what it measured.
//
// The selection is committed before any engine runs (Commit) and revealed
// only after the candidate's processes are gone (Reveal), so no candidate
// can know which of its trajectories will be judged. The reference scores
// each trajectory token by its negative log-likelihood and its own argmax
// (the teacher session, docs/reference/teacher-session.md); Score turns
// the per-token evidence into per-rollout metrics and a decision under a
// calibration measured stock-versus-stock (Calibrate), never under
// thresholds written into the code. Regrade recomputes the decision from
// the retained evidence. docs/reference/quality.md describes all of it.
package quality
