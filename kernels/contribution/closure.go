package contribution

import (
	"io/fs"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/cudaclosure"
	"github.com/cacheon/engine/kernels/pyclosure"
)

// PythonClosure is the validator's ClosureFunc: the bundle-local import
// closure of the op sources (pyclosure), with the module names of the
// native extensions the bundle's declared CUDA sources build, so that a
// Python module shadowing one is refused. It reads the bundle's snapshot
// (whose walk refused every link) and the manifest already parsed; a
// bundle loaded without a snapshot is read through pyclosure.DirFS, which
// never follows links.
func PythonClosure(b *bundle.Bundle, opSources []string) (*pyclosure.Closure, error) {
	return pythonClosure(b, opSources, nil)
}

// CachedPythonClosure is PythonClosure with each file's facts kept in
// cache by content digest (pyclosure.FactsCache): the closure is the same,
// but a file analyzed before is not parsed again. A nil cache is
// PythonClosure.
func CachedPythonClosure(cache pyclosure.FactsCache) ClosureFunc {
	return func(b *bundle.Bundle, opSources []string) (*pyclosure.Closure, error) {
		return pythonClosure(b, opSources, cache)
	}
}

func pythonClosure(b *bundle.Bundle, opSources []string, cache pyclosure.FactsCache) (*pyclosure.Closure, error) {
	return pyclosure.Build(bundleFS(b), opSources, pyclosure.Options{
		NativeStems: pyclosure.NativeStems(b.Manifest.CUDASourcePaths()),
		Facts:       cache,
	})
}

// CUDAIncludeCheck is the validator's CUDACheckFunc: the literal-include
// closure of the declared CUDA sources (cudaclosure), which refuses
// computed includes, undeclared local headers and included translation
// units. Links are never followed.
func CUDAIncludeCheck(b *bundle.Bundle, cudaSources []string) error {
	_, err := cudaclosure.Build(bundleFS(b), cudaSources)
	return err
}

// bundleFS is the file system a closure reads: the snapshot's bytes when
// the bundle was opened as one.
func bundleFS(b *bundle.Bundle) fs.FS {
	if b.Snapshot != nil {
		return b.Snapshot.FS()
	}
	return pyclosure.DirFS(b.Dir)
}
