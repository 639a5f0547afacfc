// Package worker embeds the verify worker harness (cacheon_worker), the
// Python side of the worker protocol: the plan, candidate and reference
// roles. See docs/reference/worker-protocol.md.
package worker

import "embed"

// Package is the Python import name of the embedded package.
const Package = "cacheon_worker"

// Files holds the package sources under Package/.
//
//go:embed cacheon_worker/*.py
var Files embed.FS
