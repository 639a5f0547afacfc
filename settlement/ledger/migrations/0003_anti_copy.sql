-- Schema 3: anti-copy at intake.
--
-- The proposal's anti-copy fingerprint (kernels/fingerprint.Encode: the
-- canonical JSON of its three identities over the selected delta), as
-- intake derived it from the bytes it published. A later proposal is
-- compared with what is stored here, never with bytes read again. '' for
-- proposals taken in before schema 3 and for bundles refused before
-- publication: neither takes part in the comparison.
ALTER TABLE proposals ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';

-- The intake hash chain: an operator's corrections of intake verdicts,
-- chained like the settlement events but apart from them (domain
-- cacheon.intake.event), so settlement readers meet only settlement
-- events.
CREATE TABLE intake_events (
    sequence              INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type            TEXT    NOT NULL CHECK (event_type <> ''),
    previous_event_digest TEXT    NOT NULL CHECK (previous_event_digest = '' OR length(previous_event_digest) = 64),
    body                  TEXT    NOT NULL,
    digest                TEXT    NOT NULL UNIQUE CHECK (length(digest) = 64)
);

-- Every copy verdict of intake: the proposal refused, what it copies (an
-- earlier proposal, or a seed contribution of the project by name), the
-- rule that matched and the comparison's account. cleared_event is the
-- intake event that cleared a wrong verdict (NULL while it stands).
CREATE TABLE copy_verdicts (
    proposal_id   INTEGER PRIMARY KEY REFERENCES proposals (id),
    copy_of       INTEGER REFERENCES proposals (id),
    seed          TEXT    NOT NULL,
    rule          TEXT    NOT NULL CHECK (rule IN ('payload', 'normalized_delta', 'containment')),
    detail        TEXT    NOT NULL CHECK (detail <> ''),
    cleared_event INTEGER UNIQUE REFERENCES intake_events (sequence),
    CHECK ((copy_of IS NULL) <> (seed = ''))
);
CREATE INDEX proposals_by_namespace ON proposals (arena_digest, target_id);
