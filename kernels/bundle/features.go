package bundle

// Feature names a manifest declares (spec: the validator-owned feature
// vocabulary). The catalog decides which a target admits.
const (
	FeatureEntry       = "entry"
	FeatureVariants    = "variants"
	FeaturePrepare     = "prepare"
	FeatureSetup       = "setup"
	FeatureOverride    = "override"
	FeatureCUDASources = "cuda_sources"
	featureAOTPrefix   = "aot:"
	featureDepPrefix   = "dep_patch:"
	featureExtraPrefix = "op_extra:"
)

// DeclaredFeatures returns the features the manifest itself declares,
// sorted: entry always; variants when a row has a non-default variant or a
// slot repeats; prepare, setup, override (base_kernel/override_point) and
// cuda_sources when any row uses them; aot:<provider> per AOT provider;
// op_extra:<key> per unknown op key; dep_patch:<target> per patched
// dependency. Observed features (rebuild steps) come from the rebuild plan.
func (m *Manifest) DeclaredFeatures() []string {
	set := map[string]bool{FeatureEntry: true}
	slotRows := map[string]int{}
	for _, op := range m.Ops {
		slotRows[op.Slot]++
		if op.Variant != DefaultVariant || slotRows[op.Slot] > 1 {
			set[FeatureVariants] = true
		}
		if op.Prepare != "" {
			set[FeaturePrepare] = true
		}
		if op.Setup != "" {
			set[FeatureSetup] = true
		}
		if op.BaseKernel != "" || op.OverridePoint != "" {
			set[FeatureOverride] = true
		}
		if len(op.CUDASources) > 0 {
			set[FeatureCUDASources] = true
		}
		for _, e := range op.AOTExports {
			set[featureAOTPrefix+e.Provider] = true
		}
		for k := range op.Extra {
			set[featureExtraPrefix+k] = true
		}
	}
	for _, dp := range m.DepPatches {
		set[featureDepPrefix+dp.Target] = true
	}
	return sortedKeys(set)
}

// Swap reasons: why a bundle cannot be hot-swapped into a resident engine
// and must be qualified in two fresh engine processes instead.
const (
	SwapReasonAOT           = "aot"            // an op exports prebuilt artifacts
	SwapReasonDepPatched    = "dep-patched"    // the bundle patches a pinned dependency
	SwapReasonNativeRebuild = "native-rebuild" // an op compiles CUDA sources
	SwapReasonEngineSetup   = "engine-setup"   // an op runs a setup callable at engine init
)

// Swappability reports whether the bundle can be hot-swapped into a
// resident engine: only pure Python/Triton rows can be loaded and unloaded
// without rebuilding or restarting the engine. The reason is the first
// failing check in the order aot, dep-patched, native-rebuild,
// engine-setup, and empty when swappable.
func (m *Manifest) Swappability() (swappable bool, reason string) {
	for _, op := range m.Ops {
		if len(op.AOTExports) > 0 {
			return false, SwapReasonAOT
		}
	}
	if len(m.DepPatches) > 0 {
		return false, SwapReasonDepPatched
	}
	for _, op := range m.Ops {
		if len(op.CUDASources) > 0 {
			return false, SwapReasonNativeRebuild
		}
	}
	for _, op := range m.Ops {
		if op.Setup != "" {
			return false, SwapReasonEngineSetup
		}
	}
	return true, ""
}

// SourcePaths returns the clean paths of every op source, sorted, unique.
func (m *Manifest) SourcePaths() []string {
	set := map[string]bool{}
	for _, op := range m.Ops {
		set[CleanPath(op.Source)] = true
	}
	return sortedKeys(set)
}

// CUDASourcePaths returns the clean paths of every declared CUDA source.
func (m *Manifest) CUDASourcePaths() []string {
	set := map[string]bool{}
	for _, op := range m.Ops {
		for _, cs := range op.CUDASources {
			set[CleanPath(cs)] = true
		}
	}
	return sortedKeys(set)
}

// DepPatchPaths returns the clean paths of every declared dep patch.
func (m *Manifest) DepPatchPaths() []string {
	set := map[string]bool{}
	for _, dp := range m.DepPatches {
		set[CleanPath(dp.Path)] = true
	}
	return sortedKeys(set)
}

// MetadataPaths returns the clean paths of every op metadata file.
func (m *Manifest) MetadataPaths() []string {
	set := map[string]bool{}
	for _, op := range m.Ops {
		if op.Metadata != "" {
			set[CleanPath(op.Metadata)] = true
		}
	}
	return sortedKeys(set)
}
