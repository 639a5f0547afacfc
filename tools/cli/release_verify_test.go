package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// verifyReport is the part of release verify's JSON report the tests read.
type verifyReport struct {
	FormatVersion int    `json:"format_version"`
	Verified      bool   `json:"verified"`
	Error         string `json:"error"`
	Checks        []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
	Notes []string `json:"notes"`
}

// oneReport parses out as exactly one JSON document.
func oneReport(t *testing.T, out string) verifyReport {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var rep verifyReport
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("not a JSON report: %v\n%s", err, out)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		t.Fatalf("more than one JSON document on stdout:\n%s", out)
	}
	if rep.FormatVersion != 1 {
		t.Fatalf("format_version %d", rep.FormatVersion)
	}
	return rep
}

// release verify never exits 1 on attacker-controlled input: every
// tamper class of the shared table exits 2 naming its check in one JSON
// report, and every extra an attacker can attach to a genuine release
// leaves it verified (exit 0) with a note.
func TestReleaseVerifyTamperClassesExit2(t *testing.T) {
	for _, c := range fixture.Tampers() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			r := fixture.New(t)
			dir := r.Signed(t)
			c.Apply(t, dir, r)
			code, out, errOut := run(t, "", "release", "verify", "--json", "--key", r.PublicKey, dir)
			rep := oneReport(t, out)
			if c.Check == "" {
				if code != enginecli.ExitOK || !rep.Verified {
					t.Fatalf("exit %d, verified %v: a genuine release with an attacker's extra must verify\n%s%s", code, rep.Verified, out, errOut)
				}
				found := false
				for _, n := range rep.Notes {
					found = found || strings.Contains(n, c.Want)
				}
				if !found {
					t.Errorf("notes %q lack %q", rep.Notes, c.Want)
				}
				return
			}
			if code != enginecli.ExitRejected {
				t.Fatalf("exit %d, want %d (check %s)\n%s%s", code, enginecli.ExitRejected, c.Check, out, errOut)
			}
			last := rep.Checks[len(rep.Checks)-1]
			if rep.Verified || last.Name != c.Check || last.OK || !strings.Contains(last.Detail, c.Want) {
				t.Fatalf("last check %+v, want %s failing with %q", last, c.Check, c.Want)
			}
		})
	}
}

// The text report lists the notes after the checks.
func TestReleaseVerifyPrintsNotes(t *testing.T) {
	r := fixture.New(t)
	dir := r.Signed(t)
	for _, c := range fixture.Tampers() {
		if c.Name == "referrer of an unknown artifact type" {
			c.Apply(t, dir, r)
		}
	}
	code, out, errOut := run(t, "", "release", "verify", "--key", r.PublicKey, dir)
	if code != enginecli.ExitOK || !strings.Contains(out, `note skipped referrer sha256:`) || !strings.Contains(out, "application/vnd.example.junk") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
}

// --json gives one document on every path, the ones that never reach a
// check too, with the error; the exit code stays the error's.
func TestReleaseVerifyJSONOnEveryPath(t *testing.T) {
	r := fixture.New(t)
	dir := r.Signed(t)
	missing := filepath.Join(t.TempDir(), "nothing-here")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no such key file", []string{"--key", missing, dir}, enginecli.ExitError, "nothing-here"},
		{"no such layout", []string{"--key", r.PublicKey, missing}, enginecli.ExitError, "no such OCI layout"},
		{"bad --now", []string{"--key", r.PublicKey, "--now", "yesterday", dir}, enginecli.ExitRejected, "--now"},
		{"verified", []string{"--key", r.PublicKey, dir}, enginecli.ExitOK, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", append([]string{"release", "verify", "--json"}, c.args...)...)
			rep := oneReport(t, out)
			if code != c.code || !strings.Contains(rep.Error, c.want) || (c.code == enginecli.ExitOK) != rep.Verified {
				t.Fatalf("exit %d (want %d), report %+v\n%s", code, c.code, rep, errOut)
			}
			if c.code != enginecli.ExitOK && !bytes.Contains([]byte(errOut), []byte(c.want)) {
				t.Errorf("stderr %q lacks %q", errOut, c.want)
			}
		})
	}
}
