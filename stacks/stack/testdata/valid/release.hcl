stack "release" {
  kind    = "release"
  catalog = "../catalog/targets.hcl"
  substrate {
    name               = "cacheon-substrate"
    source             = "//kernels:substrate"
    base_engine_digest = "2222222222222222222222222222222222222222222222222222222222222222"
    runtime_digest     = "1111111111111111111111111111111111111111111111111111111111111111"
  }
  contribution "activation.silu_and_mul" {
    source                    = "//kernels/contributions:silu_and_mul_triton"
    attribution_digest        = "4444444444444444444444444444444444444444444444444444444444444444"
    integration_record_digest = "3333333333333333333333333333333333333333333333333333333333333333"
  }
}
