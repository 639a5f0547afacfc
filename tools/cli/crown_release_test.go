package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/testtree"
	"github.com/cacheon/engine/release/build"
	"github.com/cacheon/engine/release/descriptor"
	"github.com/cacheon/engine/release/layer"
	fixture "github.com/cacheon/engine/release/releasetest"
	"github.com/cacheon/engine/release/verify"
	"github.com/cacheon/engine/settlement/ledger"
	"github.com/cacheon/engine/tools/cli/enginecli"
)

// gitCommit commits everything under repo (a new repository) and
// returns the commit id.
func gitCommit(t *testing.T, repo string) string {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "integrate"}, {"rev-parse", "HEAD"}} {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		if args[0] == "rev-parse" {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

// reviewerEvidence writes the five reviewer documents under dir and
// returns them as --evidence flags.
func reviewerEvidence(t *testing.T, dir string) []string {
	t.Helper()
	var flags []string
	for _, r := range []string{"license_evidence", "provenance_evidence", "security_review", "compatibility_evidence", "test_evidence"} {
		p := filepath.Join(dir, r+".json")
		if err := os.WriteFile(p, []byte(`{"evidence":"`+r+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		flags = append(flags, "--evidence", r+"="+p)
	}
	return flags
}

// withContribution returns the release stack HCL src with one
// contribution block added at the end of its stack block.
func withContribution(t *testing.T, src, target, source, attribution, record string) string {
	t.Helper()
	end := strings.LastIndex(src, "}")
	if end < 0 {
		t.Fatalf("no stack block in the release stack:\n%s", src)
	}
	block := "\n  contribution \"" + target + "\" {\n" +
		"    source                    = \"" + source + "\"\n" +
		"    attribution_digest        = \"" + attribution + "\"\n" +
		"    integration_record_digest = \"" + record + "\"\n" +
		"  }\n"
	return src[:end] + block + src[end:]
}

// TestCrownToVerifiedRelease walks a crown to a verified release through
// the command line, each step the command its guide names: `settle`
// crowns a proposal in the ledger; `release review --ledger --target`
// binds the ledger's crown to the crowned source committed to the
// repository; the release stack (a copy of stacks/release.hcl) gains the
// contribution with the record's attribution and digest; `stack
// materialize --integration-record`, `release build`, `release sign` and
// `release verify --json` then ship it, and the verification reports the
// integrated contribution covered by exactly one approved record. A
// release whose image holds a second record, or none, fails the
// verifier's integrations check, and the builder refuses to build one.
func TestCrownToVerifiedRelease(t *testing.T) {
	f, in := settleFixture(t, true)
	if code, out, errOut := run(t, "", "settle", "--ledger", f.Path, "--workspace", f.WS); code != 0 {
		t.Fatalf("settle: exit %d\n%s%s", code, out, errOut)
	}
	const target, path, label = "norm.rmsnorm", "kernels/contributions/rmsnorm_torch", "//kernels/contributions:rmsnorm_torch"

	// The reviewer commits the bytes the ledger published (the ones the
	// qualifications measured) to the repository, here the workspace.
	ws := f.WS
	src := filepath.Join(ws, filepath.FromSlash(path))
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	testtree.Copy(t, ledger.Publications{Dir: f.Path + ".publications"}.Path(in.Proposal.ContentHash), src)
	testtree.Copy(t, repoDir("stacks/release.hcl"), filepath.Join(ws, "stacks", "release.hcl"))
	commit := gitCommit(t, ws)

	dir := t.TempDir()
	evidence := reviewerEvidence(t, dir)
	review := func(reviewer, out string) (int, string, string) {
		args := []string{"release", "review", "--ledger", f.Path, "--target", target, "--repo", ws, "--commit", commit,
			"--path", path, "--reviewer", reviewer, "--out", out, "--json"}
		return run(t, "", append(args, evidence...)...)
	}
	recordPath := filepath.Join(dir, "reviews", "rmsnorm.json")
	if err := os.MkdirAll(filepath.Dir(recordPath), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := review("Ada Reviewer <ada@example.com>", recordPath)
	if code != 0 {
		t.Fatalf("release review --ledger: exit %d\n%s%s", code, out, errOut)
	}
	var reviewed struct {
		RecordDigest        string `json:"record_digest"`
		IntegratedRefDigest string `json:"integrated_ref_digest"`
		CrownEventSequence  int64  `json:"crown_event_sequence"`
	}
	if err := json.Unmarshal([]byte(out), &reviewed); err != nil || reviewed.CrownEventSequence != 1 {
		t.Fatalf("review --json %s (%v)", out, err)
	}
	var record struct {
		AttributionDigest          string `json:"attribution_digest"`
		ProposalContributionDigest string `json:"proposal_contribution_digest"`
	}
	raw, err := os.ReadFile(recordPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &record); err != nil {
		t.Fatal(err)
	}
	if record.ProposalContributionDigest != in.Candidate.Proposal {
		t.Fatalf("the record binds proposal %s, the ledger crowned %s", record.ProposalContributionDigest, in.Candidate.Proposal)
	}

	// The release engineer adds the contribution to the release stack.
	releaseHCL := filepath.Join(ws, "stacks", "release.hcl")
	before, err := os.ReadFile(releaseHCL)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(releaseHCL, []byte(withContribution(t, string(before), target, label, record.AttributionDigest, reviewed.RecordDigest)), 0o644); err != nil {
		t.Fatal(err)
	}
	tree, manifest := filepath.Join(dir, "out", "release-tree"), filepath.Join(dir, "out", "release-manifest.json")
	code, out, errOut = run(t, "", "stack", "materialize", releaseHCL, "--workspace", ws, "--out", tree,
		"--manifest-out", manifest, "--integration-record", recordPath, "--json")
	if code != 0 {
		t.Fatalf("stack materialize: exit %d\n%s%s", code, out, errOut)
	}
	var materialized struct {
		Kind          string `json:"kind"`
		Contributions []struct {
			TargetID string `json:"target_id"`
		} `json:"contributions"`
	}
	if err := json.Unmarshal([]byte(out), &materialized); err != nil || materialized.Kind != "release" ||
		len(materialized.Contributions) != 1 || materialized.Contributions[0].TargetID != target {
		t.Fatalf("stack materialize --json %s (%v)", out, err)
	}

	// Build, sign and verify the release.
	substrate := filepath.Join(dir, "out", "substrate")
	fixture.WriteFiles(t, substrate, fixture.SubstrateFiles)
	_, receipt := fixture.Model(t, dir)
	entrypoint := filepath.Join(dir, "out", "cacheon")
	if err := os.WriteFile(entrypoint, []byte("#!/bin/sh\necho stand-in for the static cacheon binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	inputs := build.Inputs{EngineTree: tree, ReleaseManifest: manifest, Reviews: []string{recordPath}, Substrate: substrate,
		ModelReceipt: receipt, Entrypoint: entrypoint, Platform: "linux/amd64", Name: "cacheon-engine:1.1", Epoch: 1767225600, Compression: layer.Gzip}
	buildArgs := func(out string, reviews ...string) []string {
		args := []string{"release", "build", "--engine-tree", inputs.EngineTree, "--release-manifest", inputs.ReleaseManifest,
			"--substrate", inputs.Substrate, "--model-receipt", inputs.ModelReceipt, "--entrypoint", inputs.Entrypoint,
			"--name", inputs.Name, "--source-date-epoch", "1767225600", "--out", out}
		for _, r := range reviews {
			args = append(args, "--review", r)
		}
		return args
	}
	layout := filepath.Join(dir, "release-1.1")
	if code, out, errOut = run(t, "", append(buildArgs(layout, recordPath), "--json")...); code != 0 {
		t.Fatalf("release build: exit %d\n%s%s", code, out, errOut)
	}
	var built struct {
		ImageDigest   string `json:"image_digest"`
		Contributions int    `json:"contributions"`
	}
	if err := json.Unmarshal([]byte(out), &built); err != nil || built.Contributions != 1 {
		t.Fatalf("release build --json %s (%v)", out, err)
	}
	keys := filepath.Join(dir, "release-2026")
	if code, _, errOut = run(t, "", "release", "keygen", "--out", keys); code != 0 {
		t.Fatalf("release keygen: %s", errOut)
	}
	sign := func(layout string) {
		t.Helper()
		if code, out, errOut := run(t, "", "release", "sign", "--key", keys+".key", layout); code != 0 {
			t.Fatalf("release sign %s: exit %d\n%s%s", layout, code, out, errOut)
		}
	}
	sign(layout)
	code, out, errOut = run(t, "", "release", "verify", "--json", "--key", keys+".pub", layout)
	rep := oneReport(t, out)
	if code != 0 || !rep.Verified {
		t.Fatalf("release verify: exit %d\n%s%s", code, out, errOut)
	}
	var contributions struct {
		ImageDigest   string   `json:"image_digest"`
		Contributions []string `json:"contributions"`
	}
	if err := json.Unmarshal([]byte(out), &contributions); err != nil {
		t.Fatal(err)
	}
	if contributions.ImageDigest != built.ImageDigest || strings.Join(contributions.Contributions, ",") != target {
		t.Errorf("verified image %s with contributions %v, want %s with [%s]", contributions.ImageDigest, contributions.Contributions, built.ImageDigest, target)
	}
	integrations := false
	for _, c := range rep.Checks {
		if c.Name == verify.CheckIntegrations {
			integrations = c.OK && c.Detail == "1 integrated contribution(s), each covered by exactly one approved review record"
		}
	}
	if !integrations {
		t.Errorf("verify checks %+v, want %s passing for the one contribution", rep.Checks, verify.CheckIntegrations)
	}

	// A second, different review of the same crown (another reviewer) is
	// its own record: it derives another integrated reference, so it
	// covers no entry of the release stack, which names the first.
	second := filepath.Join(dir, "reviews", "rmsnorm-grace.json")
	code, out, errOut = review("Grace Reviewer <grace@example.com>", second)
	if code != 0 {
		t.Fatalf("second review: exit %d\n%s%s", code, out, errOut)
	}
	var secondDoc struct {
		RecordDigest string `json:"record_digest"`
	}
	if err := json.Unmarshal([]byte(out), &secondDoc); err != nil || secondDoc.RecordDigest == reviewed.RecordDigest {
		t.Fatalf("second review %s (%v): want a record other than %s", out, err, reviewed.RecordDigest)
	}
	secondBytes, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}

	// The builder refuses both releases before writing anything.
	for _, tc := range []struct {
		name    string
		reviews []string
		want    string
	}{
		{"no record", nil, "has no integration review record deriving it"},
		{"a second record", []string{recordPath, second}, "cover no entry of the release stack"},
	} {
		t.Run("build with "+tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "release")
			code, stdout, errOut := run(t, "", buildArgs(out, tc.reviews...)...)
			if code != enginecli.ExitRejected || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d\n%s%s\nwant exit %d naming %q", code, stdout, errOut, enginecli.ExitRejected, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused build left %s", out)
			}
		})
	}

	// A compromised builder that ships them anyway (the checked plan with
	// its release layer edited, then signed by the release key) is
	// refused by the verifier's integrations check.
	for _, tc := range []struct {
		name string
		edit func(entries []layer.Entry) []layer.Entry
		want string
	}{
		{"no record", func(entries []layer.Entry) []layer.Entry {
			var keep []layer.Entry
			for _, e := range entries {
				if !strings.HasPrefix(e.Path, descriptor.ReviewDir+"/") {
					keep = append(keep, e)
				}
			}
			return keep
		}, "has no integration review record deriving it"},
		{"a second record", func(entries []layer.Entry) []layer.Entry {
			return append(entries, layer.Entry{Path: descriptor.ReviewPath(secondDoc.RecordDigest), Data: secondBytes})
		}, secondDoc.RecordDigest + " (" + target + ") cover no entry of the release stack"},
	} {
		t.Run("verify with "+tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "release")
			p, err := build.Prepare(inputs, nil)
			if err != nil {
				t.Fatal(err)
			}
			rel := &p.Layers[len(p.Layers)-1]
			if rel.Role != build.RoleRelease {
				t.Fatalf("last layer %s, want %s", rel.Role, build.RoleRelease)
			}
			rel.Entries = tc.edit(rel.Entries)
			if _, err := p.Write(out, nil); err != nil {
				t.Fatal(err)
			}
			sign(out)
			code, stdout, errOut := run(t, "", "release", "verify", "--json", "--key", keys+".pub", out)
			rep := oneReport(t, stdout)
			last := rep.Checks[len(rep.Checks)-1]
			if code != enginecli.ExitRejected || rep.Verified || last.Name != verify.CheckIntegrations || last.OK || !strings.Contains(last.Detail, tc.want) {
				t.Errorf("exit %d, last check %+v\n%s\nwant %s failing with %q", code, last, errOut, verify.CheckIntegrations, tc.want)
			}
		})
	}
}
