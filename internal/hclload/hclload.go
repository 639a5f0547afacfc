// Package hclload bounds what an HCL source file may cost before and after
// hcl's parser sees it. hclsyntax parses recursively and has no depth
// limit of its own, so a file of nested brackets exhausts the goroutine
// stack with a fatal error no recover can catch, and evaluating nested
// for expressions multiplies the sizes of their collections. Every HCL
// file this repository reads (the target catalog, stack files) goes
// through Check before hclsyntax parses it and through CheckExpressions
// before any expression is evaluated.
package hclload

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// The limits every HCL file of the repository is held to. The default
// catalog is about 18 KB with at most four levels of nesting; stack files
// are smaller still.
const (
	// MaxBytes bounds the size of one source file.
	MaxBytes = 1 << 20
	// MaxDepth bounds the nesting of brackets, braces, parentheses,
	// strings, template interpolations and heredocs, counting each
	// unary or conditional operator of an unfinished expression and
	// each open %{if} or %{for} directive as one more level, since
	// hclsyntax recurses on those too.
	MaxDepth = 64
)

// Limit names which bound a refused file broke.
type Limit string

const (
	LimitSize       Limit = "size"
	LimitDepth      Limit = "depth"
	LimitExpression Limit = "expression"
)

// ErrTooLarge is wrapped by ReadFile when a file exceeds MaxBytes.
var ErrTooLarge = errors.New("HCL source exceeds the size limit")

type limitExtra struct{ limit Limit }

// LimitOf returns the limit a diagnostic from this package reports.
func LimitOf(d *hcl.Diagnostic) (Limit, bool) {
	e, ok := hcl.DiagnosticExtra[limitExtra](d)
	return e.limit, ok
}

func refusal(limit Limit, rng hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  rng.Ptr(),
		Extra:    limitExtra{limit},
	}
}

// ReadFile reads name from fsys, reading no more than MaxBytes+1 bytes so
// an oversized file is refused without being held in memory.
func ReadFile(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, name)
}

func readLimited(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%s: %w of %d bytes", name, ErrTooLarge, MaxBytes)
	}
	return data, nil
}

// frame kinds of the pre-scan.
const (
	frameBrace   = iota // { in code: a block body or an object
	frameBrack          // [
	frameParen          // (
	frameInterp         // ${ or %{ inside a template, closed by }
	frameString         // a quoted string template
	frameHeredoc        // a heredoc template
)

type frame struct {
	kind   int
	ops    int    // unary and conditional operators of the unfinished expression
	marker []byte // heredoc end marker
	sol    bool   // heredoc: at the start of a line
}

// Check refuses src before it is parsed when it is larger than MaxBytes or
// nests deeper than MaxDepth. It is a single byte-level pass that knows
// HCL's comments, quoted strings, escapes, template sequences and
// heredocs, so brackets inside strings and comments do not count. The
// count is conservative: it may count a level hclsyntax does not recurse
// on, never the other way round.
func Check(src []byte, filename string) hcl.Diagnostics {
	if len(src) > MaxBytes {
		start := hcl.Pos{Line: 1, Column: 1, Byte: 0}
		return hcl.Diagnostics{refusal(LimitSize, hcl.Range{Filename: filename, Start: start, End: start}, "File too large",
			fmt.Sprintf("The file is %d bytes; the limit is %d bytes.", len(src), MaxBytes))}
	}
	s := scanner{src: src, filename: filename, line: 1, col: 1}
	if d := s.run(); d != nil {
		return hcl.Diagnostics{d}
	}
	return nil
}

type scanner struct {
	src      []byte
	filename string
	pos      int
	line     int
	col      int
	frames   []frame
	fileOps  int // operators at file level
	depth    int // len(frames) + every frame's ops + fileOps
	prev     byte
}

func (s *scanner) here() hcl.Pos { return hcl.Pos{Line: s.line, Column: s.col, Byte: s.pos} }

// advance moves over n bytes, keeping line and column (in characters).
func (s *scanner) advance(n int) {
	for end := min(s.pos+n, len(s.src)); s.pos < end; s.pos++ {
		switch c := s.src[s.pos]; {
		case c == '\n':
			s.line++
			s.col = 1
		case !utf8.RuneStart(c):
		default:
			s.col++
		}
	}
}

