package quality

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
)

// MinSecretBytes is the shortest selection secret: 32 bytes, so the
// ranking cannot be searched from the commitment.
const MinSecretBytes = 32

// secretPrefix is the domain of the secret commitment. It is a hash input
// of the spec's own form (SHA-256 of prefix ‖ secret), not a canonical
// JSON envelope.
const secretPrefix = "cacheon-selection-secret-v1\x00"

// EntropyControllerRandom names post-commit entropy drawn from the
// controller's cryptographic random source after the commitment is sealed.
const EntropyControllerRandom = "controller-crypto-rand-after-commit.v1"

// SecretCommitment is SHA-256("cacheon-selection-secret-v1\0" ‖ secret),
// lowercase hex.
func SecretCommitment(secret []byte) string {
	h := sha256.New()
	h.Write([]byte(secretPrefix))
	h.Write(secret)
	return hex.EncodeToString(h.Sum(nil))
}

// PromptDigest identifies one prompt of the pool by its token ids.
func PromptDigest(tokens []int) string {
	ids := make([]any, len(tokens))
	for i, t := range tokens {
		ids[i] = int64(t)
	}
	return identity.MustH(identity.DomainSelectionPrompt, map[string]any{"tokens": ids}).String()
}

// SelectionCommitment is sealed before any engine runs: what the
// selection will be drawn from and a commitment to the secret that will
// rank it.
type SelectionCommitment struct {
	SourcePlan        string   `json:"source_plan"`        // the marginal arm plan digest
	ReferenceManifest string   `json:"reference_manifest"` // the reference tree's digest
	Workload          string   `json:"workload"`           // the workload digest
	EntropySource     string   `json:"entropy_source"`
	SecretCommitment  string   `json:"secret_commitment"`
	PromptPool        []string `json:"prompt_pool"` // prompt digests, sorted, distinct
	SelectCount       int      `json:"select_count"`
}

// Digest is H(cacheon.qualification.selection-commitment, c).
func (c *SelectionCommitment) Digest() (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	pool := make([]any, len(c.PromptPool))
	for i, p := range c.PromptPool {
		pool[i] = p
	}
	d, err := identity.H(identity.DomainSelectionCommitment, map[string]any{
		"source_plan": c.SourcePlan, "reference_manifest": c.ReferenceManifest, "workload": c.Workload,
		"entropy_source": c.EntropySource, "secret_commitment": c.SecretCommitment,
		"prompt_pool": pool, "select_count": int64(c.SelectCount),
	})
	return d.String(), err
}

// Validate checks the commitment's form: digests, a sorted pool of
// distinct prompts, and 1 ≤ select_count ≤ the pool.
func (c *SelectionCommitment) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"source_plan", c.SourcePlan}, {"reference_manifest", c.ReferenceManifest},
		{"workload", c.Workload}, {"secret_commitment", c.SecretCommitment},
	} {
		if !identity.IsHex64(f.v) {
			return reject.Errorf("selection commitment: %s %q is not a 64-hex digest", f.name, f.v)
		}
	}
	if c.EntropySource == "" {
		return reject.Errorf("selection commitment: entropy_source is empty")
	}
	for i, p := range c.PromptPool {
		if !identity.IsHex64(p) {
			return reject.Errorf("selection commitment: prompt_pool[%d] %q is not a 64-hex digest", i, p)
		}
		if i > 0 && c.PromptPool[i-1] >= p {
			return reject.Errorf("selection commitment: prompt_pool is not sorted and distinct at %d", i)
		}
	}
	if c.SelectCount < 1 || c.SelectCount > len(c.PromptPool) {
		return reject.Errorf("selection commitment: select_count %d outside [1, %d] (the pool)", c.SelectCount, len(c.PromptPool))
	}
	return nil
}

// Sealed is a commitment with the secret that only the controller holds
// until the reveal.
type Sealed struct {
	Commitment SelectionCommitment
	Digest     string
	secret     []byte
}

// Commit seals a selection over pool (prompt digests in any order,
// duplicates collapsed) with secret (at least MinSecretBytes).
func Commit(secret []byte, sourcePlan, referenceManifest, workload, entropySource string, pool []string, selectCount int) (*Sealed, error) {
	if len(secret) < MinSecretBytes {
		return nil, reject.Errorf("selection secret: %d bytes, want at least %d", len(secret), MinSecretBytes)
	}
	c := SelectionCommitment{SourcePlan: sourcePlan, ReferenceManifest: referenceManifest, Workload: workload,
		EntropySource: entropySource, SecretCommitment: SecretCommitment(secret), PromptPool: sortedSet(pool), SelectCount: selectCount}
	d, err := c.Digest()
	if err != nil {
		return nil, err
	}
	return &Sealed{Commitment: c, Digest: d, secret: append([]byte(nil), secret...)}, nil
}

