package weights

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/cacheon/engine/internal/identity"
)

// Input is everything one projection reads.
type Input struct {
	Policy    Policy
	Standing  []StandingClaim
	Discovery []DiscoveryClaim
	// Arenas is the authority the standing claims are checked against;
	// nil derives it from the claims (see Claims.Arenas).
	Arenas *Arenas
	// Block is the block the vector is projected at.
	Block uint64
	// Metagraph is the set of hotkeys registered at Block, in any order.
	Metagraph []string
	// Validator is the hotkey of the validator projecting: it receives
	// the credit of claim holders no longer in the metagraph, and must be
	// in it.
	Validator string
}

// Projection is one complete weight vector and how it was reached.
type Projection struct {
	PolicyDigest identity.Digest
	Block        uint64
	// StandingPoolPPM and DiscoveryPoolPPM split WeightPPM: the discovery
	// pool is the policy's when a discovery claim is live, else 0.
	StandingPoolPPM  uint64
	DiscoveryPoolPPM uint64
	// Standing is every standing claim's credit, sorted by arena and
	// target; Discovery every live discovery claim's, sorted by claim
	// digest; Expired the digests of discovery claims past their lifetime.
	Standing  []FamilyCredit
	Discovery []DiscoveryCredit
	Expired   []identity.Digest
	// Weights is the vector, sorted by hotkey: every hotkey holding
	// positive credit in a pool, each with its ppm (possibly 0, when its
	// share rounds away), summing to exactly WeightPPM.
	Weights []Weight
}

// FamilyCredit is one standing claim's credit at the projection block.
type FamilyCredit struct {
	Arena    identity.Digest
	TargetID string
	Family   identity.Digest
	Claim    identity.Digest
	Hotkey   string // the claim's holder
	// Recipient is who the credit goes to: Hotkey, or the validator when
	// Hotkey is not in the metagraph.
	Recipient string
	Credit    uint64
}

// DiscoveryCredit is one live discovery claim's share of the discovery
// pool, in bounty units.
type DiscoveryCredit struct {
	Claim     identity.Digest
	Hotkey    string
	Recipient string
	Units     uint64
}

// Weight is one hotkey's share of the vector, in parts per million.
type Weight struct {
	Hotkey string
	PPM    uint64
}

// Project computes the weight vector of spec §6.3 (emissions V1). It
// returns one complete vector summing to exactly WeightPPM, or an error
// and no vector: a stale, missing or duplicated claim holds the whole
// vector rather than paying the others a re-sliced share.
//
// The result depends on the claims and the metagraph as sets: their order
// in the input does not matter.
func Project(in Input) (Projection, error) {
	digest, err := in.Policy.Digest()
	if err != nil {
		return Projection{}, err
	}
	if in.Block > MaxInt {
		return Projection{}, &FieldError{Class: ErrClaim, Where: "block", Reason: fmt.Sprintf("%d is above %d", in.Block, uint64(MaxInt))}
	}
	if err := checkMetagraph(in.Metagraph); err != nil {
		return Projection{}, err
	}
	if err := checkHotkey(in.Validator); err != nil {
		return Projection{}, &FieldError{Class: ErrClaim, Where: "validator", Reason: err.Error()}
	}
	eligible := make(map[string]bool, len(in.Metagraph))
	for _, h := range in.Metagraph {
		eligible[h] = true
	}
	if !eligible[in.Validator] {
		return Projection{}, fmt.Errorf("%w: %q", ErrValidatorAbsent, in.Validator)
	}
	recipient := func(h string) string {
		if eligible[h] {
			return h
		}
		return in.Validator
	}

	standing, err := activeClaims(in.Standing, in.Arenas)
	if err != nil {
		return Projection{}, err
	}
	out := Projection{PolicyDigest: digest, Block: in.Block}
	// Sums of credits are big integers: one credit is below 2⁶³, but ten
	// thousand of them are not, and the allocation multiplies a sum by
	// the pool.
	standingCredit := map[string]*big.Int{}
	total := new(big.Int)
	for _, c := range standing {
		cr, err := c.creditAt(in.Policy, in.Block)
		if err != nil {
			return Projection{}, err
		}
		family, err := c.family()
		if err != nil {
			return Projection{}, err
		}
		claim, err := c.digest()
		if err != nil {
			return Projection{}, err
		}
		to := recipient(c.Hotkey)
		out.Standing = append(out.Standing, FamilyCredit{Arena: c.Arena, TargetID: c.TargetID, Family: family, Claim: claim, Hotkey: c.Hotkey, Recipient: to, Credit: cr})
		addTo(standingCredit, to, cr)
		total.Add(total, new(big.Int).SetUint64(cr))
	}
	if total.Sign() == 0 {
		return Projection{}, fmt.Errorf("%w at block %d (%d standing claims)", ErrCreditDecayed, in.Block, len(standing))
	}

	discovery, err := discoveryCredits(in)
	if err != nil {
		return Projection{}, err
	}
	discoveryUnits := map[string]*big.Int{}
	for _, d := range discovery.live {
		addTo(discoveryUnits, d.Recipient, d.Units)
	}
	out.Discovery, out.Expired = discovery.live, discovery.expired
	if len(out.Discovery) > 0 {
		if in.Policy.DiscoveryPoolPPM == 0 {
			return Projection{}, fmt.Errorf("%w: %d live claims at block %d", ErrDiscoveryDisabled, len(out.Discovery), in.Block)
		}
		out.DiscoveryPoolPPM = in.Policy.DiscoveryPoolPPM
	}
	out.StandingPoolPPM = WeightPPM - out.DiscoveryPoolPPM

	ppm := allocate(standingCredit, out.StandingPoolPPM)
	if out.DiscoveryPoolPPM > 0 {
		for h, v := range allocate(discoveryUnits, out.DiscoveryPoolPPM) {
			ppm[h] += v
		}
	}
	out.Weights = make([]Weight, 0, len(ppm))
	for h, v := range ppm {
		out.Weights = append(out.Weights, Weight{Hotkey: h, PPM: v})
	}
	sort.Slice(out.Weights, func(i, j int) bool { return out.Weights[i].Hotkey < out.Weights[j].Hotkey })
	return out, nil
}

