package ledger

import (
	"bytes"
	"context"
	"fmt"
	"math/big"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// Event is one settlement event of the hash chain. Body is the event as
// canonical JSON: an object whose event_type, sequence and
// previous_event_digest fields equal the ones here; what else it holds is
// the settlement rules' business. Digest is H(cacheon.settlement.event,
// body).
type Event struct {
	Sequence            int64  `json:"sequence"`
	EventType           string `json:"event_type"`
	PreviousEventDigest string `json:"previous_event_digest"`
	Body                []byte `json:"-"`
	Digest              string `json:"digest"`
}

// Head is the end of the chain: the last event's sequence and digest
// (0 and "" for an empty chain).
type Head struct {
	Sequence int64  `json:"sequence"`
	Digest   string `json:"digest"`
}

// NextEvent chains a new event after head: it sets fields' event_type,
// sequence and previous_event_digest (which fields must not hold already),
// encodes the body canonically and computes its digest. Chain the events of
// one settlement by passing each returned event's Head to the next call.
func NextEvent(head Head, eventType string, fields map[string]any) (Event, error) {
	return nextEvent(identity.DomainSettlementEvent, head, eventType, fields)
}

// nextEvent chains an event of the chain whose digests are under domain:
// the settlement chain or the intake chain.
func nextEvent(domain identity.Domain, head Head, eventType string, fields map[string]any) (Event, error) {
	if eventType == "" {
		return Event{}, fmt.Errorf("%w: event type is empty", ErrIllegal)
	}
	body := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		switch k {
		case "event_type", "sequence", "previous_event_digest":
			return Event{}, fmt.Errorf("%w: event field %q is the chain's to set", ErrIllegal, k)
		}
		body[k] = v
	}
	body["event_type"] = eventType
	body["sequence"] = head.Sequence + 1
	body["previous_event_digest"] = head.Digest
	data, err := canonjson.Marshal(body)
	if err != nil {
		return Event{}, fmt.Errorf("%w: event %d: %v", ErrIllegal, head.Sequence+1, err)
	}
	return parseEvent(domain, data)
}

// Head returns the event Head of e, for chaining the next one.
func (e Event) Head() Head { return Head{Sequence: e.Sequence, Digest: e.Digest} }

// ParseEvent reads an event from its canonical JSON body: the chain fields
// come from the body and the digest is computed.
func ParseEvent(body []byte) (Event, error) {
	return parseEvent(identity.DomainSettlementEvent, body)
}

func parseEvent(domain identity.Domain, body []byte) (Event, error) {
	v, err := canonjson.Parse(body)
	if err != nil {
		return Event{}, fmt.Errorf("event body: %w", err)
	}
	canon, err := canonjson.Marshal(v)
	if err != nil {
		return Event{}, fmt.Errorf("event body: %w", err)
	}
	if !bytes.Equal(canon, body) {
		return Event{}, fmt.Errorf("event body is not canonical JSON")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Event{}, fmt.Errorf("event body is not a JSON object")
	}
	var e Event
	if e.EventType, ok = obj["event_type"].(string); !ok || e.EventType == "" {
		return Event{}, fmt.Errorf("event body: event_type is not a non-empty string")
	}
	n, ok := obj["sequence"].(*big.Int)
	if !ok || !n.IsInt64() || n.Int64() < 1 {
		return Event{}, fmt.Errorf("event body: sequence is not an integer >= 1")
	}
	e.Sequence = n.Int64()
	if e.PreviousEventDigest, ok = obj["previous_event_digest"].(string); !ok {
		return Event{}, fmt.Errorf("event body: previous_event_digest is not a string")
	}
	if e.PreviousEventDigest != "" && !identity.IsHex64(e.PreviousEventDigest) {
		return Event{}, fmt.Errorf("event body: previous_event_digest %q is not 64 lowercase hex", e.PreviousEventDigest)
	}
	d, err := identity.H(domain, v)
	if err != nil {
		return Event{}, fmt.Errorf("event body: %w", err)
	}
	e.Body, e.Digest = body, d.String()
	return e, nil
}

