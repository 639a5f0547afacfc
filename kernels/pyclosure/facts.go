package pyclosure

import (
	"errors"
	"strings"
	"unsafe"

	"github.com/cacheon/engine/kernels/pyparse"
)

// Facts is everything the closure needs from one Python file, found by
// parsing it once: whether it parses, what the dynamic-import ban finds in
// it, and its import statements with their byte spans and positions.
// Facts depend only on the file's bytes (and on this package and the
// parser), never on its path or its bundle, so they can be kept by the
// content digest of the file (see FactsCache) and a file seen before is
// never parsed again.
type Facts struct {
	// Refusals are the file's own problems, in the order found: a syntax
	// error (then nothing else is known), or every dynamic-import finding.
	// Path is left empty: the same bytes may sit at any path.
	Refusals []Problem `json:"refusals"`
	// Imports are the import statements, in source order (nested ones
	// included), with everything resolution reads from them.
	Imports []ImportStmt `json:"imports"`
}

// ImportStmt is one `import` or `from ... import` statement.
type ImportStmt struct {
	// From marks `from <module> import <names>`; Level counts its leading
	// dots (0 for an absolute import) and Module is nil for `from . import x`.
	From   bool       `json:"from"`
	Level  int        `json:"level"`
	Module *ModuleRef `json:"module,omitempty"`
	// Line and Col are a from-import's start, where problems about it
	// are reported (0 for a plain import).
	Line  int     `json:"line"`
	Col   int     `json:"col"`
	Names []Alias `json:"names"`
}

// ModuleRef is a dotted module name and its byte span in the source.
type ModuleRef struct {
	Name  string `json:"name"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Alias is one imported name: `a.b` or `a.b as c` in an import, `x` or
// `x as y` in a from-import. Line and Col are the alias's start, where
// problems about a plain import are reported.
type Alias struct {
	Name ModuleRef `json:"name"`
	As   bool      `json:"as"`
	Line int       `json:"line"`
	Col  int       `json:"col"`
}

// moduleRef copies a name out of the tree: the tree's names are slices
// of the source, which Analyze does not own (nor keep).
func moduleRef(n *pyparse.DottedName) *ModuleRef {
	if n == nil {
		return nil
	}
	return &ModuleRef{Name: strings.Clone(n.Name), Start: n.Start, End: n.End}
}

// Analyze parses src and returns its facts. A file that does not parse
// is not an error: its facts hold the syntax error as their one refusal.
// Any other failure of the parser is returned (and such a result is never
// kept in a cache). src must not change while Analyze runs; nothing
// returned refers to it.
func Analyze(src []byte) (*Facts, error) { return analyze(src, false) }

// analyze is Analyze; with full set the ban walks every statement, quiet
// or not (differential tests compare the two).
func analyze(src []byte, full bool) (*Facts, error) {
	facts := &Facts{}
	// The imports are collected in the ban's own walk of the tree.
	b := &ban{full: full, visit: func(pf *pyparse.File, n pyparse.Node) {
		switch x := n.(type) {
		case *pyparse.Import:
			s := ImportStmt{}
			for _, a := range x.Names {
				s.Names = append(s.Names, alias(pf, a))
			}
			facts.Imports = append(facts.Imports, s)
		case *pyparse.ImportFrom:
			s := ImportStmt{From: true, Level: x.Level, Module: moduleRef(x.Module)}
			s.Line, s.Col = position(pf, x.Start)
			for _, a := range x.Names {
				s.Names = append(s.Names, alias(pf, a))
			}
			facts.Imports = append(facts.Imports, s)
		}
	}}
	// The parse reads src in place rather than from a copy, and hands
	// out the statements one at a time, reusing their memory: a copy of
	// every Python byte of a stack, or a tree of every file, costs more
	// than reading it. No node outlives its statement's walk, and every
	// string of the facts is copied out of the source (moduleRef; the
	// refusals are formatted anew).
	_, err := pyparse.ParseStatementsVersion("", unsafe.String(unsafe.SliceData(src), len(src)), TargetPython, b.statement)
	if err != nil {
		var se *pyparse.SyntaxError
		if errors.As(err, &se) {
			return &Facts{Refusals: []Problem{{Line: se.Pos.Line, Col: se.Pos.Col, Reason: "syntax error: " + se.Msg}}}, nil
		}
		return nil, err
	}
	facts.Refusals = b.findings()
	return facts, nil
}

func alias(pf *pyparse.File, a *pyparse.Alias) Alias {
	out := Alias{Name: *moduleRef(a.Name), As: a.AsName != nil}
	out.Line, out.Col = position(pf, a.Start)
	return out
}

func position(pf *pyparse.File, off int) (line, col int) {
	p := pf.Position(off)
	return p.Line, p.Col
}
