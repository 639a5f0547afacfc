// Package ledgercrown builds an integration review from the settlement
// ledger's crown: the crown binding a review record carries, every field
// read back and recomputed from the ledger (settlement/apply.CrownAt),
// and the two qualification attempts the crown settled on as the
// record's primary_attempt and reproduction_attempt evidence.
//
// It sits apart from release/review so that the record's own package,
// which the offline verifier links, never reaches the ledger's SQLite.
// It only reads the ledger: a review never changes the evaluation stack,
// and a crown never writes a release stack (architecture invariant 6).
package ledgercrown

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/cacheon/engine/internal/reject"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/settlement/apply"
	"github.com/cacheon/engine/settlement/ledger"
)

// Binding maps a crown read back from the ledger onto the crown binding
// of a review record and the two attempt evidence documents. Each
// attempt's document is the settlement view the ledger recorded for it:
// the canonical JSON settlement paired, which names the attempt's
// qualification_attempt, qualification_report (its evidence-store
// address) and selection evidence digests. Its SHA-256 is the attempt
// digest the record binds.
func Binding(c *apply.Crowned) (*review.Crown, map[review.Role][]byte, error) {
	for _, a := range []struct {
		role review.Role
		at   ledger.Attempt
	}{{review.RolePrimaryAttempt, c.Primary}, {review.RoleReproductionAttempt, c.Reproduction}} {
		if len(a.at.Settlement) == 0 {
			return nil, nil, reject.Errorf("crown of event %d at %s: the %s (attempt %d) carries no settlement view", c.EventSequence, c.TargetID, a.role, a.at.Seq)
		}
	}
	crown := &review.Crown{
		TargetID:                   c.TargetID,
		TargetSpecDigest:           c.TargetSpecDigest,
		ProposalContributionDigest: c.ProposalContributionDigest,
		SettlementCandidateDigest:  c.SettlementCandidateDigest,
		SettlementEvidenceDigest:   c.SettlementEvidenceDigest,
		CrownEventDigest:           c.CrownEventDigest,
		PrimaryAttemptDigest:       sha256Hex(c.Primary.Settlement),
		ReproductionAttemptDigest:  sha256Hex(c.Reproduction.Settlement),
		SelectedPayloadDigest:      c.SelectedPayloadDigest,
		AttributionDigest:          c.AttributionDigest,
	}
	ev := map[review.Role][]byte{
		review.RolePrimaryAttempt:      append([]byte(nil), c.Primary.Settlement...),
		review.RoleReproductionAttempt: append([]byte(nil), c.Reproduction.Settlement...),
	}
	return crown, ev, nil
}

// Review records the review req describes of the current crown at target
// in l. req.Crown must be unset and req.Evidence must hold the five
// reviewer-supplied roles only: the crown and both attempts come from
// the ledger, so a hand-passed attempt is refused rather than silently
// replaced.
func Review(ctx context.Context, l *ledger.Ledger, target string, req review.Request) (*review.Record, *apply.Crowned, error) {
	if req.Crown != nil {
		return nil, nil, fmt.Errorf("review: a crown was given; with a ledger the crown is the ledger's")
	}
	for _, r := range []review.Role{review.RolePrimaryAttempt, review.RoleReproductionAttempt} {
		if _, ok := req.Evidence[r]; ok {
			return nil, nil, reject.Errorf("evidence %s was given; with a ledger the two qualification attempts are the crown's own", r)
		}
	}
	c, err := apply.CrownAt(ctx, l, target)
	if err != nil {
		return nil, nil, err
	}
	crown, attempts, err := Binding(c)
	if err != nil {
		return nil, nil, err
	}
	ev := make(map[review.Role][]byte, len(req.Evidence)+len(attempts))
	for r, b := range req.Evidence {
		ev[r] = b
	}
	for r, b := range attempts {
		ev[r] = b
	}
	req.Crown, req.Evidence = crown, ev
	rec, err := review.New(req)
	if err != nil {
		return nil, nil, reject.Wrap(err)
	}
	return rec, c, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
