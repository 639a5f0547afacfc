package catalog

import "strings"

// Features a contribution is classified with. The catalog's vocabulary
// lists which exist and each target lists which it admits; the names
// below are the ones resolution itself reasons about.
const (
	// Declared by the manifest.
	FeatureEntry       = "entry"        // always: every op row names an entry
	FeatureVariants    = "variants"     // a non-default variant, or a repeated slot
	FeaturePrepare     = "prepare"      // an op row names a prepare callable
	FeatureSetup       = "setup"        // an op row names a setup callable (observed only)
	FeatureOverride    = "override"     // an op row names base_kernel/override_point
	FeatureCUDASources = "cuda_sources" // an op row compiles CUDA sources

	// Observed by the trusted rebuild, never declared.
	FeatureRebuildCUDAExt       = "rebuild:build_cuda_ext"
	FeatureRebuildApplyDepPatch = "rebuild:apply_dep_patch"

	// Prefixes of parameterized features.
	aotPrefix      = "aot:"       // aot:<provider id>, one per declared AOT export provider
	depPatchPrefix = "dep_patch:" // dep_patch:<patched dependency>, one per dependency patch
	opExtraPrefix  = "op_extra:"  // op_extra:<key>, one per unknown op key (never admitted)
)

// AOTFeature is the feature declared by an op row that exports artifacts
// built by provider.
func AOTFeature(provider string) string { return aotPrefix + provider }

// DepPatchFeature is the feature declared by a dependency patch on target
// (for example "flashinfer").
func DepPatchFeature(target string) string { return depPatchPrefix + target }

// OpExtraFeature is the feature recorded for an op key the manifest
// schema does not know. No target admits it, so a bundle carrying one
// resolves nowhere and goes to discovery.
func OpExtraFeature(key string) string { return opExtraPrefix + key }

// aotProvider returns the provider id of an aot:<provider> feature.
func aotProvider(feature string) (string, bool) {
	return strings.CutPrefix(feature, aotPrefix)
}