func (s *scanner) tooDeep(start hcl.Pos) *hcl.Diagnostic {
	end := s.here()
	return refusal(LimitDepth, hcl.Range{Filename: s.filename, Start: start, End: end}, "Nesting too deep",
		fmt.Sprintf("Expressions here nest more than %d levels deep (brackets, braces, parentheses, strings, templates, heredocs and unary or conditional operators); no file this loader reads needs that many.", MaxDepth))
}

func (s *scanner) push(f frame, n int) *hcl.Diagnostic {
	start := s.here()
	s.advance(n)
	s.frames = append(s.frames, f)
	s.depth++
	if s.depth > MaxDepth {
		return s.tooDeep(start)
	}
	return nil
}

func (s *scanner) pop() {
	if n := len(s.frames); n > 0 {
		s.depth -= 1 + s.frames[n-1].ops
		s.frames = s.frames[:n-1]
	}
}

func (s *scanner) top() *frame {
	if len(s.frames) == 0 {
		return nil
	}
	return &s.frames[len(s.frames)-1]
}

// operator counts one unary or conditional operator in the current frame.
func (s *scanner) operator() *hcl.Diagnostic {
	start := s.here()
	if f := s.top(); f != nil {
		f.ops++
	} else {
		s.fileOps++
	}
	s.depth++
	s.advance(1)
	if s.depth > MaxDepth {
		return s.tooDeep(start)
	}
	return nil
}

// endExpression forgets the operators of the current frame's expression.
func (s *scanner) endExpression() {
	if f := s.top(); f != nil {
		s.depth -= f.ops
		f.ops = 0
	} else {
		s.depth -= s.fileOps
		s.fileOps = 0
	}
}

func (s *scanner) run() *hcl.Diagnostic {
	for s.pos < len(s.src) {
		var d *hcl.Diagnostic
		if f := s.top(); f != nil && f.kind == frameString {
			d = s.stringByte()
		} else if f != nil && f.kind == frameHeredoc {
			d = s.heredocByte(f)
		} else {
			d = s.codeByte()
		}
		if d != nil {
			return d
		}
	}
	return nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= utf8.RuneSelf
}

func (s *scanner) at(off int) byte {
	if s.pos+off < len(s.src) {
		return s.src[s.pos+off]
	}
	return 0
}

func (s *scanner) codeByte() *hcl.Diagnostic {
	c := s.src[s.pos]
	switch {
	case c == ' ' || c == '\t' || c == '\r':
		s.advance(1)
		return nil
	case c == '\n':
		if f := s.top(); f == nil || f.kind == frameBrace {
			s.endExpression() // a newline ends an attribute or an object item
		}
		s.prev = c
		s.advance(1)
		return nil
	case c == '#' || c == '/' && s.at(1) == '/':
		for s.pos < len(s.src) && s.src[s.pos] != '\n' {
			s.advance(1)
		}
		return nil
	case c == '/' && s.at(1) == '*':
		s.advance(2)
		for s.pos < len(s.src) && !(s.src[s.pos] == '*' && s.at(1) == '/') {
			s.advance(1)
		}
		s.advance(2)
		return nil
	}
	s.prev, c = c, s.prev // c is now the previous significant byte
	switch cur := s.prev; {
	case cur == '{':
		return s.push(frame{kind: frameBrace}, 1)
	case cur == '[':
		return s.push(frame{kind: frameBrack}, 1)
	case cur == '(':
		return s.push(frame{kind: frameParen}, 1)
	case cur == '}' || cur == ']' || cur == ')':
		// Only a matching closer ends a frame. A stray one is a syntax
		// error; letting it end a frame would let a file of "b {" and
		// ")" lines count as shallow whatever hclsyntax's recovery then
		// nests, so it is ignored and the count stays an upper bound.
		if f := s.top(); f != nil && (cur == '}' && (f.kind == frameBrace || f.kind == frameInterp) ||
			cur == ']' && f.kind == frameBrack || cur == ')' && f.kind == frameParen) {
			s.pop()
		}
		s.advance(1)
	case cur == '"':
		return s.push(frame{kind: frameString}, 1)
	case cur == '<' && s.at(1) == '<':
		return s.heredocStart()
	case cur == ',':
		s.endExpression()
		s.advance(1)
	case cur == '?':
		return s.operator()
	case cur == '!' && s.at(1) != '=':
		return s.operator()
	case cur == '-' && !(c != '-' && isIdentByte(c) || c == ')' || c == ']' || c == '}' || c == '"'):
		return s.operator()
	default:
		s.advance(1)
	}
	return nil
}

