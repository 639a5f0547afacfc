package verify_test

import (
	"errors"
	"strings"
	"testing"

	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/verify"
)

// Every attacker-controlled change of the shared table: the extras an
// attacker can attach to a genuine release (a replayed bundle signed by
// the trusted key, referrers of other types, missing or oversized
// manifests and blobs of referrers it does not need) leave it verified
// with a note; the faults fail the named check, as a Failure (exit 2 at
// the command line), never as an I/O error.
func TestVerifyTamperClasses(t *testing.T) {
	for _, c := range fixture.Tampers() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			r := fixture.New(t)
			dir := r.Signed(t)
			c.Apply(t, dir, r)
			rel, err := run(t, dir, policyFor(t, r))
			rep := rel.Report
			if c.Check == "" {
				if err != nil {
					t.Fatalf("a genuine release with an attacker's extra failed: %v", err)
				}
				if !rep.Verified || !fixture.HasNote(rep, c.Want) {
					t.Fatalf("verified %v, notes %q: want a note saying %q", rep.Verified, rep.Notes, c.Want)
				}
				return
			}
			var f *verify.Failure
			if !errors.As(err, &f) {
				t.Fatalf("err = %v, want a failed %s check", err, c.Check)
			}
			if f.Check != c.Check || !strings.Contains(f.Err.Error(), c.Want) {
				t.Fatalf("failed check %s: %v\nwant check %s saying %q", f.Check, f.Err, c.Check, c.Want)
			}
			last := rep.Checks[len(rep.Checks)-1]
			if rep.Verified || last.Name != c.Check || last.OK || rep.Error == "" {
				t.Errorf("report: verified %v, last check %+v, error %q", rep.Verified, last, rep.Error)
			}
		})
	}
}
