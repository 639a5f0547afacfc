// Package bazeldeps turns the external Go modules the project imports into
// Bazel repositories that build offline under the WORKSPACE of Bazel 4.2.
//
// gazelle's go_repository rule cannot bootstrap offline with the rule
// versions our Bazel accepts, and a single vendor/ tree would make our BUILD
// files name dependencies as //vendor/... labels that Bazel 7 users with
// bzlmod do not have. So the packages `go mod vendor` selects are split by
// module into one local repository each, named as gazelle's go_deps names
// them (github.com/spf13/cobra -> com_github_spf13_cobra). Our BUILD files
// then say @com_github_spf13_cobra//:cobra in both worlds.
package bazeldeps

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Module is one external module that contributes packages to the build.
type Module struct {
	Path    string // module path, e.g. github.com/spf13/cobra
	Version string
	Repo    string // Bazel repository name
}

// RepoName returns the Bazel repository name gazelle gives a module path:
// the host's labels reversed, then the path, with '.', '-' and '/' as '_'.
func RepoName(modulePath string) string {
	p := strings.ToLower(modulePath)
	parts := strings.Split(p, "/")
	host := strings.Split(parts[0], ".")
	for i, j := 0, len(host)-1; i < j; i, j = i+1, j-1 {
		host[i], host[j] = host[j], host[i]
	}
	name := strings.Join(append(host, parts[1:]...), "_")
	return strings.NewReplacer("-", "_", ".", "_", "~", "_").Replace(name)
}

// ParseModulesTxt reads vendor/modules.txt and returns the modules that
// provide at least one vendored package.
func ParseModulesTxt(r io.Reader) ([]Module, error) {
	var mods []Module
	var cur *Module
	used := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# "):
			f := strings.Fields(line[2:])
			if len(f) < 2 {
				return nil, fmt.Errorf("modules.txt: malformed module line %q", line)
			}
			if len(f) >= 4 && f[2] == "=>" {
				return nil, fmt.Errorf("modules.txt: module %s is replaced; replacements are not supported for offline builds", f[0])
			}
			mods = append(mods, Module{Path: f[0], Version: f[1], Repo: RepoName(f[0])})
			cur = &mods[len(mods)-1]
		case strings.HasPrefix(line, "##"), line == "":
		default:
			if cur == nil {
				return nil, fmt.Errorf("modules.txt: package %q before any module", line)
			}
			used[cur.Path] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []Module
	for _, m := range mods {
		if used[m.Path] {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// owner returns the module whose path is the longest component-wise prefix
// of the vendored directory dir, so files of nested modules land in the
// nested module's repository.
func owner(mods []Module, dir string) (Module, bool) {
	best, found := Module{}, false
	for _, m := range mods {
		if (dir == m.Path || strings.HasPrefix(dir, m.Path+"/")) && len(m.Path) > len(best.Path) {
			best, found = m, true
		}
	}
	return best, found
}

// Options configure Generate.
type Options struct {
	RepoRoot string // the project checkout (holds go.mod)
	Out      string // output directory: absolute, or relative to RepoRoot
	// Linked is where the workspace finds Out, relative to its root (the
	// local_repository paths deps.bzl names); "" means Out. The bootstrap
	// writes into the cache directory and links .cache/godeps to it.
	Linked  string
	Gazelle string // path of the gazelle binary
	Log     io.Writer
}

// buildFileNames are files modules ship that would conflict with ours.
var buildFileNames = map[string]bool{"BUILD": true, "BUILD.bazel": true, "WORKSPACE": true, "WORKSPACE.bazel": true, "MODULE.bazel": true}

func (o Options) linked() string {
	if o.Linked != "" {
		return o.Linked
	}
	return o.Out
}

// Generate vendors the modules, splits them into repositories under Out,
// runs gazelle in each and writes deps.bzl and the gazelle repository
// config. Out is replaced atomically.
func Generate(o Options) ([]Module, error) {
	out := o.Out
	if !filepath.IsAbs(out) {
		out = filepath.Join(o.RepoRoot, out)
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	tmp := outAbs + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	vendor := filepath.Join(tmp, "vendor")
	cmd := exec.Command("go", "mod", "vendor", "-o", vendor)
	cmd.Dir = o.RepoRoot
	cmd.Stdout, cmd.Stderr = o.Log, o.Log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go mod vendor: %w", err)
	}
	f, err := os.Open(filepath.Join(vendor, "modules.txt"))
	if err != nil {
		return nil, err
	}
	mods, err := ParseModulesTxt(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	if err := splitVendor(vendor, tmp, mods); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(vendor); err != nil {
		return nil, err
	}
	repoConfig := filepath.Join(tmp, "WORKSPACE.gazelle")
	if err := os.WriteFile(repoConfig, []byte(gazelleRepoConfig(mods)), 0o644); err != nil {
		return nil, err
	}
	for _, m := range mods {
		dir := filepath.Join(tmp, m.Repo)
		ws := fmt.Sprintf("workspace(name = %q)\n", m.Repo)
		if err := os.WriteFile(filepath.Join(dir, "WORKSPACE"), []byte(ws), 0o644); err != nil {
			return nil, err
		}
		if err := runGazelle(o, dir, m.Path, repoConfig); err != nil {
			return nil, fmt.Errorf("gazelle in %s: %w", m.Path, err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "deps.bzl"), []byte(depsBzl(mods, o.linked())), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "BUILD.bazel"), nil, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "WORKSPACE"), []byte("workspace(name = \"cacheon_go_deps\")\n"), 0o644); err != nil {
		return nil, err
	}
	// The final config names the final location.
	if err := os.WriteFile(repoConfig, []byte(gazelleRepoConfig(mods)), 0o644); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(outAbs); err != nil {
		return nil, err
	}
	return mods, os.Rename(tmp, outAbs)
}

func splitVendor(vendor, out string, mods []Module) error {
	return filepath.WalkDir(vendor, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(vendor, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "modules.txt" || buildFileNames[d.Name()] {
			return nil
		}
		m, ok := owner(mods, path.Dir(rel))
		if !ok {
			return fmt.Errorf("vendored file %s belongs to no module", rel)
		}
		dst := filepath.Join(out, m.Repo, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(rel, m.Path), "/")))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.Rename(p, dst)
	})
}

func runGazelle(o Options, dir, prefix, repoConfig string) error {
	cmd := exec.Command(o.Gazelle,
		"-repo_root="+dir,
		"-go_prefix="+prefix,
		// import_alias also emits go_default_library aliases, the names
		// rules_go's own BUILD files use for golang.org/x repositories.
		"-go_naming_convention=import_alias",
		"-go_naming_convention_external=import",
		"-external=external",
		"-proto=disable_global",
		"-repo_config="+repoConfig,
		dir,
	)
	cmd.Dir = dir
	// gazelle asks the go command about imports it cannot place; keep it
	// away from our module so it never edits go.mod.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=off")
	outb, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, outb)
	}
	return nil
}

