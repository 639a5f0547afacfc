# The demonstration arena's evaluation stack: the incumbent with its
# norm.rmsnorm entry replaced by a deliberately slow one
# (kernels/demo/rmsnorm_slow, correct and recomputed 60 times).
#
# It exists so that the main job can show the whole crown loop on a CPU
# lane honestly: a real contribution (kernels/contributions/rmsnorm_torch)
# is measured over it, on a speed policy calibrated on the same machine,
# and really is several times faster. It is never a real arena's stack.
#
#   cacheon stack materialize stacks/demo.hcl --out /tmp/demo-engine
stack "demo" {
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

  # The slow entry: H(cacheon.contribution.seed-attribution.v1,
  #   {"author": "cacheon-engine", "bundle": "//kernels/demo:rmsnorm_slow"}).
  contribution "norm.rmsnorm" {
    source             = "//kernels/demo:rmsnorm_slow"
    attribution_digest = "0140ef77753178b7606c4c80cd5e6f012dd429cb81367da464aa3a9a84e5a065"
  }
}
