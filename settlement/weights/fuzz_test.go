package weights

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/reject"
)

// FuzzParsers feeds one arbitrary document to every parser of the
// package. Each may refuse, with its own class and as a rejection, but
// none may panic; what one accepts must be valid, must write back to a
// projection that parses to the same value, and must project without a
// panic.
func FuzzParsers(f *testing.F) {
	claims, _ := canonjson.Marshal(Claims{
		Standing:  []StandingClaim{crown("t1", "alice", 1_200_000, 1000), crownIn("a2", "t1", "bob", MaxInt, 0)},
		Discovery: []DiscoveryClaim{bounty("p", "carol", 3, 1050)},
		Arenas:    &Arenas{List: []Arena{{Arena: dg("arena a1"), Targets: []ActiveTarget{{TargetID: "t1", TargetSpec: dg("spec t1"), Contribution: dg("contribution a1 t1 alice")}}}}},
	}.Projection())
	f.Add(claims)
	f.Add([]byte(goodPolicy))
	f.Add([]byte(`["alice", "bob", "validator"]`))
	f.Add([]byte(`{"standing": [], "discovery": [], "arenas": []}`))
	f.Add([]byte(`{"standing": [{"speedup_ppm": 9223372036854775808}], "discovery": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		refused := func(err error, class error) bool {
			if err == nil {
				return false
			}
			if !errors.Is(err, class) || !reject.Is(err) {
				t.Fatalf("refusal outside its class %v: %v", class, err)
			}
			return true
		}
		policy, err := ParsePolicy(data)
		if !refused(err, ErrPolicy) {
			if err := policy.Validate(); err != nil {
				t.Fatalf("parsed an invalid policy: %v", err)
			}
			b, err := canonjson.Marshal(policy.Projection())
			if err != nil {
				t.Fatal(err)
			}
			if back, err := ParsePolicy(b); err != nil || back != policy {
				t.Fatalf("policy round trip: %+v, %v", back, err)
			}
		} else {
			policy = testPolicy
		}
		members, err := ParseMetagraph(data)
		if !refused(err, ErrClaim) {
			b, _ := canonjson.Marshal(members)
			if back, err := ParseMetagraph(b); err != nil || !reflect.DeepEqual(back, members) {
				t.Fatalf("metagraph round trip: %v, %v", back, err)
			}
		}
		c, err := ParseClaims(data)
		if refused(err, ErrClaim) {
			return
		}
		b, err := canonjson.Marshal(c.Projection())
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseClaims(b)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("claims round trip: %+v, %v", back, err)
		}
		var hotkeys []string
		seen := map[string]bool{"validator": true}
		for _, s := range c.Standing {
			if !seen[s.Hotkey] {
				seen[s.Hotkey] = true
				hotkeys = append(hotkeys, s.Hotkey)
			}
		}
		p, err := Project(Input{Policy: policy, Standing: c.Standing, Discovery: c.Discovery, Arenas: c.Arenas, Block: 1100, Metagraph: append(hotkeys, "validator"), Validator: "validator"})
		if err != nil {
			if !reject.Is(err) {
				t.Fatalf("projection error is not a rejection: %v", err)
			}
			return
		}
		if got := sumPPM(t, p); got != WeightPPM {
			t.Fatalf("weights sum to %d", got)
		}
	})
}
