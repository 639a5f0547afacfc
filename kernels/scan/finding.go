// Package scan is the static policy scan of a kernel bundle: rules over the
// syntax tree of every Python file (banned imports, builtins, dynamic
// attribute access, process and loader primitives, pickle loads, dunder
// introspection), rules over the bundle tree (links, compiled objects,
// undeclared CUDA sources and patches, stray files) and an advisory
// compilability check for Triton kernels.
//
// The scan is a tripwire, not a sandbox: candidate code runs only inside
// the isolated worker, and the scan never imports or runs it. It follows
// the upstream rule set and adds a few rules, each under its own id, that
// close bypasses of those rules (aliasing through imports, string names
// passed to getattr, star imports, frame introspection, rebinding a banned
// builtin's name), and bans modules
// by family: each banned root with its C-accelerated twin, dotted
// families inside allowed packages, banned modules reached as attributes
// and attributes fetched by name through operator and inspect helpers.
// Sources are parsed for the worker's Python (TargetPython), and a bundle
// over the intake limits is refused with inspection's error before any of
// it is parsed.
package scan

import (
	"fmt"
	"sort"

	"github.com/cacheon/engine/kernels/bundle"
)

// Rule identifies the check that produced a finding. Ids are stable: tools
// and tests match on them.
type Rule string

// Source rules (upstream §4.3 and our extensions, marked ext).
const (
	RuleSyntax             Rule = "syntax-error"           // the file does not parse as Python 3
	RuleBannedImport       Rule = "banned-import"          // import of a banned module root
	RuleBannedImportName   Rule = "banned-import-name"     // ext: from-import of a banned attribute name
	RuleStarImport         Rule = "star-import"            // ext: `from os import *` and the like
	RuleBannedCall         Rule = "banned-call"            // eval, exec, open, ... called by bare name
	RuleBannedBuiltinRef   Rule = "banned-builtin-ref"     // ext: such a builtin referenced without being called
	RuleBannedBuiltinBind  Rule = "banned-builtin-binding" // ext: such a builtin's name bound, rebound or declared global
	RuleDynamicAttribute   Rule = "dynamic-attribute"      // getattr/setattr/delattr with a non-literal name
	RuleNamespaceSubscript Rule = "namespace-subscript"    // __builtins__[...], __globals__[...], __dict__[...]
	RuleBannedAttribute    Rule = "banned-attribute"       // .system, .popen, .fork, ... (call or bare)
	RulePickleLoad         Rule = "pickle-load"            // .load/.loads on pickle-like modules
	RuleDunderAttribute    Rule = "dunder-attribute"       // .__globals__, .__class__, ...
	RuleIntrospection      Rule = "introspection"          // ext: frames, sys.modules, __builtins__ by name
	RuleHarnessImport      Rule = "harness-import"         // ext: import of the validator's own packages (cacheon_worker, ...)
	RuleFileTooLarge       Rule = "file-too-large"         // an inspectable file above the intake limit
	RuleBrokenKernel       Rule = "broken-kernel"          // advisory: host-only call inside a @jit kernel
)

// Tree rules.
const (
	RuleSymlink         Rule = "symlink"          // a link anywhere in the bundle
	RuleSpecialFile     Rule = "special-file"     // a device, pipe or socket
	RuleBinary          Rule = "binary-artifact"  // .so/.o/.a/.dylib/.bin/.pyc
	RuleUndeclaredCUDA  Rule = "undeclared-cuda"  // .cu/.cuh no op declares
	RuleUndeclaredPatch Rule = "undeclared-patch" // .patch/.diff no dep_patches row declares
	RuleUnexpectedFile  Rule = "unexpected-file"  // not source, declared input or benign metadata
	RuleUnreadable      Rule = "unreadable"       // a file that could not be read
)

// Finding is one problem at a place in the bundle. Line and Col are 1-based
// (Col counts characters); both are 0 for findings about a whole file.
type Finding struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Rule    Rule   `json:"rule"`
	Message string `json:"message"`
}

// Advisory reports whether the finding is the compilability heuristic,
// which flags a likely-broken kernel rather than a policy violation.
func (f Finding) Advisory() bool { return f.Rule == RuleBrokenKernel }

func (f Finding) String() string {
	if f.Line == 0 {
		return fmt.Sprintf("%s: %s: %s", f.Path, f.Rule, f.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", f.Path, f.Line, f.Col, f.Rule, f.Message)
}

// sortFindings orders findings by path (Python path order, as bundle
// listings use), then position, then rule.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Path != b.Path {
			return bundle.PathLess(a.Path, b.Path)
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return a.Rule < b.Rule
	})
}
