-- Schema 5: evaluation leases.
--
-- A run that moves a proposal into flight takes a lease on it: who holds
-- it (host, pid, work directory), until when, and which attempt it is.
-- The lease's life (taken, released, reclaimed with an attempt count and
-- a back-off) is a hash chain of its own (domain cacheon.ledger.lease),
-- shaped like the settlement events, so a lease is as tamper-evident as
-- the rest. proposal_id repeats the body's field only to index the chain
-- by proposal; Open and Check verify that the two agree.
CREATE TABLE lease_events (
    sequence              INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type            TEXT    NOT NULL CHECK (event_type <> ''),
    previous_event_digest TEXT    NOT NULL CHECK (previous_event_digest = '' OR length(previous_event_digest) = 64),
    body                  TEXT    NOT NULL,
    digest                TEXT    NOT NULL UNIQUE CHECK (length(digest) = 64),
    proposal_id           INTEGER NOT NULL REFERENCES proposals (id)
);
CREATE INDEX lease_events_by_proposal ON lease_events (proposal_id, sequence);
