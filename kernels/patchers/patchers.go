// Package patchers holds the reviewed rebuild patchers this validator
// performs itself, and their digests.
//
// A contribution's rebuild.json names registered patchers by file name
// (kernels/bundle.Patchers); its selected payload binds the SHA-256 of the
// reviewed patcher file that will perform each step. The patcher of the
// build_cuda_ext step is the prebuild's (evaluator/prebuild): the one
// validator Python that runs in the compiler sandbox, which reports the
// toolchain the prebuild compiles with. Its bytes live here, beside the
// bundle format, so every side that resolves a payload (stacks, the
// evaluator, release review and rebuild) binds the same digest without
// reaching into the evaluator.
package patchers

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

// BuildCUDAExtName is the registered file name of the build_cuda_ext
// patcher.
const BuildCUDAExtName = "build_cuda_ext.py"

// BuildCUDAExt is the build_cuda_ext patcher's source.
//
//go:embed build_cuda_ext.py
var BuildCUDAExt string

// Digest is the SHA-256 (hex) of a patcher's bytes.
func Digest(source string) string {
	sum := sha256.Sum256([]byte(source))
	return hex.EncodeToString(sum[:])
}

// Reviewed maps every patcher this validator performs itself to its
// digest. A fresh map each call, for the caller to extend.
func Reviewed() map[string]string {
	return map[string]string{BuildCUDAExtName: Digest(BuildCUDAExt)}
}
