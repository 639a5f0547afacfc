// Package ledger is the validator's settlement ledger: one SQLite file that
// records every intake proposal and its status, the screens and
// qualifications run on it, the settlement events as a hash chain, crowns
// and claims, and the history of evaluation stacks with exactly one current.
//
// One writer. Open takes an exclusive flock(2) on the file DB+".lock" (held
// until Close, released by the kernel when the process dies) and fails at
// once with ErrLocked naming the holder's pid when another writer holds it.
// Inside, the database is in WAL mode with foreign keys on, every write
// transaction is BEGIN IMMEDIATE and busy_timeout is 0, so a connection that
// bypassed the flock (another tool on the same file) makes a write fail at
// once instead of waiting or interleaving.
//
// A settlement is committed in one transaction (Commit): its events, the new
// current evaluation stack and the claims land together or not at all, and
// on any failure the old stack stays current. The settlement rules live
// elsewhere (package settlement/settle defines the typed event); the ledger
// keeps each event body as the canonical JSON its digest
// H(cacheon.settlement.event, body) is computed over, and checks the chain
// on every Open and Check (from the latest checkpoint, see below): sequences contiguous from 1, each body canonical,
// its event_type, sequence and previous_event_digest equal to the columns,
// each previous_event_digest the digest of the event before ("" for the
// first), and every digest recomputed.
//
// The schema is versioned by the numbered files in migrations/, applied in
// order, each in its own transaction, and recorded (with the file's SHA-256)
// in schema_version. A ledger written by a newer build, or one whose recorded
// migration differs from this build's file, is refused with the reason.
//
// Intake bytes are published once, content-addressed and read-only, in the
// directory DB+".publications" beside the file (see Publications): a crown's
// bytes come from there, never from the path a miner's bundle was read from.
//
// Anti-copy runs at intake (schema 3): a proposal's fingerprint
// (kernels/fingerprint) is stored with it and compared with the seed
// contributions the caller names and with every earlier proposal of
// another hotkey at the same arena and target; a copy is failed at its
// position with a durable copy verdict naming what it copies. ClearCopy
// corrects a wrong verdict before settlement, chaining the correction in
// a second hash chain, the intake chain (H(cacheon.intake.event, body)),
// kept apart from the settlement events.
//
// Evaluation holds a lease on a proposal while it is in flight (schema
// 5, lease.go): taken, released and reclaimed as events of a third chain,
// the lease chain (H(cacheon.ledger.lease, body)); a reclaimed attempt
// returns the proposal to the queue with a back-off, or ends it
// no_decision after LeasePolicy.MaxAttempts.
//
// Open and Check verify from the latest checkpoint (schema 6,
// checkpoint.go), a row record that rebinds every live row and names the
// other chains' heads, written only after CheckFull found nothing wrong;
// CheckFull still replays everything. A writer runs CheckBeforeWrite
// before it writes, which records a checkpoint itself once
// AutoCheckpointRecords chain records stand since the latest, so the
// history an open verifies stays short without an operator's full check;
// ClearCopy, which rebinds rows no quick check reads, runs the full check
// and records a checkpoint before every clearing.
//
// Every proposal transition is bound by the row record chain (schema 7),
// so a proposal's status, checked against its last transition, cannot be
// edited together with that transition unnoticed.
package ledger