func addTo(m map[string]*big.Int, h string, v uint64) {
	s, ok := m[h]
	if !ok {
		s = new(big.Int)
		m[h] = s
	}
	s.Add(s, new(big.Int).SetUint64(v))
}

// activeClaims checks the standing claims against the arenas and returns
// them sorted by (arena, target): exactly one claim per active target of
// every arena, and every arena with at least one active crown.
func activeClaims(claims []StandingClaim, arenas *Arenas) ([]StandingClaim, error) {
	type key struct {
		arena  identity.Digest
		target string
	}
	byTarget := make(map[key]StandingClaim, len(claims))
	for i, c := range claims {
		if err := c.Validate(fmt.Sprintf("standing[%d]", i)); err != nil {
			return nil, err
		}
		k := key{c.Arena, c.TargetID}
		if _, dup := byTarget[k]; dup {
			return nil, fmt.Errorf("%w: target %q of arena %s", ErrDuplicateClaim, c.TargetID, c.Arena)
		}
		byTarget[k] = c
	}
	sorted := make([]StandingClaim, 0, len(claims))
	for _, c := range byTarget {
		sorted = append(sorted, c)
	}
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Arena != b.Arena {
			return a.Arena.Hex < b.Arena.Hex
		}
		return a.TargetID < b.TargetID
	})
	if arenas == nil {
		// Without an arena list every claim is its target's active crown,
		// so the only arena without one is the one with no claim at all.
		if len(sorted) == 0 {
			return nil, fmt.Errorf("%w: there is no standing claim", ErrNoActiveCrown)
		}
		return sorted, nil
	}
	if err := arenas.Validate(); err != nil {
		return nil, err
	}
	if len(arenas.List) == 0 {
		return nil, fmt.Errorf("%w: the arena list is empty", ErrNoActiveCrown)
	}
	active := map[key]ActiveTarget{}
	registered := map[identity.Digest]bool{}
	for _, a := range arenas.List {
		registered[a.Arena] = true
		if len(a.Targets) == 0 {
			return nil, fmt.Errorf("%w: arena %s", ErrNoActiveCrown, a.Arena)
		}
		for _, t := range a.Targets {
			active[key{a.Arena, t.TargetID}] = t
		}
	}
	for _, c := range sorted {
		t, ok := active[key{c.Arena, c.TargetID}]
		switch {
		case !registered[c.Arena]:
			return nil, fmt.Errorf("%w: %s: the arena is not registered", ErrStaleClaim, c.name())
		case !ok:
			return nil, fmt.Errorf("%w: %s: the target is not active in its arena", ErrStaleClaim, c.name())
		case c.TargetSpec != t.TargetSpec:
			return nil, fmt.Errorf("%w: %s: target spec %s, the arena's active entry has %s", ErrStaleClaim, c.name(), c.TargetSpec, t.TargetSpec)
		case c.Contribution != t.Contribution:
			return nil, fmt.Errorf("%w: %s: contribution %s, the arena's active entry has %s", ErrStaleClaim, c.name(), c.Contribution, t.Contribution)
		}
	}
	// Every claim matched an active entry and no two share one, so a
	// count below the entries' means an entry without a claim.
	if len(sorted) != len(active) {
		for _, a := range sortedArenas(arenas.List) {
			for _, t := range sortedTargets(a.Targets) {
				if _, ok := byTarget[key{a.Arena, t.TargetID}]; !ok {
					return nil, fmt.Errorf("%w: target %q of arena %s", ErrMissingClaim, t.TargetID, a.Arena)
				}
			}
		}
	}
	return sorted, nil
}

