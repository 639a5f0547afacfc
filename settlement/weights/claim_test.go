package weights

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
)

func TestStandingClaimRoundTripAndDigests(t *testing.T) {
	c := crown("silu_and_mul", "alice", 1_234_567, 42)
	b, err := canonjson.Marshal(c.Projection())
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseStandingClaim(b)
	if err != nil {
		t.Fatal(err)
	}
	if back != c {
		t.Fatalf("round trip %+v, want %+v", back, c)
	}
	v, _ := canonjson.Parse(b)
	if d, _ := c.Digest(); d != identity.MustH(identity.DomainStandingClaim, v) {
		t.Fatalf("claim digest %s is not H over its projection", d)
	}
	family, err := c.Family()
	if err != nil {
		t.Fatal(err)
	}
	want := identity.MustH(identity.DomainStandingFamily, map[string]any{"arena_digest": c.Arena.String(), "target_id": c.TargetID, "target_spec_digest": c.TargetSpec.String()})
	if family != want {
		t.Fatalf("family %s, want %s", family, want)
	}
	// Another holder of the same target under the same spec is the same
	// family; a new spec is another.
	other := crown("silu_and_mul", "bob", 1_100_000, 50)
	if f, _ := other.Family(); f != family {
		t.Fatal("another crown of one target and spec is another family")
	}
	other.TargetSpec = dg("new spec")
	if f, _ := other.Family(); f == family {
		t.Fatal("a new target spec is the same family")
	}
}

func TestDiscoveryClaimRoundTripAndDigest(t *testing.T) {
	d := bounty("p", "carol", 250_000, 77)
	b, err := canonjson.Marshal(d.Projection())
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDiscoveryClaim(b)
	if err != nil {
		t.Fatal(err)
	}
	if back != d {
		t.Fatalf("round trip %+v, want %+v", back, d)
	}
	v, _ := canonjson.Parse(b)
	if got, _ := d.Digest(); got != identity.MustH(identity.DomainDiscoveryClaim, v) {
		t.Fatalf("discovery digest %s is not H over its projection", got)
	}
}

func TestDiscoveryLiveAt(t *testing.T) {
	d := bounty("p", "carol", 1, 100)
	for _, tt := range []struct {
		block uint64
		live  bool
	}{{100, true}, {149, true}, {150, false}, {10_000, false}} {
		live, err := d.LiveAt(testPolicy, tt.block)
		if err != nil || live != tt.live {
			t.Errorf("block %d: live %v (%v), want %v", tt.block, live, err, tt.live)
		}
	}
	if _, err := d.LiveAt(testPolicy, 99); !errors.Is(err, ErrDiscoveryNewerThanBlock) {
		t.Errorf("a claim awarded after the block: %v", err)
	}
}

func TestParseClaims(t *testing.T) {
	c := Claims{
		Standing:  []StandingClaim{crown("t1", "alice", 1_200_000, 1), crown("t2", "bob", 1_300_000, 2)},
		Discovery: []DiscoveryClaim{bounty("p", "carol", 3, 4)},
	}
	for _, withArenas := range []bool{false, true} {
		if withArenas {
			c.Arenas = &Arenas{List: []Arena{{Arena: c.Standing[0].Arena, Targets: []ActiveTarget{{TargetID: "t1", TargetSpec: c.Standing[0].TargetSpec, Contribution: c.Standing[0].Contribution}}}}}
		}
		b, err := canonjson.Marshal(c.Projection())
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseClaims(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip %+v, want %+v", back, c)
		}
	}
	empty, err := ParseClaims([]byte(`{"standing": [], "discovery": []}`))
	if err != nil || empty.Arenas != nil || len(empty.Standing) != 0 {
		t.Fatalf("an empty document: %+v, %v", empty, err)
	}
}

