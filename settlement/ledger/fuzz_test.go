package ledger

import (
	"bytes"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// FuzzParseEvent: whatever ParseEvent accepts is canonical JSON whose
// digest is H(cacheon.settlement.event, body), and parsing it again gives
// the same event.
func FuzzParseEvent(f *testing.F) {
	e, _ := NextEvent(Head{}, "CROWN", map[string]any{"reason": "qualified_win"})
	f.Add(e.Body)
	f.Add([]byte(`{"event_type":"X","previous_event_digest":"","sequence":1}`))
	f.Add([]byte(`{"event_type":"X","previous_event_digest":"","sequence":1.0}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := ParseEvent(body)
		if err != nil {
			return
		}
		v, err := canonjson.Parse(body)
		if err != nil {
			t.Fatalf("accepted a body canonjson refuses: %v", err)
		}
		canon, _ := canonjson.Marshal(v)
		if !bytes.Equal(canon, body) {
			t.Fatalf("accepted a non-canonical body %q", body)
		}
		if d := identity.MustH(identity.DomainSettlementEvent, v); d.String() != e.Digest {
			t.Fatalf("digest %s, H gives %s", e.Digest, d)
		}
		again, err := ParseEvent(e.Body)
		if err != nil || again.Digest != e.Digest || again.Sequence != e.Sequence || again.EventType != e.EventType {
			t.Fatalf("reparse %+v, %v", again, err)
		}
	})
}