func sortedArenas(list []Arena) []Arena {
	s := append([]Arena(nil), list...)
	sort.Slice(s, func(i, j int) bool { return s[i].Arena.Hex < s[j].Arena.Hex })
	return s
}

func sortedTargets(list []ActiveTarget) []ActiveTarget {
	s := append([]ActiveTarget(nil), list...)
	sort.Slice(s, func(i, j int) bool { return s[i].TargetID < s[j].TargetID })
	return s
}

type discoveryResult struct {
	live    []DiscoveryCredit
	expired []identity.Digest
}

// discoveryCredits validates the discovery claims, refuses renewed ones,
// and splits them into live and expired at the projection block, each
// sorted by claim digest.
func discoveryCredits(in Input) (discoveryResult, error) {
	type row struct {
		claim  DiscoveryClaim
		digest identity.Digest
	}
	rows := make([]row, 0, len(in.Discovery))
	proposals := map[identity.Digest]bool{}
	evidence := map[identity.Digest]bool{}
	digests := map[identity.Digest]bool{}
	for i, d := range in.Discovery {
		if err := d.Validate(fmt.Sprintf("discovery[%d]", i)); err != nil {
			return discoveryResult{}, err
		}
		digest, err := d.digest()
		if err != nil {
			return discoveryResult{}, err
		}
		switch {
		case digests[digest]:
			return discoveryResult{}, fmt.Errorf("%w: claim %s appears twice", ErrDuplicateDiscovery, digest)
		case proposals[d.Proposal]:
			return discoveryResult{}, fmt.Errorf("%w: proposal %s has two claims", ErrDuplicateDiscovery, d.Proposal)
		case evidence[d.RetainedEvidence]:
			return discoveryResult{}, fmt.Errorf("%w: retained evidence %s backs two claims", ErrDuplicateDiscovery, d.RetainedEvidence)
		}
		digests[digest], proposals[d.Proposal], evidence[d.RetainedEvidence] = true, true, true
		rows = append(rows, row{d, digest})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].digest.Hex < rows[j].digest.Hex })
	var res discoveryResult
	eligible := make(map[string]bool, len(in.Metagraph))
	for _, h := range in.Metagraph {
		eligible[h] = true
	}
	for _, r := range rows {
		live, err := r.claim.LiveAt(in.Policy, in.Block)
		if err != nil {
			return discoveryResult{}, err
		}
		if !live {
			res.expired = append(res.expired, r.digest)
			continue
		}
		to := r.claim.Hotkey
		if !eligible[to] {
			to = in.Validator
		}
		res.live = append(res.live, DiscoveryCredit{Claim: r.digest, Hotkey: r.claim.Hotkey, Recipient: to, Units: r.claim.BountyUnits})
	}
	return res, nil
}

// allocate splits pool parts among the hotkeys of credits in proportion
// to their credit, by the largest-remainder method: each hotkey (in
// ascending order) gets ⌊credit·pool/total⌋, and the parts left over go
// one each to the largest remainders, ties to the smaller hotkey. The
// shares sum to exactly pool. Hotkeys with zero credit get nothing and are
// left out. The caller guarantees a positive total.
func allocate(credits map[string]*big.Int, pool uint64) map[string]uint64 {
	type share struct {
		hotkey    string
		remainder *big.Int
	}
	total := new(big.Int)
	hotkeys := make([]string, 0, len(credits))
	for h, c := range credits {
		if c.Sign() > 0 {
			hotkeys = append(hotkeys, h)
			total.Add(total, c)
		}
	}
	sort.Strings(hotkeys)
	out := make(map[string]uint64, len(hotkeys))
	shares := make([]share, 0, len(hotkeys))
	p := new(big.Int).SetUint64(pool)
	var given uint64
	for _, h := range hotkeys {
		q, r := new(big.Int).QuoRem(new(big.Int).Mul(credits[h], p), total, new(big.Int))
		// q ≤ pool, since credit ≤ total.
		out[h] = q.Uint64()
		given += out[h]
		shares = append(shares, share{h, r})
	}
	// Each floor loses less than one part, so fewer parts are left than
	// there are hotkeys.
	left := pool - given
	sort.SliceStable(shares, func(i, j int) bool {
		if c := shares[i].remainder.Cmp(shares[j].remainder); c != 0 {
			return c > 0
		}
		return shares[i].hotkey < shares[j].hotkey
	})
	for i := uint64(0); i < left; i++ {
		out[shares[i].hotkey]++
	}
	return out
}
