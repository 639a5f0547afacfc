package catalog

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/cacheon/engine/internal/canonjson"
	"github.com/cacheon/engine/internal/identity"
)

// The default catalog's identities, computed by the upstream toolchain.
// The catalog digest is pinned in full; the others as the spec quotes them.
const goldenCatalogDigest = "171302dde69a419264958499d07cd57f84e84516dee0e89c40a630f807a8152b"

func loadDefault(t testing.TB) *Catalog {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	return c
}

func TestDefaultSnapshotMatchesUpstreamBytes(t *testing.T) {
	raw, err := os.ReadFile("testdata/default-catalog.snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := canonjson.Parse(raw)
	if err != nil {
		t.Fatalf("parse fixture: %v", err)
	}
	want, err := canonjson.Marshal(parsed)
	if err != nil {
		t.Fatalf("canonicalize fixture: %v", err)
	}
	got := loadDefault(t).Snapshot()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("snapshot differs from upstream at byte %d:\n got: …%s\nwant: …%s", i, window(got, i), window(want, i))
	}
	if d := identity.MustH(identity.DomainTargetCatalog, parsed).String(); d != goldenCatalogDigest {
		t.Fatalf("fixture digest = %s, want %s", d, goldenCatalogDigest)
	}
}

func window(b []byte, i int) string {
	lo, hi := max(i-60, 0), min(i+60, len(b))
	return string(b[lo:hi])
}

func TestDefaultDigestsMatchGoldens(t *testing.T) {
	c := loadDefault(t)
	if got := c.Digest().String(); got != goldenCatalogDigest {
		t.Errorf("catalog digest = %s, want %s", got, goldenCatalogDigest)
	}
	checkAbbrev(t, "artifact provider registry digest", c.ArtifactProviderRegistryDigest().String(), "dcef3613…14ca")
	specs := map[string]string{
		"activation.silu_and_mul":            "ad6ce779…5350",
		"attention.decode":                   "1bd11d28…6e20",
		"attention.msa_block_score":          "84b86554…d5a6",
		"attention.msa_prefill_block_score":  "36180581…b4c5",
		"attention.sdpa":                     "dd667097…3715",
		"collective.all_reduce":              "758feede…270a",
		"collective.ar_residual_rmsnorm":     "0b0784df…ab76",
		"collective.moe_epilogue.v1":         "21177ee8…105d",
		"collective.moe_finalize_ar_rmsnorm": "77f90ced…0b19",
		"moe.fused_experts":                  "1a532422…b168",
		"moe.fused_experts_reduce":           "9898b77a…78b9",
		"norm.rmsnorm":                       "5baaa199…788d",
	}
	if got := len(c.TargetIDs()); got != len(specs) {
		t.Errorf("default catalog has %d targets, want %d", got, len(specs))
	}
	for id, want := range specs {
		got, ok := c.TargetSpecDigest(id)
		if !ok {
			t.Errorf("no target-spec digest for %s", id)
			continue
		}
		checkAbbrev(t, "target-spec digest of "+id, got.String(), want)
	}
	rules := c.CompositionRules()
	if len(rules) != 1 {
		t.Fatalf("default catalog has %d composition rules, want 1", len(rules))
	}
	checkAbbrev(t, "binding contract digest", rules[0].BindingContractDigest.String(), "abc63bc0…d925")
}

// checkAbbrev compares a digest with a prefix…suffix abbreviation.
func checkAbbrev(t *testing.T, what, got, abbrev string) {
	t.Helper()
	prefix, suffix, ok := strings.Cut(abbrev, "…")
	if !ok {
		t.Fatalf("bad abbreviation %q", abbrev)
	}
	if !identity.IsHex64(got) || !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) {
		t.Errorf("%s = %s, want %s", what, got, abbrev)
	}
}

// The atomic contract digest is defined over the members' contract
// digests, in member order.
func TestAtomicContractDigestOverMemberContracts(t *testing.T) {
	c := loadDefault(t)
	atomic, _ := c.Target("collective.moe_epilogue.v1")
	var members []string
	for _, m := range atomic.Members {
		d, ok := c.ContractDigest(m)
		if !ok {
			t.Fatalf("no contract digest for member %s", m)
		}
		members = append(members, d.String())
	}
	want := identity.MustH(identity.DomainAtomicTargetContract, map[string]any{
		"schema_version":          1,
		"target_id":               atomic.ID,
		"atomic_semantics_id":     atomic.AtomicSemanticsID,
		"member_contract_digests": members,
	}).String()
	if got, _ := c.ContractDigest(atomic.ID); got.String() != want {
		t.Errorf("atomic contract digest = %s, want %s", got, want)
	}
}

// Identities come from the projection, never from the HCL bytes.
func TestReformattingKeepsDigest(t *testing.T) {
	src := string(DefaultSource())
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		b.WriteString("  " + line + "\n\n")
	}
	b.WriteString("# trailing comment\n")
	c, diags := Parse([]byte(b.String()), "reformatted.hcl")
	if diags.HasErrors() {
		t.Fatalf("reformatted catalog: %v", diags)
	}
	if c.Digest().String() != goldenCatalogDigest {
		t.Errorf("digest after reformatting = %s, want %s", c.Digest(), goldenCatalogDigest)
	}
	noncanonical := strings.Replace(string(DefaultSource()), `min_overlap = "0.9"`, `min_overlap = "0.900"`, 1)
	if noncanonical == string(DefaultSource()) {
		t.Fatal("fixture edit did not apply")
	}
	c, diags = Parse([]byte(noncanonical), "noncanonical.hcl")
	if diags.HasErrors() {
		t.Fatalf("noncanonical decimal: %v", diags)
	}
	if c.Digest().String() != goldenCatalogDigest {
		t.Errorf("digest with \"0.900\" = %s, want the canonical \"0.9\" digest %s", c.Digest(), goldenCatalogDigest)
	}
}