// checkCanonicalObject checks that data is a JSON object in canonical
// form: what the ledger stores is exactly what was hashed or will be.
func checkCanonicalObject(data []byte) error {
	v, err := canonjson.Parse(data)
	if err != nil {
		return err
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("not a JSON object")
	}
	canon, err := canonjson.Marshal(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(canon, data) {
		return fmt.Errorf("not canonical JSON")
	}
	return nil
}

// checkLink verifies that e follows prev.
func checkLink(prev Head, e Event) error {
	if e.Sequence != prev.Sequence+1 {
		return fmt.Errorf("event %d follows event %d: sequences must be contiguous from 1", e.Sequence, prev.Sequence)
	}
	if e.PreviousEventDigest != prev.Digest {
		return fmt.Errorf("event %d: previous_event_digest %q, the digest of event %d is %q", e.Sequence, e.PreviousEventDigest, prev.Sequence, prev.Digest)
	}
	return nil
}

// A hash chain the ledger keeps: its table and digest domain. Settlement
// events and intake corrections are chained apart, so that a reader of
// settlement (a crown's later events) meets only settlement events.
type chain struct {
	table  string
	domain identity.Domain
	name   string
}

var (
	settlementChain = chain{"settlement_events", identity.DomainSettlementEvent, "settlement chain"}
	intakeChain     = chain{"intake_events", identity.DomainIntakeEvent, "intake chain"}
)

// verifyChainOf reads every event of chain c in sequence order and checks
// the whole chain; it returns its head.
func verifyChainOf(ctx context.Context, q querier, c chain) (Head, error) {
	rows, err := q.QueryContext(ctx, `SELECT sequence, event_type, previous_event_digest, body, digest FROM `+c.table+` ORDER BY sequence`)
	if err != nil {
		return Head{}, classify(err)
	}
	defer rows.Close()
	var head Head
	for rows.Next() {
		var stored Event
		var body string
		if err := rows.Scan(&stored.Sequence, &stored.EventType, &stored.PreviousEventDigest, &body, &stored.Digest); err != nil {
			return Head{}, classify(err)
		}
		if err := verifyStoredIn(c.domain, head, stored, []byte(body)); err != nil {
			return Head{}, fmt.Errorf("%w: %s: %v", ErrRefused, c.name, err)
		}
		head = stored.Head()
	}
	return head, classify(rows.Err())
}

// verifyStored checks one stored row: its body re-derives every column and
// it links to prev.
func verifyStored(prev Head, stored Event, body []byte) error {
	return verifyStoredIn(identity.DomainSettlementEvent, prev, stored, body)
}

func verifyStoredIn(domain identity.Domain, prev Head, stored Event, body []byte) error {
	e, err := parseEvent(domain, body)
	if err != nil {
		return fmt.Errorf("event %d: %v", stored.Sequence, err)
	}
	switch {
	case e.Sequence != stored.Sequence:
		return fmt.Errorf("event %d: body says sequence %d", stored.Sequence, e.Sequence)
	case e.EventType != stored.EventType:
		return fmt.Errorf("event %d: body says event_type %q, column %q", stored.Sequence, e.EventType, stored.EventType)
	case e.PreviousEventDigest != stored.PreviousEventDigest:
		return fmt.Errorf("event %d: body says previous_event_digest %q, column %q", stored.Sequence, e.PreviousEventDigest, stored.PreviousEventDigest)
	case e.Digest != stored.Digest:
		return fmt.Errorf("event %d: digest %s does not match its body (H = %s)", stored.Sequence, stored.Digest, e.Digest)
	}
	return checkLink(prev, e)
}

// Head returns the end of the settlement chain.
func (l *Ledger) Head(ctx context.Context) (Head, error) {
	return head(ctx, l.db)
}

func head(ctx context.Context, q querier) (Head, error) { return headOf(ctx, q, settlementChain) }

func headOf(ctx context.Context, q querier, c chain) (Head, error) {
	var h Head
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(sequence), 0), coalesce((SELECT digest FROM `+c.table+` ORDER BY sequence DESC LIMIT 1), '') FROM `+c.table).Scan(&h.Sequence, &h.Digest)
	return h, classify(err)
}

// Events returns the events with sequence in [from, to] (to 0: to the end).
func (l *Ledger) Events(ctx context.Context, from, to int64) ([]Event, error) {
	return eventsOf(ctx, l.db, settlementChain, from, to)
}

// IntakeEvents returns the intake chain's events with sequence in
// [from, to] (to 0: to the end): the operators' corrections of intake
// verdicts.
func (l *Ledger) IntakeEvents(ctx context.Context, from, to int64) ([]Event, error) {
	return eventsOf(ctx, l.db, intakeChain, from, to)
}

func eventsOf(ctx context.Context, q querier, c chain, from, to int64) ([]Event, error) {
	if to == 0 {
		to = 1<<63 - 1
	}
	rows, err := q.QueryContext(ctx, `SELECT sequence, event_type, previous_event_digest, body, digest FROM `+c.table+` WHERE sequence BETWEEN ? AND ? ORDER BY sequence`, from, to)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var body string
		if err := rows.Scan(&e.Sequence, &e.EventType, &e.PreviousEventDigest, &body, &e.Digest); err != nil {
			return nil, classify(err)
		}
		e.Body = []byte(body)
		out = append(out, e)
	}
	return out, classify(rows.Err())
}
