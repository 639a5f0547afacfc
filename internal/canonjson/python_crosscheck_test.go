package canonjson

import (
	"bytes"
	"math/big"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
)

// TestMatchesPythonJSON encodes random documents and asks Python's json
// module, configured as upstream configures it, to re-encode each one: the
// bytes must agree. It is the byte-compatibility claim, checked against the
// implementation it claims compatibility with.
func TestMatchesPythonJSON(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH; the cross-check needs Python's json module")
	}
	rng := rand.New(rand.NewSource(1))
	var docs [][]byte
	for i := 0; i < 400; i++ {
		b, err := Marshal(randomValue(rng, 0))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	const script = `
import json, sys
for line in sys.stdin.buffer.read().split(b"\n\x1e\n"):
    if not line:
        continue
    v = json.loads(line.decode("utf-8"))
    out = json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    sys.stdout.buffer.write(out.encode("utf-8") + b"\n\x1e\n")
`
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = bytes.NewReader(bytes.Join(docs, []byte("\n\x1e\n")))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	got := bytes.Split(bytes.TrimSuffix(out, []byte("\n\x1e\n")), []byte("\n\x1e\n"))
	if len(got) != len(docs) {
		t.Fatalf("python returned %d documents, want %d", len(got), len(docs))
	}
	for i := range docs {
		if !bytes.Equal(got[i], docs[i]) {
			t.Fatalf("document %d differs:\n go: %q\n py: %q", i, docs[i], got[i])
		}
	}
}

var alphabet = []rune("aZ09_-./\"\\\b\f\n\r\t\x00\x01\x1f\x7f <>&é漢😀\u2028\u2029\u00a0\ufeff\U0010ffff")

func randomString(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.Intn(8); n > 0; n-- {
		b.WriteRune(alphabet[rng.Intn(len(alphabet))])
	}
	return b.String()
}

func randomValue(rng *rand.Rand, depth int) any {
	kind := rng.Intn(7)
	if depth > 3 {
		kind = rng.Intn(4)
	}
	switch kind {
	case 0:
		return nil
	case 1:
		return rng.Intn(2) == 0
	case 2:
		n := new(big.Int).Lsh(big.NewInt(rng.Int63()), uint(rng.Intn(100)))
		if rng.Intn(2) == 0 {
			n.Neg(n)
		}
		return n
	case 3:
		return randomString(rng)
	case 4, 5:
		m := map[string]any{}
		for n := rng.Intn(5); n > 0; n-- {
			m[randomString(rng)] = randomValue(rng, depth+1)
		}
		return m
	default:
		var a []any
		for n := rng.Intn(5); n > 0; n-- {
			a = append(a, randomValue(rng, depth+1))
		}
		return a
	}
}
