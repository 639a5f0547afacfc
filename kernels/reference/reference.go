// Package reference embeds the validator's Python reference package
// (cacheon_reference): the slots' semantics (input generators, output
// allocation, fp32 truths), the binding of a catalog slot contract to them,
// and the correctness comparators. The verify controller writes these files
// into a read-only directory and puts it on the worker interpreter's path, so
// the cacheon binary carries the exact validator code it runs.
//
// The slot contracts themselves (call signatures, shapes, correctness
// policies, tolerances) are not embedded: workers receive them from the
// controller, which reads the catalog. The contracts generated from the
// default catalog for Python code outside a worker live in
// cacheon_reference/default_catalog, which the embed patterns leave out.
package reference

import "embed"

// Package is the Python import name of the embedded package.
const Package = "cacheon_reference"

// Files holds the package sources under Package/.
//
//go:embed cacheon_reference/*.py cacheon_reference/slots/*.py
var Files embed.FS
