package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/identity"
)

// weightsExample is the emissions reference's worked example.
var weightsExample = []string{
	"weights", "project",
	"--policy", repoDir("docs/examples/weights/policy.json"),
	"--claims", repoDir("docs/examples/weights/claims.json"),
	"--block", "50000",
	"--metagraph", repoDir("docs/examples/weights/members.json"),
	"--validator", "validator",
}

func TestWeightsProjectJSON(t *testing.T) {
	code, out, errOut := run(t, "", append(weightsExample, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		FormatVersion *int    `json:"format_version"`
		PolicyDigest  *string `json:"policy_digest"`
		Weights       []struct {
			Hotkey string `json:"hotkey"`
			PPM    uint64 `json:"ppm"`
		} `json:"weights"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.FormatVersion == nil || *doc.FormatVersion != 1 || doc.PolicyDigest == nil || len(*doc.PolicyDigest) != 64 {
		t.Fatalf("format_version or policy_digest missing:\n%s", out)
	}
	var sum uint64
	for i, w := range doc.Weights {
		if i > 0 && doc.Weights[i-1].Hotkey >= w.Hotkey {
			t.Fatalf("weights not sorted by hotkey:\n%s", out)
		}
		sum += w.PPM
	}
	if sum != 1_000_000 {
		t.Fatalf("weights sum to %d", sum)
	}
}

func TestWeightsProjectRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	example := func(name string) string {
		b, err := os.ReadFile(repoDir("docs/examples/weights/" + name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	policy := example("policy.json")
	claims := example("claims.json")
	args := func(policyPath, claimsPath, block, validator string) []string {
		return []string{"weights", "project", "--policy", policyPath, "--claims", claimsPath, "--block", block, "--metagraph", repoDir("docs/examples/weights/members.json"), "--validator", validator}
	}
	goodPolicy := write("policy.json", policy)
	goodClaims := write("claims.json", claims)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"a crown newer than the block", args(goodPolicy, goodClaims, "49999", "validator"), 2, "crown is newer than the projection block"},
		{"a bad policy field", args(write("bad-policy.json", strings.Replace(policy, `"half_life_blocks": 7200`, `"half_life_blocks": 0`, 1)), goodClaims, "50000", "validator"), 2, "bad-policy.json: invalid emissions policy: half_life_blocks: 0 is outside"},
		{"live discovery with the pool disabled", args(write("no-pool.json", strings.Replace(policy, `"discovery_pool_ppm": 100000`, `"discovery_pool_ppm": 0`, 1)), goodClaims, "50000", "validator"), 2, "live discovery claims while the discovery pool is disabled"},
		{"a stale claim", args(goodPolicy, write("stale.json", staleClaims(t, claims)), "50000", "validator"), 2, "standing claim is stale or mismatched"},
		{"a validator outside the metagraph", args(goodPolicy, goodClaims, "50000", "carol"), 2, "validator hotkey is absent from the metagraph"},
		{"a missing claims file", args(goodPolicy, filepath.Join(dir, "absent.json"), "50000", "validator"), 1, "absent.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q (stdout %s)", code, errOut, tt.code, tt.stderr, out)
			}
			if code != 2 {
				return
			}
			// With --json the refusal is one JSON document too.
			code, out, _ = run(t, "", append(tt.args, "--json")...)
			var doc struct {
				OK    *bool  `json:"ok"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 2 || doc.OK == nil || *doc.OK || !strings.Contains(doc.Error, tt.stderr) {
				t.Fatalf("--json refusal: exit %d, %v:\n%s", code, err, out)
			}
		})
	}
}

// staleClaims re-specifies the example's rms_norm target in the arena
// list, so its standing claim is under a superseded spec.
func staleClaims(t *testing.T, claims string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(claims), &doc); err != nil {
		t.Fatal(err)
	}
	for _, a := range doc["arenas"].([]any) {
		for _, e := range a.(map[string]any)["targets"].([]any) {
			if e := e.(map[string]any); e["target_id"] == "rms_norm" {
				e["target_spec_digest"] = strings.Repeat("ab", 32)
			}
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The emissions reference's worked example is the command's real output:
// each "$ cacheon weights project" block of the page is run as written and
// compared with what the page shows.
func TestEmissionsDocExample(t *testing.T) {
	doc, err := os.ReadFile(repoDir("docs/reference/emissions.md"))
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "$ cacheon weights project "
	blocks := strings.Split(string(doc), prompt)[1:]
	if len(blocks) != 2 {
		t.Fatalf("the page has %d worked examples, want the text and the --json one", len(blocks))
	}
	for _, block := range blocks {
		line, shown, _ := strings.Cut(block, "\n")
		shown = shown[:strings.Index(shown, "```")]
		args := []string{"weights", "project"}
		for _, a := range strings.Fields(line) {
			if strings.HasPrefix(a, "docs/") {
				a = repoDir(a)
			}
			args = append(args, a)
		}
		code, out, errOut := run(t, "", args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", line, code, errOut)
		}
		if out != shown {
			t.Fatalf("docs/reference/emissions.md shows for %s\n%s\nbut the command prints\n%s", line, shown, out)
		}
	}
	// The page says the policy digest is what cacheon digest derives.
	code, digest, errOut := run(t, "", "digest", "--domain", string(identity.DomainEconomicsPolicy), repoDir("docs/examples/weights/policy.json"))
	if code != 0 {
		t.Fatalf("digest: exit %d: %s", code, errOut)
	}
	if want := "has digest\n`" + strings.TrimSpace(digest) + "`"; !strings.Contains(string(doc), want) {
		t.Fatalf("the page does not give the example policy's digest %s", digest)
	}
}
