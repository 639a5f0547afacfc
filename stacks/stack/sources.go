package stack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Sources says where the catalog and contribution sources of a stack file
// are on disk. There are two modes. In workspace mode labels resolve
// against the repository root and paths against the stack file's
// directory. In explicit mode (what a hermetic build action uses) the
// caller maps every label to a directory and names the catalog file, and
// nothing else is looked up.
type Sources struct {
	// Workspace is the repository root that "//..." labels resolve
	// against. FindWorkspace finds it from the stack file.
	Workspace string
	// Catalog, when set, is the catalog file to use instead of the one
	// the stack file names.
	Catalog string
	// Contributions, when non-nil, selects explicit mode: it maps the
	// canonical label of every contribution source to its directory.
	Contributions map[Label]string
	// AllowUnused accepts explicit directories for labels the stack file
	// does not name. Only generated stacks want it: a planned candidate
	// names all but the replaced entries of the incumbent, and the build
	// hands it the incumbent's full set.
	AllowUnused bool
}

// ParseContributionFlag parses "LABEL=DIR" as given on a command line.
func ParseContributionFlag(s string) (Label, string, error) {
	lbl, dir, ok := strings.Cut(s, "=")
	if !ok || lbl == "" || dir == "" {
		return Label{}, "", fmt.Errorf("--contribution %q: want LABEL=DIR, e.g. //kernels/contributions:silu_and_mul_triton=path/to/dir", s)
	}
	l, err := ParseLabel(lbl)
	if err != nil {
		return Label{}, "", fmt.Errorf("--contribution %q: %w", s, err)
	}
	if _, err := l.DirPath(); err != nil {
		return Label{}, "", fmt.Errorf("--contribution %q: %w", s, err)
	}
	return l, dir, nil
}

// workspaceMarkers identify a repository root.
var workspaceMarkers = []string{"MODULE.bazel", "WORKSPACE", "WORKSPACE.bazel"}

// FindWorkspace returns the nearest directory at or above start that holds
// a Bazel workspace marker (MODULE.bazel, WORKSPACE or WORKSPACE.bazel).
func FindWorkspace(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for {
		for _, m := range workspaceMarkers {
			if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no repository root (a directory with %s) at or above %s: pass --workspace DIR, or give --catalog and --contribution for every label", strings.Join(workspaceMarkers, ", "), start)
		}
		dir = parent
	}
}

func (s Sources) explicit() bool { return s.Contributions != nil }

// Check reports, before anything is read, every mismatch between the
// stack file and explicit sources: a label the file names that has no
// directory, a directory given for a label the file does not name, and a
// path source that an explicit (hermetic) build cannot resolve.
func (s Sources) Check(f *File) error {
	if !s.explicit() {
		return nil
	}
	var problems []string
	named := map[Label]bool{}
	for _, c := range f.Contributions {
		pos := c.Range("source")
		if !IsLabel(c.Source) {
			problems = append(problems, fmt.Sprintf("%s: contribution %q has the path source %q; a build with explicit inputs resolves labels only: write source = \"//<parent>:<bundle dir>\"", pos, c.TargetID, c.Source))
			continue
		}
		l, err := ParseLabel(c.Source)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", pos, err))
			continue
		}
		named[l] = true
		if _, ok := s.Contributions[l]; !ok {
			problems = append(problems, fmt.Sprintf("%s: contribution %q names %s but no directory was given for it: pass --contribution %s=DIR (in Bazel, add %s to the stack rule's contributions)", pos, c.TargetID, l.Short(), l.Short(), l.Short()))
		}
	}
	var extra []string
	for l := range s.Contributions {
		if !named[l] && !s.AllowUnused {
			extra = append(extra, l.Short())
		}
	}
	sort.Strings(extra)
	for _, l := range extra {
		problems = append(problems, fmt.Sprintf("--contribution %s=...: %s names no contribution with source %q: remove it (in Bazel, from the stack rule's contributions) or add a contribution block with that source", l, f.Filename, l))
	}
	if s.Catalog == "" {
		problems = append(problems, fmt.Sprintf("%s: a build with explicit inputs needs the catalog file too: pass --catalog FILE", f.CatalogRange))
	}
	if len(problems) > 0 {
		return errors.New("stack file and given sources disagree:\n  " + strings.Join(problems, "\n  "))
	}
	return nil
}

// CatalogPath returns the catalog file the stack uses.
func (s Sources) CatalogPath(f *File) (string, error) {
	if s.Catalog != "" {
		return s.Catalog, nil
	}
	if s.explicit() {
		return "", fmt.Errorf("%s: no --catalog given", f.CatalogRange)
	}
	return s.resolve(f, f.Catalog, f.CatalogRange.String(), false)
}

// ContributionDir returns the directory of c's source.
func (s Sources) ContributionDir(f *File, c Contribution) (string, error) {
	pos := c.Range("source").String()
	if s.explicit() {
		l, err := ParseLabel(c.Source)
		if err != nil {
			return "", fmt.Errorf("%s: %w", pos, err)
		}
		dir, ok := s.Contributions[l]
		if !ok {
			return "", fmt.Errorf("%s: no --contribution %s=DIR given", pos, l.Short())
		}
		return dir, nil
	}
	return s.resolve(f, c.Source, pos, true)
}

func (s Sources) resolve(f *File, src, pos string, dir bool) (string, error) {
	if !IsLabel(src) {
		if filepath.IsAbs(src) {
			return src, nil
		}
		return filepath.Join(filepath.Dir(f.Filename), filepath.FromSlash(src)), nil
	}
	l, err := ParseLabel(src)
	if err != nil {
		return "", fmt.Errorf("%s: %w", pos, err)
	}
	rel := l.FilePath()
	if dir {
		if rel, err = l.DirPath(); err != nil {
			return "", fmt.Errorf("%s: %w", pos, err)
		}
	}
	ws := s.Workspace
	if ws == "" {
		if ws, err = FindWorkspace(filepath.Dir(f.Filename)); err != nil {
			return "", fmt.Errorf("%s: resolving %s: %w", pos, src, err)
		}
	}
	return filepath.Join(ws, filepath.FromSlash(rel)), nil
}
