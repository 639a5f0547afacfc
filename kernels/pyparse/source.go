package pyparse

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// File is a source file's name and text with a line table, so byte offsets
// kept in the tree can be turned into line and column when reporting.
type File struct {
	Name string
	Src  string
	// The tables are built on the first position lookup: most files
	// parse without one being asked for (no error, nothing to report).
	index sync.Once
	lines []int // byte offset of the start of each line
	// runes[k] counts the characters before byte k*runeBlock, so a column
	// costs at most one block of counting however long the line is.
	runes []int
}

const runeBlock = 1024

// NewFile indexes src for position lookups. Lines end at "\n", "\r\n" or a
// lone "\r", as Python's universal newlines read them.
func NewFile(name string, src []byte) *File {
	return &File{Name: name, Src: string(src)}
}

// buildIndex fills the line and character tables.
func (f *File) buildIndex() {
	s := f.Src
	f.lines = make([]int, 1, strings.Count(s, "\n")+2)
	f.runes = make([]int, 0, len(s)/runeBlock+1)
	count := 0
	for i := 0; i < len(s); i++ {
		if i%runeBlock == 0 {
			f.runes = append(f.runes, count)
		}
		if s[i]&0xC0 != 0x80 {
			count++
		}
		// The '\n' of "\r\n" ends that line; stepping over it here would
		// skip its count and perhaps a block boundary.
		switch s[i] {
		case '\n':
			f.lines = append(f.lines, i+1)
		case '\r':
			if i+1 >= len(s) || s[i+1] != '\n' {
				f.lines = append(f.lines, i+1)
			}
		}
	}
}

// Position is a human-facing source location: 1-based line and 1-based
// column counted in characters (runes), which is what editors show.
type Position struct {
	Offset int
	Line   int
	Col    int
}

func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Position converts a byte offset into line and column.
func (f *File) Position(off int) Position {
	if off < 0 {
		off = 0
	}
	if off > len(f.Src) {
		off = len(f.Src)
	}
	f.index.Do(f.buildIndex)
	line := sort.Search(len(f.lines), func(i int) bool { return f.lines[i] > off }) - 1
	start := f.lines[line]
	// A short way into its line, count the characters directly; further
	// in, the block counts bound the work however long the line is.
	var col int
	if off-start <= runeBlock {
		col = leadBytes(f.Src[start:off]) + 1
	} else {
		col = f.runesBefore(off) - f.runesBefore(start) + 1
	}
	return Position{Offset: off, Line: line + 1, Col: col}
}

// runesBefore counts the characters in Src[:off]: the bytes that do not
// continue a UTF-8 sequence.
func (f *File) runesBefore(off int) int {
	k := off / runeBlock
	if k >= len(f.runes) {
		k = len(f.runes) - 1
	}
	if k < 0 {
		return 0
	}
	return f.runes[k] + leadBytes(f.Src[k*runeBlock:off])
}

// leadBytes counts the bytes of s that do not continue a UTF-8 sequence:
// its characters, when s is valid UTF-8.
func leadBytes(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i]&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// Text returns the source text of a node.
func (f *File) Text(n Node) string {
	s, e := n.Span()
	return f.Src[s:e]
}

// SyntaxError is a parse failure at a position, the counterpart of
// Python's SyntaxError: a file that does not parse is never accepted.
type SyntaxError struct {
	File string
	Pos  Position
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d:%d: syntax error: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// IsIdentifier reports whether s is a Python identifier that is not a
// hard keyword, i.e. a name that can appear in a dotted module path.
func IsIdentifier(s string) bool {
	if s == "" || keywords[s] {
		return false
	}
	for i, r := range s {
		if i == 0 {
			if !isIdentStartRune(r) {
				return false
			}
		} else if !isIdentContinueRune(r) {
			return false
		}
	}
	return true
}
