package contribution

import (
	"fmt"

	"github.com/cacheon/engine/kernels/bundle"
	"github.com/cacheon/engine/kernels/cudaclosure"
	"github.com/cacheon/engine/kernels/pyclosure"
)

// PythonClosure is the validator's ClosureFunc: the bundle-local import
// closure of the op sources (pyclosure), with the module names of the
// native extensions the bundle's declared CUDA sources build, so that a
// Python module shadowing one is refused. Links are never followed.
func PythonClosure(bundleDir string, opSources []string) ([]string, error) {
	m, err := bundle.ReadManifest(bundleDir)
	if err != nil {
		return nil, fmt.Errorf("python closure: %w", err)
	}
	c, err := pyclosure.FromDir(bundleDir, opSources, pyclosure.Options{
		NativeStems: pyclosure.NativeStems(m.CUDASourcePaths()),
	})
	if err != nil {
		return nil, err
	}
	return c.Paths(), nil
}

// CUDAIncludeCheck is the validator's CUDACheckFunc: the literal-include
// closure of the declared CUDA sources (cudaclosure), which refuses
// computed includes, undeclared local headers and included translation
// units. Links are never followed.
func CUDAIncludeCheck(bundleDir string, cudaSources []string) error {
	_, err := cudaclosure.Build(pyclosure.DirFS(bundleDir), cudaSources)
	return err
}
