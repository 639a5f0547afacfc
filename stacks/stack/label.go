package stack

import (
	"fmt"
	"path"
	"strings"
)

// Label is a Bazel label of this repository, in canonical form
// "//package:name". A directory label such as
// "//kernels/contributions:silu_and_mul_triton" names the target that the
// BUILD file of kernels/contributions declares for the directory
// kernels/contributions/silu_and_mul_triton: bundle directories hold no
// BUILD file of their own, so their bytes (and content hash) are exactly
// what a miner submits and a scan accepts. A file label such as
// "//catalog:targets.hcl" names one file of a package.
type Label struct {
	Package string // "kernels/contributions", "" for the root package
	Name    string // "silu_and_mul_triton"

	explicitName bool // written as //package:name rather than //package
}

// ParseLabel parses "//pkg", "//pkg:name" or "@//pkg:name" (the main
// repository). Labels of other repositories ("@repo//...") and relative
// labels (":name") are rejected: a stack names sources of this repository.
func ParseLabel(s string) (Label, error) {
	rest := strings.TrimPrefix(s, "@")
	if !strings.HasPrefix(rest, "//") {
		if strings.HasPrefix(s, "@") {
			return Label{}, fmt.Errorf("label %q: only labels of the main repository (//...) are allowed", s)
		}
		return Label{}, fmt.Errorf("label %q: must start with //", s)
	}
	rest = rest[2:]
	pkg, name, hasName := strings.Cut(rest, ":")
	if !hasName {
		name = path.Base(pkg)
	}
	if pkg != "" && (path.Clean(pkg) != pkg || strings.HasPrefix(pkg, "/") || pkg == "." || strings.HasPrefix(pkg, "../") || pkg == "..") {
		return Label{}, fmt.Errorf("label %q: package %q is not a clean relative path", s, pkg)
	}
	for _, part := range strings.Split(pkg, "/") {
		if part == ".." || part == "." {
			return Label{}, fmt.Errorf("label %q: package must not contain %q", s, part)
		}
	}
	if name == "" || name == "." || strings.ContainsAny(name, ":\x00") {
		return Label{}, fmt.Errorf("label %q: missing or invalid target name", s)
	}
	if path.Clean(name) != name || strings.HasPrefix(name, "../") || name == ".." {
		return Label{}, fmt.Errorf("label %q: target name %q is not a clean relative path", s, name)
	}
	return Label{Package: pkg, Name: name, explicitName: hasName}, nil
}

// IsLabel reports whether s is written as a label rather than a path.
func IsLabel(s string) bool {
	return strings.HasPrefix(s, "//") || strings.HasPrefix(s, "@")
}

// String returns the canonical form "//package:name".
func (l Label) String() string { return "//" + l.Package + ":" + l.Name }

// Short returns "//package" when the name repeats the package's last
// component, else the canonical form.
func (l Label) Short() string {
	if l.Package != "" && path.Base(l.Package) == l.Name {
		return "//" + l.Package
	}
	return l.String()
}

// DirPath is the repository-relative directory a directory label names:
// the subdirectory Name of Package ("//kernels/contributions:silu" names
// kernels/contributions/silu). A label written without ":name" names a
// package, not a directory beside its BUILD file, and is refused with the
// spelling to use instead.
func (l Label) DirPath() (string, error) {
	if !l.explicitName {
		parent, dir := path.Split(l.Package)
		return "", fmt.Errorf("label %s names a package, not a bundle directory: write //%s:%s (the target the BUILD file of %s declares for the directory %s; bundle directories hold no BUILD file)",
			l.Short(), strings.TrimSuffix(parent, "/"), dir, strings.TrimSuffix(parent, "/")+"/", l.Package)
	}
	if strings.Contains(l.Name, "/") {
		return "", fmt.Errorf("label %s does not name a bundle directory: the name must be one directory beside the BUILD file", l)
	}
	return path.Join(l.Package, l.Name), nil
}

// FilePath is the repository-relative path of the file a label names.
func (l Label) FilePath() string { return path.Join(l.Package, l.Name) }
