package review_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/review"
	"github.com/cacheon/engine/stacks/stack"
)

func git(t *testing.T, repo string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func request(t *testing.T, r *fixture.Release) review.Request {
	t.Helper()
	inspect := review.Inspector(fixture.Catalog(t), nil)
	crowned, err := inspect(fixture.BundleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return review.Request{
		Crown: fixture.Crown(t, crowned.SelectedPayloadDigest), Evidence: fixture.Evidence(), Reviewer: "Ada",
		Repo: r.Repo, Commit: r.Commit, Path: r.SourcePath, Inspect: inspect,
	}
}

func TestReviewBindsTheCrownToTheCommit(t *testing.T) {
	r := fixture.New(t)
	rec, err := review.New(request(t, r))
	if err != nil {
		t.Fatal(err)
	}
	want, err := contribution.IntegratedSourceTreeDigest(fixture.BundleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if rec.IntegratedSourceTreeDigest != want.String() {
		t.Errorf("tree digest from git %s, from the bundle directory %s", rec.IntegratedSourceTreeDigest, want)
	}
	if rec.ReviewCommit != r.Commit || !rec.Approved {
		t.Errorf("record %+v", rec)
	}
	b, _ := rec.Marshal()
	back, err := review.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := rec.Digest()
	d2, _ := back.Digest()
	if d1 != d2 {
		t.Errorf("digest changed through marshal/parse")
	}
	if err := review.CheckSource(rec, r.Repo, r.SourcePath); err != nil {
		t.Errorf("CheckSource: %v", err)
	}
}

func TestReviewRejectsSourceThatDoesNotReproduceTheCrown(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, r *fixture.Release, req *review.Request)
		want   string
	}{
		{"another crowned payload", func(t *testing.T, r *fixture.Release, req *review.Request) {
			req.Crown.SelectedPayloadDigest = identity.MustH("x", "other payload").String()
		}, "selects payload"},
		{"kernel edited after the crown", func(t *testing.T, r *fixture.Release, req *review.Request) {
			p := filepath.Join(r.Repo, r.SourcePath, "kernels", "silu_and_mul.py")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append(b, []byte("\n# reviewed edit\nEXTRA = 1\n")...), 0o644)
			git(t, r.Repo, "commit", "-qam", "edit")
			req.Commit = git(t, r.Repo, "rev-parse", "HEAD")
		}, "selects payload"},
		{"crown for another target", func(t *testing.T, r *fixture.Release, req *review.Request) {
			req.Crown.TargetID = "norm.rmsnorm"
		}, "the crown is for norm.rmsnorm"},
		{"working tree edits are not reviewed source", func(t *testing.T, r *fixture.Release, req *review.Request) {
			// Uncommitted edits must not matter: the record binds the commit.
			os.WriteFile(filepath.Join(r.Repo, r.SourcePath, "kernels", "silu_and_mul.py"), []byte("evil"), 0o644)
			req.Crown.SelectedPayloadDigest = identity.MustH("x", "other").String()
		}, "selects payload"},
		{"abbreviated commit", func(t *testing.T, r *fixture.Release, req *review.Request) { req.Commit = r.Commit[:12] }, "full 40-hex commit id"},
		{"branch name", func(t *testing.T, r *fixture.Release, req *review.Request) { req.Commit = "main" }, "full 40-hex commit id"},
		{"symlink in reviewed source", func(t *testing.T, r *fixture.Release, req *review.Request) {
			os.Symlink("manifest.toml", filepath.Join(r.Repo, r.SourcePath, "link.toml"))
			git(t, r.Repo, "add", "-A")
			git(t, r.Repo, "commit", "-qm", "link")
			req.Commit = git(t, r.Repo, "rev-parse", "HEAD")
		}, "is not a regular file"},
		{"primary attempt evidence not the crown's", func(t *testing.T, r *fixture.Release, req *review.Request) {
			req.Evidence[review.RolePrimaryAttempt] = []byte("{\"another\":1}")
		}, "primary attempt evidence hashes to"},
		{"missing evidence", func(t *testing.T, r *fixture.Release, req *review.Request) {
			delete(req.Evidence, review.RoleSecurityReview)
		}, "evidence security_review is missing"},
		{"duplicate evidence", func(t *testing.T, r *fixture.Release, req *review.Request) {
			req.Evidence[review.RoleTests] = req.Evidence[review.RoleLicense]
		}, "must be distinct"},
		{"reviewer with a newline", func(t *testing.T, r *fixture.Release, req *review.Request) { req.Reviewer = "Ada\nEve" }, "NUL, CR and LF"},
		{"empty path", func(t *testing.T, r *fixture.Release, req *review.Request) { req.Path = "nope" }, "holds no files"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fixture.New(t)
			req := request(t, r)
			c.change(t, r, &req)
			_, err := review.New(req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestRecordValidation(t *testing.T) {
	r := fixture.New(t)
	cases := []struct {
		name   string
		change func(rec *review.Record)
		want   string
	}{
		{"not approved", func(rec *review.Record) { rec.Approved = false }, "approved is false"},
		{"same attempt twice", func(rec *review.Record) {
			rec.ReproductionAttemptDigest = rec.PrimaryAttemptDigest
		}, "are equal"},
		{"digest field disagrees with its artifact", func(rec *review.Record) {
			rec.LicenseEvidenceDigest = identity.MustH("x", "y").String()
		}, "artifacts.license_evidence.sha256"},
		{"artifact schema", func(rec *review.Record) { rec.Artifacts.TestEvidence.Schema = "x" }, "artifacts.test_evidence.schema"},
		{"short commit", func(rec *review.Record) { rec.ReviewCommit = "abc" }, "review_commit"},
		{"zero digest", func(rec *review.Record) { rec.CrownEventDigest = strings.Repeat("0", 64) }, "all-zero"},
		{"schema version", func(rec *review.Record) { rec.SchemaVersion = 2 }, "schema_version 2"},
		{"padded reviewer", func(rec *review.Record) { rec.Reviewer = " Ada" }, "padded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := *r.Record
			c.change(&rec)
			err := rec.Validate()
			if !errors.Is(err, review.ErrInvalidRecord) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	b, _ := r.Record.Marshal()
	if _, err := review.Parse([]byte(strings.Replace(string(b), `{"approved"`, `{ "approved"`, 1))); err == nil || !strings.Contains(err.Error(), "canonical") {
		t.Errorf("non-canonical record: %v", err)
	}
	if _, err := review.Parse([]byte(strings.Replace(string(b), `{"approved":true`, `{"approved":true,"extra":1`, 1))); err == nil {
		t.Errorf("record with an unknown field accepted")
	}
}

func TestCoverageIsOneToOne(t *testing.T) {
	r := fixture.New(t)
	other := *r.Record
	other.Reviewer = "Someone Else"
	empty := fixture.ReleaseManifest(t, nil)
	cases := []struct {
		name    string
		m       *stack.EngineReleaseManifest
		records []*review.Record
		want    string
	}{
		{"entry without record", r.Manifest, nil, "has no integration review record"},
		{"record covering nothing", empty, []*review.Record{r.Record}, "cover no entry"},
		{"record given twice", r.Manifest, []*review.Record{r.Record, r.Record}, "given twice"},
		{"record deriving another ref", r.Manifest, []*review.Record{&other}, "has no integration review record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := review.CheckCoverage(c.m, c.records)
			if !errors.Is(err, review.ErrCoverage) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	if got, err := review.CheckCoverage(r.Manifest, []*review.Record{r.Record}); err != nil || len(got) != 1 {
		t.Fatalf("coverage = %v, %v", got, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"approved":true}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := review.Parse(b)
		if err != nil {
			return
		}
		again, err := r.Marshal()
		if err != nil || (string(again) != string(b) && string(again[:len(again)-1]) != string(b)) {
			t.Fatalf("a parsed record does not re-encode to its bytes: %v", err)
		}
	})
}
