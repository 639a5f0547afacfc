package materialize

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/cacheon/engine/catalog"
	"github.com/cacheon/engine/internal/identity"
	"github.com/cacheon/engine/kernels/contribution"
	"github.com/cacheon/engine/stacks/stack"
)

// d64 is the 64-hex digest of repeated c, as text; dg is the same digest
// typed.
func d64(c string) string { return strings.Repeat(c, 64) }

func dg(c string) identity.Digest { return identity.MustParse(d64(c)) }

func defaultCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testOptions(t testing.TB) Options {
	return Options{
		Catalog: defaultCatalog(t),
		Payload: contribution.PayloadOptions{Closure: contribution.PythonClosure},
	}
}

// copyBundle copies a repository bundle into a fresh directory.
func copyBundle(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join("..", "..", "kernels", "contributions", name)
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// built is an evaluation manifest with the directory of each entry.
type built struct {
	manifest    *stack.EvaluationStackManifest
	dirs        map[string]string
	inspections map[string]*contribution.Inspection
}

func (b built) resolve(target string, _ stack.Ref) (string, error) { return b.dirs[target], nil }

// evaluationStack inspects each bundle dir and builds the manifest over
// them, as stack assembly does.
func evaluationStack(t testing.TB, opts Options, dirs ...string) built {
	t.Helper()
	b := built{dirs: map[string]string{}, inspections: map[string]*contribution.Inspection{}}
	var refs []stack.Ref
	for _, dir := range dirs {
		in, err := contribution.Inspect(dir, contribution.Options{Catalog: opts.Catalog, Payload: opts.Payload})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := contribution.NewProposalRef(in, dg("4"))
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
		b.dirs[in.Target.TargetID] = dir
		b.inspections[in.Target.TargetID] = in
	}
	m, err := stack.NewEvaluationStackManifest(dg("1"), dg("2"), dg("3"), opts.Catalog.Digest(), opts.Catalog.Snapshot(), refs)
	if err != nil {
		t.Fatal(err)
	}
	b.manifest = m
	return b
}

func readTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPristineStackTree(t *testing.T) {
	opts := testOptions(t)
	b := evaluationStack(t, opts)
	dest := filepath.Join(t.TempDir(), "engine")
	res, err := Materialize(b.manifest, b.resolve, dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	files := readTree(t, dest)
	if len(files) != 1 {
		t.Fatalf("pristine tree holds %v, want only the tree metadata", files)
	}
	want := `{
  "contributions": [],
  "files": [],
  "materializer_policy_version": 2,
  "runtime_manifest": null,
  "stack_digest": "` + res.StackDigest.String() + `"
}
`
	if files[TreeMetadataName] != want {
		t.Errorf("tree metadata:\n%s\nwant:\n%s", files[TreeMetadataName], want)
	}
	if !strings.HasPrefix(res.StackDigest.String(), "") || len(res.Contributions) != 0 {
		t.Errorf("result %+v", res)
	}
}

func TestTwoContributionTree(t *testing.T) {
	opts := testOptions(t)
	silu, rms := copyBundle(t, "silu_and_mul_triton"), copyBundle(t, "rmsnorm_triton")
	b := evaluationStack(t, opts, silu, rms)
	dest := filepath.Join(t.TempDir(), "engine")
	res, err := Materialize(b.manifest, b.resolve, dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contributions) != 2 {
		t.Fatalf("contributions %+v", res.Contributions)
	}
	files := readTree(t, dest)
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	siluNS, rmsNS := res.Contributions[0].Namespace, res.Contributions[1].Namespace
	want := []string{
		rmsNS + "/__init__.py",
		rmsNS + "/kernels/rmsnorm.py",
		siluNS + "/__init__.py",
		siluNS + "/kernels/silu_and_mul.py",
		"entries/" + emittedName(rmsNS, "kernels/rmsnorm.py") + ".py",
		"entries/" + emittedName(siluNS, "kernels/silu_and_mul.py") + ".py",
		"manifest.toml",
		"metadata/" + emittedName(rmsNS, "metadata/rmsnorm.json") + ".json",
		"metadata/" + emittedName(siluNS, "metadata/silu_and_mul.json") + ".json",
		TreeMetadataName,
	}
	sort.Strings(want)
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("tree files:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	orig, _ := os.ReadFile(filepath.Join(silu, "kernels", "silu_and_mul.py"))
	if files[siluNS+"/kernels/silu_and_mul.py"] != string(orig) {
		t.Errorf("a kernel without bundle-local imports must be emitted unchanged")
	}
	if got := files["entries/"+emittedName(siluNS, "kernels/silu_and_mul.py")+".py"]; got != "from "+siluNS+".kernels.silu_and_mul import silu_and_mul as silu_and_mul\n" {
		t.Errorf("silu shim = %q", got)
	}
	var rt struct {
		BundleID string           `toml:"bundle_id"`
		Ops      []map[string]any `toml:"ops"`
	}
	if err := toml.Unmarshal([]byte(files["manifest.toml"]), &rt); err != nil {
		t.Fatal(err)
	}
	// Active-target order: no composition rule relates the two, so ids
	// decide.
	if len(rt.Ops) != 2 || rt.Ops[0]["slot"] != "activation.silu_and_mul" || rt.Ops[1]["slot"] != "norm.rmsnorm" {
		t.Errorf("runtime ops %+v", rt.Ops)
	}
	for _, op := range rt.Ops {
		if _, ok := files[op["source"].(string)]; !ok {
			t.Errorf("runtime op source %v is not in the tree", op["source"])
		}
		if _, ok := files[op["metadata"].(string)]; !ok {
			t.Errorf("runtime op metadata %v is not in the tree", op["metadata"])
		}
	}
	again, err := Verify(dest)
	if err != nil || again.TreeDigest != res.TreeDigest {
		t.Errorf("Verify = %v, %v; want tree %s", again, err, res.TreeDigest)
	}

	// A fresh materialization from other copies at other paths is the
	// same tree, byte for byte.
	silu2, rms2 := copyBundle(t, "silu_and_mul_triton"), copyBundle(t, "rmsnorm_triton")
	b2 := built{manifest: b.manifest, dirs: map[string]string{"activation.silu_and_mul": silu2, "norm.rmsnorm": rms2}}
	dest2 := filepath.Join(t.TempDir(), "other-name")
	res2, err := Materialize(b2.manifest, b2.resolve, dest2, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res2.TreeDigest != res.TreeDigest {
		t.Errorf("tree digest %s at another path, want %s", res2.TreeDigest, res.TreeDigest)
	}
	files2 := readTree(t, dest2)
	for p, c := range files {
		if files2[p] != c {
			t.Errorf("%s differs between materializations", p)
		}
	}
}

// Changing one target keeps every other contribution's namespace and
// bytes: the candidate tree is a fresh full materialization, not a diff.
func TestUnrelatedContributionsKeepTheirBytes(t *testing.T) {
	opts := testOptions(t)
	rms := copyBundle(t, "rmsnorm_triton")
	b := evaluationStack(t, opts, copyBundle(t, "silu_and_mul_triton"), rms)
	c := evaluationStack(t, opts, copyBundle(t, "silu_and_mul_torch"), rms)
	bDest, cDest := filepath.Join(t.TempDir(), "B"), filepath.Join(t.TempDir(), "C")
	bRes, err := Materialize(b.manifest, b.resolve, bDest, opts)
	if err != nil {
		t.Fatal(err)
	}
	cRes, err := Materialize(c.manifest, c.resolve, cDest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if bRes.TreeDigest == cRes.TreeDigest {
		t.Fatal("candidate tree equals incumbent tree")
	}
	bFiles, cFiles := readTree(t, bDest), readTree(t, cDest)
	rmsNS := bRes.Contributions[1].Namespace
	if cRes.Contributions[1].Namespace != rmsNS {
		t.Fatalf("rmsnorm namespace moved: %s -> %s", rmsNS, cRes.Contributions[1].Namespace)
	}
	shared := 0
	for p, content := range bFiles {
		if strings.Contains(p, rmsNS) {
			shared++
			if cFiles[p] != content {
				t.Errorf("%s changed although its target did not", p)
			}
		}
	}
	if shared != 4 {
		t.Errorf("%d rmsnorm files, want 4 (init, kernel, shim, metadata)", shared)
	}
}

func TestMaterializeRejects(t *testing.T) {
	opts := testOptions(t)
	tests := []struct {
		name  string
		setup func(t *testing.T) (stack.Manifest, Resolver, string, Options)
		rule  string
		want  string
	}{
		{"bundle edited after the stack was built", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			dir := copyBundle(t, "silu_and_mul_triton")
			b := evaluationStack(t, opts, dir)
			os.WriteFile(filepath.Join(dir, "README.md"), []byte("edited"), 0o644)
			return b.manifest, b.resolve, filepath.Join(t.TempDir(), "out"), opts
		}, RuleIdentity, "the bundle changed since the stack was built"},
		{"symlink in a bundle", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			dir := copyBundle(t, "silu_and_mul_triton")
			b := evaluationStack(t, opts, dir)
			os.Symlink("/etc/hostname", filepath.Join(dir, "kernels", "link.py"))
			return b.manifest, b.resolve, filepath.Join(t.TempDir(), "out"), opts
		}, RuleSourceEntry, "a symbolic link"},
		{"missing source directory", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			dir := copyBundle(t, "silu_and_mul_triton")
			b := evaluationStack(t, opts, dir)
			os.RemoveAll(dir)
			return b.manifest, b.resolve, filepath.Join(t.TempDir(), "out"), opts
		}, RuleSourceEntry, "no such file"},
		{"destination exists", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			b := evaluationStack(t, opts, copyBundle(t, "silu_and_mul_triton"))
			return b.manifest, b.resolve, t.TempDir(), opts
		}, RuleDestination, "destination exists"},
		{"destination inside a source", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			dir := copyBundle(t, "silu_and_mul_triton")
			b := evaluationStack(t, opts, dir)
			return b.manifest, b.resolve, filepath.Join(dir, "engine"), opts
		}, RuleDestination, "overlaps the source"},
		{"destination reached through a link into a source", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			dir := copyBundle(t, "silu_and_mul_triton")
			b := evaluationStack(t, opts, dir)
			link := filepath.Join(t.TempDir(), "link")
			os.Symlink(filepath.Join(dir, "kernels"), link)
			return b.manifest, b.resolve, filepath.Join(link, "engine"), opts
		}, RuleDestination, "overlaps the source"},
		{"entry resolved to another bundle", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			b := evaluationStack(t, opts, copyBundle(t, "silu_and_mul_triton"))
			b.dirs["activation.silu_and_mul"] = copyBundle(t, "silu_and_mul_torch")
			return b.manifest, b.resolve, filepath.Join(t.TempDir(), "out"), opts
		}, RuleIdentity, "content hash is"},
		{"catalog other than the stack's", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			b := evaluationStack(t, opts, copyBundle(t, "silu_and_mul_triton"))
			src := strings.Replace(string(catalog.DefaultSource()), `contract         = "activation.silu_and_mul"`,
				`contract         = "activation.silu_and_mul"
  requires         = ["norm.rmsnorm"]`, 1)
			other, diags := catalog.Parse([]byte(src), "other.hcl")
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			o := opts
			o.Catalog = other
			return b.manifest, b.resolve, filepath.Join(t.TempDir(), "out"), o
		}, RuleStack, "built against catalog"},
		{"integration records for an evaluation stack", func(t *testing.T) (stack.Manifest, Resolver, string, Options) {
			b := evaluationStack(t, opts)
			o := opts
			o.Records = []contribution.IntegrationRecord{nil}
			return b.manifest, b.resolve, filepath.Join(t.TempDir(), "out"), o
		}, RuleRecords, "takes no integration records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, resolve, dest, o := tt.setup(t)
			before, _ := os.ReadDir(filepath.Dir(dest))
			_, err := Materialize(m, resolve, dest, o)
			var e *Error
			if !errors.As(err, &e) || e.Rule != tt.rule || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Materialize = %v, want rule %s mentioning %q", err, tt.rule, tt.want)
			}
			after, _ := os.ReadDir(filepath.Dir(dest))
			if len(after) != len(before) {
				t.Errorf("the destination's directory went from %d to %d entries: partial output left behind", len(before), len(after))
			}
		})
	}
}

