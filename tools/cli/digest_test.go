package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// endless is a reader that never ends: digest used to read it to the end.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.n += int64(len(p))
	return len(p), nil
}

func TestDigestBoundsItsInput(t *testing.T) {
	in := &endless{}
	var out, errOut bytes.Buffer
	code := Main([]string{"digest", "--domain", "x"}, Streams{In: in, Out: &out, Err: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "size limit") {
		t.Fatalf("exit %d, stderr %q; want a size rejection", code, errOut.String())
	}
	if in.n > maxDigestInput+1<<20 {
		t.Fatalf("read %d bytes of standard input, limit %d", in.n, maxDigestInput)
	}

	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, append([]byte("1"), bytes.Repeat([]byte(" "), maxDigestInput)...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "digest", "--domain", "x", big)
	if code != 2 || !strings.Contains(stderr, "big.json") || !strings.Contains(stderr, "size limit") {
		t.Fatalf("exit %d, stderr %q; want a size rejection naming the file", code, stderr)
	}
	if code, out, _ := run(t, "1"+strings.Repeat(" ", maxDigestInput-1), "digest", "--domain", "x"); code != 0 || len(out) != 65 {
		t.Fatalf("input of exactly the limit: exit %d, out %q", code, out)
	}
}

// A 4M-digit integer took 24 s; it is now refused at once, naming the limit.
func TestDigestRefusesLongIntegers(t *testing.T) {
	code, _, stderr := run(t, `{"n":`+strings.Repeat("7", 4_000_000)+"}", "digest", "--domain", "x")
	if code != 2 || !strings.Contains(stderr, "<stdin>: $.n") || !strings.Contains(stderr, "digit limit") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = run(t, strings.Repeat("[", 100_000), "digest", "--domain", "x")
	if code != 2 || !strings.Contains(stderr, "depth limit") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
