// Package reference embeds the validator's Python reference package
// (cacheon_reference): the slot registry, input generators, fp32 truths and
// correctness comparators. The verify controller writes these files into a
// read-only directory and puts it on the worker interpreter's path, so the
// cacheon binary carries the exact validator code it runs.
package reference

import "embed"

// Package is the Python import name of the embedded package.
const Package = "cacheon_reference"

// Files holds the package sources under Package/.
//
//go:embed cacheon_reference/*.py cacheon_reference/slots/*.py
var Files embed.FS
