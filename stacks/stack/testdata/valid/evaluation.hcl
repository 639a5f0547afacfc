# A two-entry evaluation stack.
stack "incumbent" {
  kind    = "evaluation"
  catalog = "//catalog:targets.hcl"

  substrate {
    name               = "sglang"
    version            = "0.5.13.post1"
    upstream_repository = "https://github.com/sgl-project/sglang"
    upstream_revision  = "0123456789abcdef0123456789abcdef01234567"
    base_engine_digest = "2222222222222222222222222222222222222222222222222222222222222222"
    runtime_digest     = "1111111111111111111111111111111111111111111111111111111111111111"
  }

  arena {
    name   = "test-arena"
    digest = "3333333333333333333333333333333333333333333333333333333333333333"
  }

  contribution "norm.rmsnorm" {
    source             = "//kernels/contributions:rmsnorm_triton"
    attribution_digest = "4444444444444444444444444444444444444444444444444444444444444444"
  }

  contribution "activation.silu_and_mul" {
    source             = "../bundles/silu"
    attribution_digest = "4444444444444444444444444444444444444444444444444444444444444444"
    artifact_digest    = "2222222222222222222222222222222222222222222222222222222222222222"
  }
}
