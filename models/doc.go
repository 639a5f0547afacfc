// Package models seals model directories: it provisions a concrete tree of
// model files into a receipt that names every file by path, size and
// SHA-256, and re-checks a tree against such a receipt.
//
// A model tree is a directory of regular files (config.json, tokenizer
// files, safetensors shards). Provisioning walks it without following
// anything and rejects what would make its bytes ambiguous: symbolic
// links, hard links (a file with more than one link can change through
// another name), special files, any ".cache" path component (hub
// downloaders keep mutable state there) and two paths that differ only by
// case or by Unicode normalization (they collide on case-insensitive and
// on normalizing file systems: NFC and NFD spellings of "é" are one name
// on macOS). Every file is
// hashed while its status is compared before and after reading, through
// its path and through the open descriptor, and the tree is walked again
// at the end, so a file or tree that changes during provisioning is
// rejected rather than sealed half old, half new.
//
// Identities (byte-compatible with the upstream toolchain):
//
//	content digest = H("cacheon.model-content", {"files": files})
//	receipt digest = H("cacheon.model-provision-receipt", receipt)
//	receipt        = {"type": "cacheon.model-provision", "schema_version": 1,
//	                  "content_digest": ..., "files": files}
//	files          = [{"path", "size", "sha256"}] sorted by path
//
// The receipt is published outside the model root, by default beside it as
// model-provision-sha256-<receipt digest>.json (upstream's name: it reopens a
// receipt only under the name of its own digest), read-only and atomically.
package models