// SelectionReceipt is the reveal: the post-commit entropy, the secret
// and the prompts it selected, bound to the commitment by digest.
type SelectionReceipt struct {
	CommitmentDigest string   `json:"commitment_digest"`
	Entropy          string   `json:"entropy"`        // hex of the post-commit entropy bytes
	EntropyDigest    string   `json:"entropy_digest"` // SHA-256 of those bytes
	Secret           string   `json:"secret"`         // hex of the secret, revealed
	Selected         []string `json:"selected"`       // prompt digests, sorted
	Digest           string   `json:"digest"`         // H(…selection-receipt, the fields above)
}

// Reveal ranks the committed pool with the secret and post-commit entropy
// and returns the receipt of the first select_count prompts.
func (s *Sealed) Reveal(entropy []byte) (*SelectionReceipt, error) {
	if len(entropy) == 0 {
		return nil, reject.Errorf("selection reveal: no post-commit entropy")
	}
	sum := sha256.Sum256(entropy)
	r := &SelectionReceipt{CommitmentDigest: s.Digest, Entropy: hex.EncodeToString(entropy),
		EntropyDigest: hex.EncodeToString(sum[:]), Secret: hex.EncodeToString(s.secret)}
	sel, err := rank(&s.Commitment, s.Digest, r.EntropyDigest)
	if err != nil {
		return nil, err
	}
	r.Selected = sel
	if r.Digest, err = r.digest(); err != nil {
		return nil, err
	}
	return r, nil
}

// rank orders the pool by H(selection-key, {commitment_digest,
// post_commit_entropy_digest, prompt_digest, secret}) — the secret field
// carries the secret's commitment hash, as the spec has it — and returns
// the first select_count prompt digests, sorted.
func rank(c *SelectionCommitment, commitmentDigest, entropyDigest string) ([]string, error) {
	type keyed struct{ key, prompt string }
	ks := make([]keyed, 0, len(c.PromptPool))
	for _, p := range c.PromptPool {
		k, err := identity.H(identity.DomainSelectionKey, map[string]any{
			"commitment_digest": commitmentDigest, "post_commit_entropy_digest": entropyDigest,
			"prompt_digest": p, "secret": c.SecretCommitment,
		})
		if err != nil {
			return nil, err
		}
		ks = append(ks, keyed{k.String(), p})
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].key < ks[j].key })
	out := make([]string, c.SelectCount)
	for i := range out {
		out[i] = ks[i].prompt
	}
	sort.Strings(out)
	return out, nil
}

func (r *SelectionReceipt) digest() (string, error) {
	sel := make([]any, len(r.Selected))
	for i, p := range r.Selected {
		sel[i] = p
	}
	d, err := identity.H(identity.DomainSelectionReceipt, map[string]any{
		"commitment_digest": r.CommitmentDigest, "entropy": r.Entropy, "entropy_digest": r.EntropyDigest,
		"secret": r.Secret, "selected": sel,
	})
	return d.String(), err
}

// CheckReveal verifies a receipt against its commitment from nothing but
// the two: the commitment's digest, the secret's commitment, the
// entropy's digest, the ranking and the receipt's own digest. A receipt
// that does not match is refused with the first reason.
func CheckReveal(c *SelectionCommitment, r *SelectionReceipt) error {
	cd, err := c.Digest()
	if err != nil {
		return err
	}
	if r.CommitmentDigest != cd {
		return reject.Errorf("selection reveal: commitment_digest %s, the commitment's digest is %s", r.CommitmentDigest, cd)
	}
	secret, err := hex.DecodeString(r.Secret)
	if err != nil || len(secret) < MinSecretBytes {
		return reject.Errorf("selection reveal: secret is not hex of at least %d bytes", MinSecretBytes)
	}
	if got := SecretCommitment(secret); got != c.SecretCommitment {
		return reject.Errorf("selection reveal: the revealed secret commits to %s, the commitment sealed %s", got, c.SecretCommitment)
	}
	entropy, err := hex.DecodeString(r.Entropy)
	if err != nil || len(entropy) == 0 {
		return reject.Errorf("selection reveal: entropy is not non-empty hex")
	}
	if sum := sha256.Sum256(entropy); hex.EncodeToString(sum[:]) != r.EntropyDigest {
		return reject.Errorf("selection reveal: entropy_digest %s is not the SHA-256 of the entropy", r.EntropyDigest)
	}
	want, err := rank(c, cd, r.EntropyDigest)
	if err != nil {
		return err
	}
	if len(want) != len(r.Selected) {
		return reject.Errorf("selection reveal: %d prompts selected, the commitment selects %d", len(r.Selected), len(want))
	}
	for i := range want {
		if want[i] != r.Selected[i] {
			return reject.Errorf("selection reveal: selected[%d] is %s, the ranking selects %s", i, r.Selected[i], want[i])
		}
	}
	if d, err := r.digest(); err != nil || d != r.Digest {
		return reject.Errorf("selection reveal: receipt digest %s does not recompute (%s)", r.Digest, d)
	}
	return nil
}

func sortedSet(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i == 0 || s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}
