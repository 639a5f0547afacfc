// Package catalog loads, validates and digests the target catalog: the
// registered slots (the call boundaries a kernel contribution fills), the
// targets (the reward units a contribution competes for), the features
// each target admits, the relations between targets (displacement,
// compatibility, requirement), the composition rules and the
// artifact-provider registry.
//
// The catalog is authored in HCL (targets.hcl in this directory, compiled
// into the binary as the default catalog) and decoded into typed values;
// unknown attributes and blocks are errors, and every problem is reported
// as an hcl.Diagnostic with the file, line and column it concerns. Every
// catalog rule is fail-closed and named (see Rules and RuleOf): a catalog
// that breaks one does not load.
//
// Identities are digests of canonical JSON projections of the decoded
// catalog, never of HCL bytes: the contract digest of each slot target,
// the atomic contract digest, the target-spec digest of each target, the
// binding contract digest of each composition rule, the artifact-provider
// registry digest and the catalog digest. They are byte-compatible with
// the upstream toolchain.
//
// On top of a loaded catalog the package validates and orders active
// target sets (ValidateActive, OrderedActiveTargets) and resolves a
// contribution's manifest to the target it competes for (Resolve,
// ResolveIntake). A *Catalog is immutable and safe for concurrent use.
package catalog
