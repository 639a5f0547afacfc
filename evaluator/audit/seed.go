package audit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/cacheon/engine/evaluator/workload"
	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/internal/reject"
)

// MinSecretBytes is the shortest validator secret the audit accepts: the
// seed must not be guessable from the public selected delta alone.
const MinSecretBytes = 32

// Seed is the audit seed of spec §5.3: the first 32 hex digits of
// SHA-256(DomainAuditSeed ‖ NUL ‖ secret ‖ selected delta), the selected
// delta being its 32 digest bytes. Every rank of the audit session gets
// the same seed.
func Seed(secret []byte, selectedDelta string) (string, error) {
	if len(secret) < MinSecretBytes {
		return "", reject.Errorf("audit secret: %d bytes, need at least %d", len(secret), MinSecretBytes)
	}
	delta, err := hex.DecodeString(selectedDelta)
	if err != nil || len(delta) != sha256.Size {
		return "", reject.Errorf("selected delta %q: not a SHA-256 hex digest", selectedDelta)
	}
	h := sha256.New()
	h.Write([]byte(identity.DomainAuditSeed))
	h.Write([]byte{0})
	h.Write(secret)
	h.Write(delta)
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// VerifySeed is the input seed of a qualification's ABI screen: the
// first 6 bytes of SHA-256(DomainVerifySeed ‖ NUL ‖ secret ‖ selected
// delta) as a non-negative integer. The validator's input generator is
// public code, so a public seed would let a kernel replay the stream and
// write answers for inputs it never reads (docs/reference/integrity.md,
// class 8); drawn from the secret, the seed is unknown until the secret
// is revealed, and one secret gives one seed per candidate.
func VerifySeed(secret []byte, selectedDelta string) (int64, error) {
	if len(secret) < MinSecretBytes {
		return 0, reject.Errorf("verify seed: secret of %d bytes, need at least %d", len(secret), MinSecretBytes)
	}
	delta, err := hex.DecodeString(selectedDelta)
	if err != nil || len(delta) != sha256.Size {
		return 0, reject.Errorf("selected delta %q: not a SHA-256 hex digest", selectedDelta)
	}
	h := sha256.New()
	h.Write([]byte(identity.DomainVerifySeed))
	h.Write([]byte{0})
	h.Write(secret)
	h.Write(delta)
	var seed int64
	for _, b := range h.Sum(nil)[:6] {
		seed = seed<<8 | int64(b)
	}
	return seed, nil
}

// SecretCommitment is SHA-256(DomainAuditSecret ‖ NUL ‖ secret): what the
// evidence keeps of the secret, so the seed can be recomputed once the
// secret is revealed and never before.
func SecretCommitment(secret []byte) string {
	h := sha256.New()
	h.Write([]byte(identity.DomainAuditSecret))
	h.Write([]byte{0})
	h.Write(secret)
	return hex.EncodeToString(h.Sum(nil))
}

// FreshSecret is a random secret of MinSecretBytes, for a run that keeps
// none of its own (only its commitment is recorded).
func FreshSecret() ([]byte, error) {
	b := make([]byte, MinSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("audit secret: %w", err)
	}
	return b, nil
}

// Prompt is the audit workload's prompt: the shortest prompt of the
// qualification workload, ties broken by the smallest SHA-256 of the
// prompt's canonical JSON token list.
type Prompt struct {
	Tokens []int
	Digest string // hex SHA-256 of the canonical JSON token list
}

// ShortestPrompt picks the audit prompt of w.
func ShortestPrompt(w *workload.Workload) (Prompt, error) {
	var best Prompt
	found := false
	for _, b := range w.PromptBatches {
		for _, p := range b {
			data, err := canonjson.Marshal(p)
			if err != nil {
				return Prompt{}, err
			}
			sum := sha256.Sum256(data)
			d := hex.EncodeToString(sum[:])
			if !found || len(p) < len(best.Tokens) || len(p) == len(best.Tokens) && d < best.Digest {
				best, found = Prompt{Tokens: p, Digest: d}, true
			}
		}
	}
	if !found || len(best.Tokens) == 0 {
		return Prompt{}, reject.Errorf("workload %s: no non-empty prompt to audit with", w.Name)
	}
	return best, nil
}

// MaxSecretBytes bounds a secret file: a secret is a key, not a document.
const MaxSecretBytes = 4096

// LoadSecret reads the validator's secret from path, or, when path is
// empty, draws a fresh one (recorded only by its commitment). A secret
// file must be a regular file of MinSecretBytes to MaxSecretBytes bytes.
func LoadSecret(path string) ([]byte, error) {
	if path == "" {
		return FreshSecret()
	}
	info, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("audit secret: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, reject.Errorf("audit secret %s: not a regular file", path)
	}
	if info.Size() < MinSecretBytes || info.Size() > MaxSecretBytes {
		return nil, reject.Errorf("audit secret %s: %d bytes, want %d to %d", path, info.Size(), MinSecretBytes, MaxSecretBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit secret: %w", err)
	}
	if len(data) < MinSecretBytes || len(data) > MaxSecretBytes {
		return nil, reject.Errorf("audit secret %s: changed while read", path)
	}
	return data, nil
}
