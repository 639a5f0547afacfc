-- Schema 2: what settlement needs to read and record.
--
-- A passing qualification attempt carries its settlement view (the
-- canonical JSON of settle.Qualification), so settlement pairs what the
-- ledger holds rather than what a caller hands it. '' for screens, FAILs
-- and attempts recorded before the evidence existed.
ALTER TABLE attempts ADD COLUMN settlement TEXT NOT NULL DEFAULT '';

-- Every row a settlement decided: the outcome of one qualified proposal
-- under one plan. A CROWN or DISCOVERY_BOUNTY is final; a HOLD moves the
-- proposal to held, and a proposal that requalifies is settled again
-- (a new seq).
CREATE TABLE settlement_outcomes (
    proposal_id      INTEGER NOT NULL REFERENCES proposals (id),
    seq              INTEGER NOT NULL CHECK (seq >= 1),
    plan_digest      TEXT    NOT NULL CHECK (length(plan_digest) = 64),
    candidate_digest TEXT    NOT NULL CHECK (length(candidate_digest) = 64),
    outcome          TEXT    NOT NULL CHECK (outcome IN ('CROWN', 'HOLD', 'DISCOVERY_BOUNTY')),
    reason           TEXT    NOT NULL CHECK (reason <> ''),
    -- The CROWN (or bounty) event the outcome made; NULL for a HOLD.
    event_sequence   INTEGER REFERENCES settlement_events (sequence),
    PRIMARY KEY (proposal_id, seq)
);