func TestReleaseStackNeedsRecords(t *testing.T) {
	opts := testOptions(t)
	dir := copyBundle(t, "silu_and_mul_triton")
	in, err := contribution.Inspect(dir, contribution.Options{Catalog: opts.Catalog, Payload: opts.Payload})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := contribution.IntegratedSourceTreeDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := fakeRecord{target: in.Target.TargetID, spec: in.Target.TargetSpecDigest, tree: tree, payload: in.SelectedPayloadDigest}
	ref, err := contribution.IntegratedRefFromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stack.NewEngineReleaseManifest(dg("1"), dg("2"), opts.Catalog.Digest(), opts.Catalog.Snapshot(), []stack.Ref{ref})
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(string, stack.Ref) (string, error) { return dir, nil }
	if _, err := Materialize(m, resolve, filepath.Join(t.TempDir(), "out"), opts); !IsRejection(err) || !strings.Contains(err.Error(), "no integration record") {
		t.Fatalf("release without records = %v", err)
	}
	other := rec
	other.attribution = dg("8")
	o := opts
	o.Records = []contribution.IntegrationRecord{other}
	if _, err := Materialize(m, resolve, filepath.Join(t.TempDir(), "out"), o); !IsRejection(err) || !strings.Contains(err.Error(), "the record derives") {
		t.Fatalf("release with a record for another ref = %v", err)
	}
	o.Records = []contribution.IntegrationRecord{rec}
	res, err := Materialize(m, resolve, filepath.Join(t.TempDir(), "out"), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Contributions[0].SourceKind != SourceIntegrated || res.Contributions[0].SourceDigest != tree {
		t.Errorf("release contribution row %+v", res.Contributions[0])
	}
}

// fakeRecord is an approved integration record with the fields an
// integrated reference reads; the review package's own record is tested
// there.
type fakeRecord struct {
	target                           string
	spec, tree, payload, attribution identity.Digest
}

func (r fakeRecord) Digest() (identity.Digest, error)            { return dg("9"), nil }
func (r fakeRecord) Approved() bool                              { return true }
func (r fakeRecord) TargetID() string                            { return r.target }
func (r fakeRecord) TargetSpecDigest() identity.Digest           { return r.spec }
func (r fakeRecord) IntegratedSourceTreeDigest() identity.Digest { return r.tree }
func (r fakeRecord) SelectedPayloadDigest() identity.Digest      { return r.payload }
func (r fakeRecord) AttributionDigest() identity.Digest {
	if !r.attribution.IsZero() {
		return r.attribution
	}
	return dg("4")
}
