// Package contribution computes the identities of a contribution bundle
// and keeps the four stages of a contribution's life apart.
//
// A bundle's content hash names its bytes (kernels/bundle). What a
// target actually executes is narrower: the selected payload — the Python
// import closure of the op sources, declared CUDA sources and dependency
// patches, the canonical projection of op metadata, the op rows and the
// rebuild plan. README files and unused padding change the content hash
// but never the selected payload. The selected delta binds a payload to
// the target and target-spec digest it resolved to, and is what a
// candidate's one transition is attributed to.
//
// A proposal (ProposalRef) is a bundle as committed, named by its content
// hash. An integrated contribution (IntegratedRef) is reviewed source,
// named by its integrated source tree digest, and derives only from an
// integration review record. Crowns and releases live elsewhere. No
// function here turns one kind into another without the evidence the
// transition names.
package contribution
