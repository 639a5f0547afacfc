package quality

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/reject"
)

func testPool(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, PromptDigest([]int{i, i + 1, i + 2}))
	}
	return out
}

func testSealed(t *testing.T, secret []byte, selectCount int) *Sealed {
	t.Helper()
	d := strings.Repeat("ab", 32)
	s, err := Commit(secret, d, strings.Repeat("cd", 32), strings.Repeat("ef", 32), EntropyControllerRandom, testPool(10), selectCount)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSecretCommitmentIsTheSpecsHash(t *testing.T) {
	// SHA-256("cacheon-selection-secret-v1\0" ‖ 32 zero bytes), computed
	// independently (printf + sha256sum).
	const want = "df94224bd0163266cabb4e6a76e31a32468c79c95af1e4c58ff1f4ef097af996"
	if got := SecretCommitment(make([]byte, 32)); got != want {
		t.Fatalf("commitment %s, want %s", got, want)
	}
}

func TestRevealSelectsDeterministicallyAndSorted(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	s := testSealed(t, secret, 4)
	r1, err := s.Reveal([]byte("entropy one"))
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := testSealed(t, secret, 4).Reveal([]byte("entropy one"))
	r3, _ := s.Reveal([]byte("entropy two"))
	if len(r1.Selected) != 4 || strings.Join(r1.Selected, ",") != strings.Join(r2.Selected, ",") {
		t.Fatalf("the same commitment and entropy selected %v then %v", r1.Selected, r2.Selected)
	}
	for i := 1; i < len(r1.Selected); i++ {
		if r1.Selected[i-1] >= r1.Selected[i] {
			t.Fatalf("selection not sorted: %v", r1.Selected)
		}
	}
	if strings.Join(r1.Selected, ",") == strings.Join(r3.Selected, ",") {
		t.Logf("two entropies selected the same 4 of 10 (possible, unlikely)")
	}
	if err := CheckReveal(&s.Commitment, r1); err != nil {
		t.Fatalf("an honest reveal is refused: %v", err)
	}
}

func TestCommitRefusesBadInput(t *testing.T) {
	d := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name   string
		secret []byte
		pool   []string
		count  int
		want   string
	}{
		{"short secret", make([]byte, 31), testPool(3), 1, "31 bytes, want at least 32"},
		{"count over pool", make([]byte, 32), testPool(3), 4, "select_count 4 outside [1, 3]"},
		{"count zero", make([]byte, 32), testPool(3), 0, "select_count 0"},
		{"bad prompt digest", make([]byte, 32), []string{"x"}, 1, `prompt_pool[0] "x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Commit(c.secret, d, d, d, EntropyControllerRandom, c.pool, c.count)
			if err == nil || !reject.Is(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want a rejection with %q", err, c.want)
			}
		})
	}
}

func TestRevealThatDoesNotMatchItsCommitmentIsRefused(t *testing.T) {
	secret := bytes.Repeat([]byte{9}, 32)
	s := testSealed(t, secret, 3)
	honest, err := s.Reveal([]byte("post-commit"))
	if err != nil {
		t.Fatal(err)
	}
	other := testSealed(t, bytes.Repeat([]byte{8}, 32), 3)
	for _, c := range []struct {
		name   string
		commit *SelectionCommitment
		edit   func(r *SelectionReceipt)
		want   string
	}{
		{"another secret", &s.Commitment, func(r *SelectionReceipt) { r.Secret = strings.Repeat("08", 32) }, "the revealed secret commits to"},
		{"another commitment", &other.Commitment, func(*SelectionReceipt) {}, "commitment_digest"},
		{"a swapped prompt", &s.Commitment, func(r *SelectionReceipt) {
			for _, p := range s.Commitment.PromptPool {
				if p != r.Selected[0] && p != r.Selected[1] && p != r.Selected[2] {
					r.Selected[0] = p
					break
				}
			}
		}, "the ranking selects"},
		{"one prompt short", &s.Commitment, func(r *SelectionReceipt) { r.Selected = r.Selected[:2] }, "2 prompts selected, the commitment selects 3"},
		{"entropy swapped", &s.Commitment, func(r *SelectionReceipt) { r.Entropy = "00" }, "entropy_digest"},
		{"receipt digest", &s.Commitment, func(r *SelectionReceipt) { r.Digest = strings.Repeat("0", 64) }, "receipt digest"},
		{"a secret too short", &s.Commitment, func(r *SelectionReceipt) { r.Secret = "0909" }, "at least 32 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := *honest
			r.Selected = append([]string(nil), honest.Selected...)
			c.edit(&r)
			err := CheckReveal(c.commit, &r)
			if err == nil || !reject.Is(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want a rejection with %q", err, c.want)
			}
		})
	}
}
