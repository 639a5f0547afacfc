-- Schema 6: verified checkpoints.
--
-- A checkpoint is a record of the row record chain (event_type
-- checkpoint), written only after a full check found nothing wrong. Its
-- body rebinds every row a decision reads (the live rows) and names the
-- heads of the settlement, intake and lease chains at that moment, so an
-- open verifies each chain from there and a quick check compares the live
-- rows against records from there on. This table only indexes those
-- records: a row naming a record that is not a checkpoint is refused, and
-- a deleted row only makes the next open verify more.
CREATE TABLE checkpoints (
    record_sequence INTEGER PRIMARY KEY REFERENCES row_records (sequence)
);
