package bazeldeps

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var repoRef = regexp.MustCompile(`"@([A-Za-z0-9_]+)//`)

// ReferencedRepos returns the external Go module repositories that the
// BUILD files under root name, restricted to the modules in mods.
func ReferencedRepos(root string, mods []Module) ([]string, error) {
	known := map[string]bool{}
	for _, m := range mods {
		known[m.Repo] = true
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "bazel-")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "BUILD.bazel" && d.Name() != "BUILD" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range repoRef.FindAllSubmatch(data, -1) {
			if name := string(m[1]); known[name] {
				seen[name] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

const (
	useRepoStart = "use_repo(\n    go_deps,\n"
	useRepoEnd   = ")\n"
)

// RewriteUseRepo replaces the repository list of the go_deps use_repo call
// in a MODULE.bazel text, so bzlmod users see exactly the repositories our
// BUILD files name.
func RewriteUseRepo(module string, repos []string) (string, error) {
	start := strings.Index(module, useRepoStart)
	if start < 0 {
		return "", fmt.Errorf("MODULE.bazel: no %q block", strings.TrimSpace(useRepoStart))
	}
	bodyStart := start + len(useRepoStart)
	end := strings.Index(module[bodyStart:], useRepoEnd)
	if end < 0 {
		return "", fmt.Errorf("MODULE.bazel: use_repo(go_deps, ...) is not closed")
	}
	var b strings.Builder
	for _, r := range repos {
		fmt.Fprintf(&b, "    %q,\n", r)
	}
	return module[:bodyStart] + b.String() + module[bodyStart+end:], nil
}
