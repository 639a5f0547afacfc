// Package substrate embeds the engine substrate's Python package
// (cacheon_substrate), so the qualification controller runs engines from
// its own copy of the substrate, written read-only, never from whatever
// is installed on the host. See docs/engine/substrate.md.
package substrate

import "embed"

// Package is the Python import name of the embedded package.
const Package = "cacheon_substrate"

// Files holds the package sources under Package/.
//
//go:embed cacheon_substrate/*.py
var Files embed.FS