func gazelleRepoConfig(mods []Module) string {
	var b strings.Builder
	b.WriteString("# Generated by tools/bootstrap.sh: tells gazelle which repository holds each Go module.\n")
	for _, m := range mods {
		fmt.Fprintf(&b, "go_repository(name = %q, importpath = %q, version = %q)\n", m.Repo, m.Path, m.Version)
	}
	return b.String()
}

func depsBzl(mods []Module, out string) string {
	var b strings.Builder
	b.WriteString("# Generated by tools/bootstrap.sh from go.mod and the project's imports.\n")
	b.WriteString("\"\"\"External Go modules as local repositories (see docs/build.md).\"\"\"\n\n")
	b.WriteString("def cacheon_go_repositories():\n")
	b.WriteString("    \"\"\"Declares one repository per external Go module.\"\"\"\n")
	for _, m := range mods {
		fmt.Fprintf(&b, "    native.local_repository(name = %q, path = %q)  # %s %s\n", m.Repo, path.Join(out, m.Repo), m.Path, m.Version)
	}
	if len(mods) == 0 {
		b.WriteString("    pass\n")
	}
	return b.String()
}

// ListModules returns every module of the build list of the module at
// root (`go list -m all`), main module excluded.
func ListModules(root string) ([]Module, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{if not .Main}}{{.Path}} {{.Version}}{{end}}", "all")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m all: %w", err)
	}
	var mods []Module
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			mods = append(mods, Module{Path: f[0], Version: f[1], Repo: RepoName(f[0])})
		}
	}
	return mods, nil
}
