package bundle

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Patch is a parsed dependency patch: a unified text diff that only
// modifies existing files or creates new ones.
type Patch struct {
	Files []PatchFile
}

// PatchFile is one file section of a Patch.
type PatchFile struct {
	Path    string // dependency-relative path the section writes
	New     bool   // created by the patch (--- /dev/null)
	Hunks   int
	Added   int
	Removed int
}

// ErrPatchForm is wrapped by every ParsePatch failure.
var ErrPatchForm = errors.New("not a strict text diff")

// ParsePatch parses text as a unified diff (plain or git-style) and
// rejects everything except text modifications and new files: binary
// patches, renames, copies, deletions and mode changes are refused, as
// are absolute or escaping paths, hunks whose line counts disagree with
// their headers, and a patch that touches no file or one file twice.
func ParsePatch(text string) (*Patch, error) {
	lines := strings.SplitAfter(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	pp := &patchParser{lines: lines}
	return pp.parse()
}

type patchParser struct {
	lines []string
	i     int
}

func (pp *patchParser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s: %w", pp.i+1, fmt.Sprintf(format, args...), ErrPatchForm)
}

func trimEOL(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// forbiddenGitHeaders are extended git headers for operations a dep patch
// may not perform.
var forbiddenGitHeaders = []string{
	"deleted file mode", "rename from", "rename to", "copy from", "copy to",
	"similarity index", "dissimilarity index", "old mode", "new mode", "GIT binary patch",
}

func (pp *patchParser) parse() (*Patch, error) {
	p := &Patch{}
	seen := map[string]bool{}
	for pp.i < len(pp.lines) {
		line := trimEOL(pp.lines[pp.i])
		switch {
		case strings.HasPrefix(line, "Binary files ") || strings.HasPrefix(line, "GIT binary patch"):
			return nil, pp.errorf("binary patches are not allowed")
		case strings.HasPrefix(line, "new file mode "):
			if mode := strings.TrimPrefix(line, "new file mode "); mode != "100644" && mode != "100755" {
				return nil, pp.errorf("new file mode %s is not a regular file", mode)
			}
			pp.i++
		case hasAnyPrefix(line, forbiddenGitHeaders):
			return nil, pp.errorf("%q: only modifications and new files are allowed", line)
		case strings.HasPrefix(line, "--- "):
			f, err := pp.fileSection()
			if err != nil {
				return nil, err
			}
			if seen[f.Path] {
				return nil, pp.errorf("file %q is patched twice", f.Path)
			}
			seen[f.Path] = true
			p.Files = append(p.Files, f)
		case strings.HasPrefix(line, "@@"):
			return nil, pp.errorf("hunk without a ---/+++ file header")
		default:
			// Commentary, "diff --git" and "index" lines carry no operation.
			pp.i++
		}
	}
	if len(p.Files) == 0 {
		return nil, fmt.Errorf("patch touches no file: %w", ErrPatchForm)
	}
	return p, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func (pp *patchParser) fileSection() (PatchFile, error) {
	oldName := headerPath(strings.TrimPrefix(trimEOL(pp.lines[pp.i]), "--- "))
	pp.i++
	if pp.i >= len(pp.lines) || !strings.HasPrefix(pp.lines[pp.i], "+++ ") {
		return PatchFile{}, pp.errorf("--- header not followed by +++")
	}
	newName := headerPath(strings.TrimPrefix(trimEOL(pp.lines[pp.i]), "+++ "))
	if newName == "/dev/null" {
		return PatchFile{}, pp.errorf("deleting a file is not allowed")
	}
	f := PatchFile{New: oldName == "/dev/null"}
	target, err := patchTargetPath(newName)
	if err != nil {
		return PatchFile{}, pp.errorf("%v", err)
	}
	if !f.New {
		src, err := patchTargetPath(oldName)
		if err != nil {
			return PatchFile{}, pp.errorf("%v", err)
		}
		if src != target {
			return PatchFile{}, pp.errorf("--- %s and +++ %s differ: renames are not allowed", src, target)
		}
	}
	f.Path = target
	pp.i++
	for pp.i < len(pp.lines) && strings.HasPrefix(pp.lines[pp.i], "@@") {
		added, removed, err := pp.hunk(f.New)
		if err != nil {
			return PatchFile{}, err
		}
		f.Hunks++
		f.Added += added
		f.Removed += removed
	}
	if f.Hunks == 0 {
		return PatchFile{}, pp.errorf("file %q has no hunk", f.Path)
	}
	return f, nil
}

// headerPath drops the tab-separated timestamp some diff tools append.
func headerPath(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// patchTargetPath strips the a/ or b/ prefix and checks the path stays
// inside the dependency tree.
func patchTargetPath(name string) (string, error) {
	if strings.HasPrefix(name, "a/") || strings.HasPrefix(name, "b/") {
		name = name[2:]
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("patched path %q must be a non-empty relative path", name)
	}
	clean := path.Clean(name)
	if clean != name || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("patched path %q is not a clean path inside the dependency", name)
	}
	return clean, nil
}

func (pp *patchParser) hunk(isNew bool) (added, removed int, err error) {
	header := trimEOL(pp.lines[pp.i])
	oldStart, oldCount, newCount, ok := parseHunkHeader(header)
	if !ok {
		return 0, 0, pp.errorf("malformed hunk header %q", header)
	}
	if isNew && (oldStart != 0 || oldCount != 0) {
		return 0, 0, pp.errorf("a new file's hunk must start at -0,0")
	}
	pp.i++
	oldSeen, newSeen := 0, 0
	for pp.i < len(pp.lines) && (oldSeen < oldCount || newSeen < newCount) {
		line := pp.lines[pp.i]
		switch line[0] {
		case ' ':
			oldSeen++
			newSeen++
		case '-':
			oldSeen++
			removed++
		case '+':
			newSeen++
			added++
		case '\\':
			// "\ No newline at end of file" belongs to the previous line.
		case '\n', '\r':
			// Some tools strip the space of an empty context line.
			oldSeen++
			newSeen++
		default:
			return 0, 0, pp.errorf("unexpected line in hunk: %q", trimEOL(line))
		}
		pp.i++
	}
	if oldSeen != oldCount || newSeen != newCount {
		return 0, 0, pp.errorf("hunk %q ends early: %d/%d old and %d/%d new lines", header, oldSeen, oldCount, newSeen, newCount)
	}
	for pp.i < len(pp.lines) && strings.HasPrefix(pp.lines[pp.i], "\\") {
		pp.i++
	}
	return added, removed, nil
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@ ...".
func parseHunkHeader(h string) (oldStart, oldCount, newCount int, ok bool) {
	rest, found := strings.CutPrefix(h, "@@ -")
	if !found {
		return 0, 0, 0, false
	}
	oldPart, rest, found := strings.Cut(rest, " +")
	if !found {
		return 0, 0, 0, false
	}
	newPart, _, found := strings.Cut(rest, " @@")
	if !found {
		return 0, 0, 0, false
	}
	oldStart, oldCount, ok1 := parseRange(oldPart)
	_, newCount, ok2 := parseRange(newPart)
	return oldStart, oldCount, newCount, ok1 && ok2
}

func parseRange(s string) (start, count int, ok bool) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	count = 1
	if hasCount {
		count, err = strconv.Atoi(b)
		if err != nil || count < 0 {
			return 0, 0, false
		}
	}
	return start, count, true
}

// DepPolicyDir is the only part of a pinned dependency a patch may touch:
// validator policy names it per dependency.
var depPolicy = map[string]string{"flashinfer": "flashinfer/data/csrc/fused_moe/"}

// CheckDepPolicy applies the dependency-patch policy to a loaded manifest:
// only registered dependencies may be patched, and only below their
// allowed directory. Load must have parsed the patches.
func CheckDepPolicy(m *Manifest) error {
	for _, dp := range m.DepPatches {
		prefix, ok := depPolicy[dp.Target]
		key := fmt.Sprintf("dep_patches[%d]", dp.Index)
		if !ok {
			return newError(ErrDepPatch, FileName, key+".target", "dependency %q may not be patched", dp.Target)
		}
		if dp.Diff == nil {
			return newError(ErrDepPatch, FileName, key+".path", "patch not loaded")
		}
		for _, f := range dp.Diff.Files {
			if !strings.HasPrefix(f.Path, prefix) || len(f.Path) == len(prefix) {
				return newError(ErrDepPatch, CleanPath(dp.Path), "", "patches %q outside %s*, the only part of %s a patch may touch", f.Path, prefix, dp.Target)
			}
		}
	}
	return nil
}
