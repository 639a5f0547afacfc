package bundle

import (
	"regexp"
	"unicode"
)

// idPattern is the upstream "simple identifier" used for bundle ids,
// variants, competition targets and dep-patch targets.
var idPattern = regexp.MustCompile(`^[0-9A-Za-z._-]+$`)

// IsSimpleID reports whether s is a non-empty [0-9A-Za-z._-]+ identifier.
func IsSimpleID(s string) bool { return idPattern.MatchString(s) }

// IsPythonIdentifier reports whether s is a Python identifier as
// str.isidentifier() decides it: a letter or underscore, then letters,
// digits, underscores and combining marks. Keywords are identifiers too;
// upstream accepts them for entry names and so do we.
func IsPythonIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if i == 0 {
			if !isIDStart(r) {
				return false
			}
			continue
		}
		if !isIDContinue(r) {
			return false
		}
	}
	return true
}

func isIDStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_ID_Start, r)
}

func isIDContinue(r rune) bool {
	return isIDStart(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) ||
		unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Other_ID_Continue, r)
}

// pythonKeywords are the hard keywords of Python 3; AOT factory names may
// not be one (they are looked up as module attributes).
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true,
	"async": true, "await": true, "break": true, "class": true, "continue": true,
	"def": true, "del": true, "elif": true, "else": true, "except": true, "finally": true,
	"for": true, "from": true, "global": true, "if": true, "import": true, "in": true,
	"is": true, "lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true,
	"raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}
