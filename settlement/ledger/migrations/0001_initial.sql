-- Schema 1 of the settlement ledger. Every rule the database itself can
-- hold is written here as a constraint, so a bug in the Go code cannot store
-- a row the ledger would later refuse to read.

-- One row per finalized reveal (or its stand-in, `cacheon intake add`): the
-- reservation of a finalized position and everything intake derived from
-- the published bytes.
CREATE TABLE proposals (
    id                      INTEGER PRIMARY KEY,
    arena_digest            TEXT    NOT NULL CHECK (arena_digest = '' OR length(arena_digest) = 64),
    content_hash            TEXT    NOT NULL CHECK (length(content_hash) = 64),
    committed_content_hash  TEXT    NOT NULL CHECK (length(committed_content_hash) = 64),
    hotkey                  TEXT    NOT NULL CHECK (hotkey <> ''),
    block                   INTEGER NOT NULL CHECK (block > 0),
    event_index             INTEGER NOT NULL CHECK (event_index >= 0),
    subevent_index          INTEGER NOT NULL CHECK (subevent_index >= 0),
    target_id               TEXT    NOT NULL,
    target_spec_digest      TEXT    NOT NULL CHECK (target_spec_digest = '' OR length(target_spec_digest) = 64),
    selected_payload_digest TEXT    NOT NULL CHECK (selected_payload_digest = '' OR length(selected_payload_digest) = 64),
    selected_delta_digest   TEXT    NOT NULL CHECK (selected_delta_digest = '' OR length(selected_delta_digest) = 64),
    published               INTEGER NOT NULL CHECK (published IN (0, 1)),
    status                  TEXT    NOT NULL,
    reason                  TEXT    NOT NULL,
    replay_of               INTEGER REFERENCES proposals (id),
    UNIQUE (block, event_index, subevent_index)
);
CREATE INDEX proposals_by_bytes ON proposals (arena_digest, content_hash);

-- Every status change of a proposal, in order; the last one's to_status is
-- the proposal's status.
CREATE TABLE proposal_transitions (
    proposal_id INTEGER NOT NULL REFERENCES proposals (id),
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    from_status TEXT    NOT NULL,
    to_status   TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    PRIMARY KEY (proposal_id, seq)
);

-- Screens and qualifications run on a proposal, with where their evidence
-- lives.
CREATE TABLE attempts (
    proposal_id      INTEGER NOT NULL REFERENCES proposals (id),
    seq              INTEGER NOT NULL CHECK (seq >= 1),
    stage            TEXT    NOT NULL CHECK (stage IN ('screen', 'qualification')),
    report_digest    TEXT    NOT NULL CHECK (length(report_digest) = 64),
    evidence_address TEXT    NOT NULL CHECK (length(evidence_address) = 64),
    decision         TEXT    NOT NULL CHECK (decision IN ('PASS', 'FAIL', 'NO_DECISION')),
    reason           TEXT    NOT NULL,
    PRIMARY KEY (proposal_id, seq)
);

-- The settlement hash chain. body is the canonical JSON the digest is
-- computed over; the three chain columns repeat fields of the body so they
-- can be indexed, and the ledger checks that they agree.
CREATE TABLE settlement_events (
    sequence              INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type            TEXT    NOT NULL CHECK (event_type <> ''),
    previous_event_digest TEXT    NOT NULL CHECK (previous_event_digest = '' OR length(previous_event_digest) = 64),
    body                  TEXT    NOT NULL,
    digest                TEXT    NOT NULL UNIQUE CHECK (length(digest) = 64)
);

-- The history of evaluation stacks. current is 1 on exactly one row once a
-- stack exists (NULL elsewhere, so UNIQUE admits one current at most).
CREATE TABLE evaluation_stacks (
    id             INTEGER PRIMARY KEY,
    stack_digest   TEXT    NOT NULL CHECK (length(stack_digest) = 64),
    tree_digest    TEXT    NOT NULL CHECK (length(tree_digest) = 64),
    hcl            TEXT    NOT NULL,
    event_sequence INTEGER REFERENCES settlement_events (sequence),
    current        INTEGER UNIQUE CHECK (current IS NULL OR current = 1)
);

-- Every crown, as settled.
CREATE TABLE crowns (
    event_sequence      INTEGER PRIMARY KEY REFERENCES settlement_events (sequence),
    arena_digest        TEXT    NOT NULL CHECK (length(arena_digest) = 64),
    target_id           TEXT    NOT NULL CHECK (target_id <> ''),
    contribution_digest TEXT    NOT NULL CHECK (length(contribution_digest) = 64),
    proposal_id         INTEGER REFERENCES proposals (id),
    hotkey              TEXT    NOT NULL CHECK (hotkey <> ''),
    speedup             TEXT    NOT NULL CHECK (speedup <> '')
);

-- The standing claim of each (arena, target): replaced by every new crown.
CREATE TABLE standing_claims (
    arena_digest        TEXT    NOT NULL CHECK (length(arena_digest) = 64),
    target_id           TEXT    NOT NULL CHECK (target_id <> ''),
    target_spec_digest  TEXT    NOT NULL CHECK (length(target_spec_digest) = 64),
    contribution_digest TEXT    NOT NULL CHECK (length(contribution_digest) = 64),
    hotkey              TEXT    NOT NULL CHECK (hotkey <> ''),
    speedup_ppm         INTEGER NOT NULL CHECK (speedup_ppm > 1000000),
    crowned_block       INTEGER NOT NULL CHECK (crowned_block > 0),
    evidence_digest     TEXT    NOT NULL CHECK (length(evidence_digest) = 64),
    event_sequence      INTEGER NOT NULL REFERENCES settlement_events (sequence),
    PRIMARY KEY (arena_digest, target_id)
);

-- Discovery bounties: one per award, never replaced.
CREATE TABLE discovery_claims (
    event_sequence      INTEGER PRIMARY KEY REFERENCES settlement_events (sequence),
    arena_digest        TEXT    NOT NULL CHECK (length(arena_digest) = 64),
    contribution_digest TEXT    NOT NULL CHECK (length(contribution_digest) = 64),
    hotkey              TEXT    NOT NULL CHECK (hotkey <> ''),
    speedup_ppm         INTEGER NOT NULL CHECK (speedup_ppm > 1000000),
    awarded_block       INTEGER NOT NULL CHECK (awarded_block > 0),
    evidence_digest     TEXT    NOT NULL CHECK (length(evidence_digest) = 64)
);
