// Package fences holds no code: its test asserts the import fences between
// the project's layers (the bundle side, the stack side, the evaluator and
// the release pipeline) over the whole transitive import graph, in the
// style of go-containerregistry's depcheck.
package fences
