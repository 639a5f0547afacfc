// Package pyparse parses Python 3 source (the grammar of 3.8 through 3.12:
// f-strings with PEP 701 nesting, the walrus operator, match statements,
// async code, decorators, type hints and PEP 695 type parameters) into a
// syntax tree whose nodes mirror Python's ast module and carry byte spans.
// ParseVersion parses for an older interpreter instead (the worker runs
// 3.11), refusing the newer constructs with the version they need.
//
// It exists so that contribution code is inspected without ever being
// imported or run, and without running Python at all: the static scanner,
// the import-closure walker and the namespace rewriter read trees from
// here. Like Python's own parser it rejects what Python rejects (syntax
// errors, NUL bytes, invalid UTF-8, inconsistent tabs, decimal literals
// over 4,300 digits, implausible \N{...} names), and in addition it
// refuses source declaring an encoding other than UTF-8, which Python would
// decode differently from a UTF-8 reader. Identifiers are NFKC-normalized
// as Python does, so `ｅｖａｌ` is the name eval.
//
// Hostile input is bounded: bracket nesting stops at 200 levels,
// indentation at 100 and f-string nesting at 149 (CPython's limits) and
// other expression nesting at 1,000, each with a syntax error rather than
// stack exhaustion. Parsing takes time and memory linear in the size of
// the source whatever its shape; the shapes an attacker would reach for
// are in shapes_test.go, held linear by TestParseAllocationIsLinear and
// measured by BenchmarkPathological.
package pyparse
