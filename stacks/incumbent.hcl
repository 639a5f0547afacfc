# The evaluation incumbent: the stack every candidate is measured against.
#
# A candidate is this stack with exactly one target transition (see
# `cacheon stack plan`); the validator supplies every other entry. The
# entries below are the project's seed contributions, attributed to the
# project itself. Settlement replaces an entry when a candidate is crowned.
#
# Identities come from the canonical manifest, never from these bytes:
#   cacheon stack digest stacks/incumbent.hcl
#   cacheon stack materialize stacks/incumbent.hcl --out /tmp/engine
#
# docs/concepts/stacks.md explains each block.
stack "incumbent" {
  kind    = "evaluation"
  catalog = "//catalog:targets.hcl"

  # The engine the contributions bind into. Production pins SGLang:
  #   name = "sglang", version = "0.5.13.post1",
  #   upstream_repository = "https://github.com/sgl-project/sglang",
  #   upstream_revision = "<40-hex commit>", base_engine_digest = "<tree digest>".
  # This repository ships its own substrate (kernels/substrate). Both digests
  # are pinned descriptors:
  #   cacheon digest --domain cacheon.substrate.base-engine stacks/substrate.json
  #   cacheon digest --domain cacheon.substrate.runtime stacks/runtime.json
  substrate {
    name               = "cacheon-substrate"
    source             = "//kernels:substrate"
    base_engine_digest = "f2c7f647f188999de0d8919b1b8953b7e060eadeb6675e8c92e8ed2a0e9d51cd"
    runtime_digest     = "ed47039c8130c446d63da11bfe7ff848713e1ee131c6c7f687f5c9a5e8d020f5"
  }

  # The deployment candidates are measured in:
  #   cacheon digest --domain cacheon.arena.descriptor stacks/arena.json
  arena {
    name   = "local"
    digest = "3f50c8ed0f1faec61392f8e5d99d34dd8dbf7b4d805016237c50a9ae206fe3b0"
  }

  # Seed attribution: H(cacheon.contribution.seed-attribution.v1,
  #   {"author": "cacheon-engine", "bundle": "<source label>"}).
  contribution "activation.silu_and_mul" {
    source             = "//kernels/contributions:silu_and_mul_triton"
    attribution_digest = "087059a26c74e89457281cebf9a6b9c469966cb1c3485f1c58e8e22b28aa65fe"
  }

  contribution "norm.rmsnorm" {
    source             = "//kernels/contributions:rmsnorm_triton"
    attribution_digest = "c55ada4b6e36fe793650719473831bd386cea4f2750727ed90d67ad76cfdb002"
  }
}
