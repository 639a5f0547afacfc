package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// run executes the command line in-process and returns its exit code,
// standard output and standard error.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, Streams{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

func TestDigestCommand(t *testing.T) {
	dir := t.TempDir()
	payload := filepath.Join(dir, "payload.json")
	os.WriteFile(payload, []byte(`{"b":[1,"é"],"a":null}`), 0o644)
	floatFile := filepath.Join(dir, "float.json")
	os.WriteFile(floatFile, []byte("{\n \"a\": [1, 2.5]\n}"), 0o644)

	const golden = "2d88663189776a8721b7c7aa0f57c8a9d54e6f0b8671e552a5a718c2cfc64a20\n"
	tests := []struct {
		name      string
		stdin     string
		args      []string
		wantCode  int
		wantOut   string
		wantInErr string
	}{
		{"stdin golden", `{"b":[1,"é"],"a":null}`, []string{"digest", "--domain", "x"}, 0, golden, ""},
		{"dash is stdin", `{"b":[1,"é"],"a":null}`, []string{"digest", "--domain", "x", "-"}, 0, golden, ""},
		{"file golden", "", []string{"digest", "--domain", "x", payload}, 0, golden, ""},
		{"float rejected with path and location", "", []string{"digest", "--domain", "x", floatFile}, 2, "", "float.json: $.a[1]: float 2.5"},
		{"bad domain", "{}", []string{"digest", "--domain", "Bad Domain"}, 2, "", "--domain"},
		{"zero schema version", "{}", []string{"digest", "--domain", "x", "--schema-version", "0"}, 2, "", "--schema-version"},
		{"missing domain is usage", "{}", []string{"digest"}, 1, "", "domain"},
		{"malformed json", `{"a":`, []string{"digest", "--domain", "x"}, 2, "", "<stdin>: $.a"},
		{"missing file is I/O", "", []string{"digest", "--domain", "x", filepath.Join(dir, "nope.json")}, 1, "", "nope.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.stdin, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.wantCode, errOut)
			}
			if out != tc.wantOut {
				t.Fatalf("stdout %q, want %q", out, tc.wantOut)
			}
			if !strings.Contains(errOut, tc.wantInErr) {
				t.Fatalf("stderr %q does not mention %q", errOut, tc.wantInErr)
			}
		})
	}
}

func TestHashCommand(t *testing.T) {
	bundle := t.TempDir()
	os.MkdirAll(filepath.Join(bundle, "kernels"), 0o755)
	os.WriteFile(filepath.Join(bundle, "kernels", "k.py"), []byte("x = 1\n"), 0o644)
	os.WriteFile(filepath.Join(bundle, ".cacheon-native-artifact.json"), []byte("{}"), 0o644)
	empty := t.TempDir()

	code, plain, _ := run(t, "", "hash", bundle)
	if code != 0 || len(strings.TrimSpace(plain)) != 64 {
		t.Fatalf("hash: exit %d, out %q", code, plain)
	}
	code, committed, _ := run(t, "", "hash", "--committed", bundle)
	if code != 0 || committed == plain {
		t.Fatalf("hash --committed: exit %d, same as plain: %v", code, committed == plain)
	}
	if code, _, errOut := run(t, "", "hash", empty); code != 2 || !strings.Contains(errOut, "no files") {
		t.Fatalf("empty bundle: exit %d, stderr %q", code, errOut)
	}
	file := filepath.Join(bundle, "kernels", "k.py")
	if code, _, errOut := run(t, "", "hash", file); code != 2 || !strings.Contains(errOut, "not a directory") {
		t.Fatalf("file as bundle: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := run(t, "", "hash"); code != 1 {
		t.Fatalf("no argument: exit %d, want 1", code)
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	var visit func(c *cobra.Command, path []string)
	visit = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			p := append(append([]string{}, path...), sub.Name())
			if sub.Short == "" || sub.Long == "" {
				t.Errorf("command %q lacks Short or Long help", strings.Join(p, " "))
			}
			code, out, _ := run(t, "", append(p, "--help")...)
			if code != 0 || !strings.Contains(out, "Usage:") {
				t.Errorf("%s --help: exit %d, output %q", strings.Join(p, " "), code, out)
			}
			visit(sub, p)
		}
	}
	visit(root, nil)
}
