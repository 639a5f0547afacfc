package bazeldeps

import (
	"strings"
	"testing"
)

func TestRepoNameMatchesGazelle(t *testing.T) {
	tests := map[string]string{
		"github.com/spf13/cobra":         "com_github_spf13_cobra",
		"golang.org/x/crypto":            "org_golang_x_crypto",
		"google.golang.org/protobuf":     "org_golang_google_protobuf",
		"gopkg.in/yaml.v3":               "in_gopkg_yaml_v3",
		"sigs.k8s.io/yaml":               "io_k8s_sigs_yaml",
		"github.com/hashicorp/hcl/v2":    "com_github_hashicorp_hcl_v2",
		"github.com/go-openapi/strfmt":   "com_github_go_openapi_strfmt",
		"github.com/BurntSushi/toml":     "com_github_burntsushi_toml",
		"cloud.google.com/go/compute/md": "com_google_cloud_go_compute_md",
	}
	for in, want := range tests {
		if got := RepoName(in); got != want {
			t.Errorf("RepoName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseModulesTxt(t *testing.T) {
	const txt = `# github.com/a/b v1.0.0
## explicit; go 1.20
github.com/a/b
github.com/a/b/sub
# github.com/unused/mod v0.1.0
## explicit
# github.com/a/b/nested v0.2.0
github.com/a/b/nested/pkg
`
	mods, err := ParseModulesTxt(strings.NewReader(txt))
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 2 || mods[0].Path != "github.com/a/b" || mods[1].Path != "github.com/a/b/nested" {
		t.Fatalf("modules = %+v", mods)
	}
	if m, _ := owner(mods, "github.com/a/b/nested/pkg"); m.Path != "github.com/a/b/nested" {
		t.Fatalf("nested package owned by %s", m.Path)
	}
	if m, _ := owner(mods, "github.com/a/b/sub"); m.Path != "github.com/a/b" {
		t.Fatalf("sub package owned by %s", m.Path)
	}
	if _, ok := owner(mods, "github.com/a/bc"); ok {
		t.Fatal("a path sharing only a string prefix was given an owner")
	}
	if _, err := ParseModulesTxt(strings.NewReader("# github.com/x/y v1 => ../y v0\n")); err == nil {
		t.Fatal("a replaced module was accepted")
	}
}

func TestRewriteUseRepo(t *testing.T) {
	in := "x\nuse_repo(\n    go_deps,\n    \"old\",\n)\ny\n"
	got, err := RewriteUseRepo(in, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "x\nuse_repo(\n    go_deps,\n    \"a\",\n    \"b\",\n)\ny\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := RewriteUseRepo("nothing here", nil); err == nil {
		t.Fatal("missing use_repo block accepted")
	}
}