func TestParseClaimsRefusals(t *testing.T) {
	good, _ := canonjson.Marshal(Claims{Standing: []StandingClaim{crown("t1", "alice", 1_200_000, 1)}, Discovery: []DiscoveryClaim{bounty("p", "carol", 3, 4)}}.Projection())
	edit := func(old, new string) string {
		if !strings.Contains(string(good), old) {
			t.Fatalf("the document has no %s", old)
		}
		return strings.Replace(string(good), old, new, 1)
	}
	arena := crown("t1", "alice", 1, 1).Arena.String()
	tests := []struct {
		name, doc, where string
	}{
		{"standing missing", `{"discovery": []}`, "standing"},
		{"discovery missing", `{"standing": []}`, "discovery"},
		{"standing not an array", `{"standing": {}, "discovery": []}`, "standing"},
		{"an unknown top-level field", `{"standing": [], "discovery": [], "weights": []}`, "weights"},
		{"speedup of exactly 1", edit(`"speedup_ppm":1200000`, `"speedup_ppm":1000000`), "standing[0].speedup_ppm"},
		{"negative crown block", edit(`"crowned_block":1`, `"crowned_block":-1`), "standing[0].crowned_block"},
		{"a hotkey with a space", edit(`"hotkey":"alice"`, `"hotkey":"al ice"`), "standing[0].hotkey"},
		{"an empty hotkey", edit(`"hotkey":"alice"`, `"hotkey":""`), "standing[0].hotkey"},
		{"a hotkey too long", edit(`"hotkey":"alice"`, `"hotkey":"`+strings.Repeat("k", 257)+`"`), "standing[0].hotkey"},
		{"an empty target", edit(`"target_id":"t1"`, `"target_id":""`), "standing[0].target_id"},
		{"an uppercase digest", edit(arena, strings.ToUpper(arena)), "standing[0].arena_digest"},
		{"the zero digest", edit(arena, strings.Repeat("0", 64)), "standing[0].arena_digest"},
		{"a prefixed digest", edit(`"`+arena, `"sha256:`+arena), "standing[0].arena_digest"},
		{"an unknown claim field", edit(`"target_id":"t1"`, `"target_id":"t1","stall":1`), "standing[0].stall"},
		{"a missing claim field", edit(`"target_id":"t1",`, ``), "standing[0].target_id"},
		{"zero bounty units", edit(`"bounty_units":3`, `"bounty_units":0`), "discovery[0].bounty_units"},
		{"a float block", edit(`"awarded_block":4`, `"awarded_block":4.5`), "(document)"},
		{"an arena without targets field", `{"standing": [], "discovery": [], "arenas": [{"arena_digest": "` + arena + `"}]}`, "arenas[0].targets"},
		{"an arena twice", `{"standing": [], "discovery": [], "arenas": [{"arena_digest": "` + arena + `", "targets": []}, {"arena_digest": "` + arena + `", "targets": []}]}`, "arenas[1].arena_digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseClaims([]byte(tt.doc))
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrClaim) || !reject.Is(err) {
				t.Fatalf("err %v, want a claim FieldError", err)
			}
			if fe.Where != tt.where {
				t.Fatalf("err names %q, want %q: %v", fe.Where, tt.where, err)
			}
		})
	}
}

func TestParseMetagraph(t *testing.T) {
	m, err := ParseMetagraph([]byte(`["bob", "alice", "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"]`))
	if err != nil || len(m) != 3 {
		t.Fatalf("%v, %v", m, err)
	}
	for _, tt := range []struct{ doc, where string }{
		{`[]`, "metagraph"},
		{`{}`, "metagraph"},
		{`["a", "a"]`, "metagraph[1]"},
		{`["a", 1]`, "metagraph[1]"},
		{`["a", "b\u001fc"]`, "metagraph[1]"},
	} {
		_, err := ParseMetagraph([]byte(tt.doc))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Where != tt.where || !reject.Is(err) {
			t.Errorf("%s: err %v, want a refusal at %s", tt.doc, err, tt.where)
		}
	}
}
