// Package materialize turns a stack into a deterministic engine tree: the
// directory of namespaced contribution sources, entry shims, runtime
// manifest and metadata that the engine substrate loads.
//
// The materializer never imports or runs contribution code. It reads
// every contribution's source once into a bundle snapshot (or reuses the
// one stack assembly took), checks those bytes against the identity the
// stack binds, inspects the bundle against
// the catalog, computes its Python import closure and CUDA include closure
// statically, rewrites bundle-local imports into a namespace derived from
// the selected delta digest, and writes the tree atomically with fixed
// modes and times. The same stack always yields the same bytes and the
// same tree digest, wherever and whenever it is built.
package materialize