// heredocStart recognizes <<ID or <<-ID followed by a newline.
func (s *scanner) heredocStart() *hcl.Diagnostic {
	i := s.pos + 2
	if i < len(s.src) && s.src[i] == '-' {
		i++
	}
	j := i
	for j < len(s.src) && isIdentByte(s.src[j]) {
		j++
	}
	k := j
	if k < len(s.src) && s.src[k] == '\r' {
		k++
	}
	if j == i || k >= len(s.src) || s.src[k] != '\n' || s.src[i] == '-' {
		s.advance(2) // not a heredoc: a pair of less-than operators
		return nil
	}
	return s.push(frame{kind: frameHeredoc, marker: s.src[i:j], sol: true}, k+1-s.pos)
}

// templateSequence handles $ and % in a template: ${ and %{ open an
// interpolation or a directive, $${ and %%{ are escapes for the literal
// text. It reports whether it consumed anything.
func (s *scanner) templateSequence() (bool, *hcl.Diagnostic) {
	c := s.src[s.pos]
	if c != '$' && c != '%' {
		return false, nil
	}
	switch {
	case s.at(1) == '{':
		if c == '%' {
			if d := s.directive(); d != nil {
				return true, d
			}
		}
		s.prev = '{'
		return true, s.push(frame{kind: frameInterp}, 2)
	case s.at(1) == c && s.at(2) == '{':
		s.advance(3)
	default:
		s.advance(1)
	}
	return true, nil
}

// directive counts the nesting of %{if} and %{for} template directives,
// which hclsyntax's template parser recurses on until the matching
// %{endif} or %{endfor}, as operators of the enclosing template.
func (s *scanner) directive() *hcl.Diagnostic {
	i := s.pos + 2
	for i < len(s.src) && (s.src[i] == '~' || s.src[i] == ' ' || s.src[i] == '\t') {
		i++
	}
	j := i
	for j < len(s.src) && s.src[j] >= 'a' && s.src[j] <= 'z' {
		j++
	}
	f := s.top()
	switch string(s.src[i:j]) {
	case "if", "for":
		f.ops++
		s.depth++
		if s.depth > MaxDepth {
			start := s.here()
			s.advance(2)
			return s.tooDeep(start)
		}
	case "endif", "endfor":
		if f.ops > 0 {
			f.ops--
			s.depth--
		}
	}
	return nil
}

func (s *scanner) stringByte() *hcl.Diagnostic {
	if done, d := s.templateSequence(); done {
		return d
	}
	switch s.src[s.pos] {
	case '"':
		s.pop()
		s.prev = '"'
		s.advance(1)
	case '\\':
		s.advance(2)
	case '\n':
		// A quoted string cannot span lines: hclsyntax reports it. Close
		// it here so the rest of the file is scanned as code again.
		s.pop()
	default:
		s.advance(1)
	}
	return nil
}

func (s *scanner) heredocByte(f *frame) *hcl.Diagnostic {
	if f.sol {
		end := s.pos
		for end < len(s.src) && s.src[end] != '\n' {
			end++
		}
		if trimmed := trimSpace(s.src[s.pos:end]); slices.Equal(trimmed, f.marker) {
			s.pop()
			s.prev = '"'
			s.advance(end - s.pos)
			return nil
		}
		f.sol = false
	}
	if s.src[s.pos] == '\n' {
		f.sol = true
		s.advance(1)
		return nil
	}
	if done, d := s.templateSequence(); done {
		return d
	}
	s.advance(1)
	return nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// ReadPath is ReadFile for a path of the operating system's file system.
func ReadPath(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, path)
}
