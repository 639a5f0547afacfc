package settle_test

import (
	"fmt"

	"github.com/cacheon/engine/settlement/settle"
)

// ExamplePlan settles five reproduced candidates against one incumbent:
// two for norm.rmsnorm that tie on their conservative speedup, one for
// another slot, a discovery row and one measured over an older stack.
// docs/reference/settlement.md walks through it.
func ExamplePlan() {
	rows := []row{
		{name: "rms-a", target: "norm.rmsnorm", members: []string{"norm.rmsnorm"}, speedup: "1.31", speedup2: "1.2875",
			pos: settle.Position{Block: 120}, prior: dg("entry/rmsnorm")},
		{name: "rms-b", target: "norm.rmsnorm", members: []string{"norm.rmsnorm"}, speedup: "1.2875", speedup2: "1.4",
			pos: settle.Position{Block: 118, EventIndex: 2}, prior: dg("entry/rmsnorm")},
		{name: "silu", target: "act.silu_and_mul", members: []string{"act.silu_and_mul"}, speedup: "1.05",
			pos: settle.Position{Block: 119}},
		{name: "disc", target: "norm.rmsnorm", members: []string{"norm.rmsnorm"}, lane: settle.LaneDiscovery, speedup: "1.5",
			pos: settle.Position{Block: 121}},
		{name: "stale", target: "norm.rmsnorm", members: []string{"norm.rmsnorm"}, staleStack: true, speedup: "1.9",
			pos: settle.Position{Block: 90}},
	}
	names := map[string]string{}
	var candidates []*settle.Candidate
	for _, r := range rows {
		c, err := pairRow(r)
		if err != nil {
			fmt.Println(r.name, err)
			return
		}
		names[c.Digest().String()] = r.name
		candidates = append(candidates, c)
	}
	s, err := settle.Plan(candidates, currentStack, currentTree)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range s.Rows {
		fmt.Printf("%-6s block %d.%d.%d  %-10s %-16s %-9s %s\n", names[r.Candidate], r.Finalized.Block, r.Finalized.EventIndex,
			r.Finalized.SubeventIndex, r.Lane, r.Outcome, r.Speedup, r.Reason)
	}
	for _, e := range s.Events {
		d, _ := e.Digest()
		fmt.Printf("event %d %-16s %-17s subject %s  previous %-12s digest %s\n", e.Sequence, e.Type, e.Reason,
			e.SubjectDigest[:12], short(e.PreviousEventDigest), d.String()[:12])
	}
	c := s.StandingClaim
	fmt.Printf("claim %s %s ppm %d crowned at block %d\n", c.TargetID, c.Hotkey, c.SpeedupPPM, c.CrownedBlock)
	fmt.Printf("next stack %s, plan %s\n", s.NextStack[:12], s.Digest.String()[:12])
	// Output:
	// stale  block 90.0.0  registered HOLD             1.9       stale_incumbent
	// rms-b  block 118.2.0  registered CROWN            1.2875    qualified_win
	// silu   block 119.0.0  registered HOLD             1.05      incumbent_advanced
	// rms-a  block 120.0.0  registered HOLD             1.2875    conflict_lost
	// disc   block 121.0.0  discovery  DISCOVERY_BOUNTY 1.5       qualified_discovery
	// event 1 CROWN            qualified_win     subject 79568722967d  previous ""           digest 91edc02a0be7
	// event 2 RETIREMENT       superseded        subject d9e3b2088182  previous 91edc02a0be7 digest 7fec9f55ed7e
	// event 3 ADOPTION         adopted           subject 79568722967d  previous 7fec9f55ed7e digest 15a81c681b18
	// event 4 STACK_TRANSITION incumbent_updated subject 107aef84d4bb  previous 15a81c681b18 digest d4ec2e2c0363
	// claim norm.rmsnorm 5Hotkey ppm 1287500 crowned at block 118
	// next stack 107aef84d4bb, plan 63413a1a819d
}

func short(d string) string {
	if d == "" {
		return `""`
	}
	return d[:12]
}
