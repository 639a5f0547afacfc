-- Schema 4: the row record chain.
--
-- Every row that decides a payout (proposals' identity columns, attempts
-- with their settlement views, evaluation stacks with their HCL and
-- current flag, crowns, standing and discovery claims, settlement
-- outcomes) is written together with a record of its exact bytes, and the
-- records are chained like the settlement events (domain
-- cacheon.ledger.record). `ledger check` folds the chain and refuses a
-- ledger whose rows are not exactly what the chain says. The settlement
-- events keep upstream's body shape, so the rows are bound by this chain
-- rather than by new event fields. Upgrading from schema 3 binds the rows
-- found then in one schema_upgrade record.
CREATE TABLE row_records (
    sequence               INTEGER PRIMARY KEY CHECK (sequence >= 1),
    event_type             TEXT    NOT NULL CHECK (event_type <> ''),
    previous_event_digest  TEXT    NOT NULL CHECK (previous_event_digest = '' OR length(previous_event_digest) = 64),
    body                   TEXT    NOT NULL,
    digest                 TEXT    NOT NULL UNIQUE CHECK (length(digest) = 64)
);
