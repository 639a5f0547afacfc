stack "reference" {
  kind    = "reference"
  catalog = "//catalog:targets.hcl"
  substrate {
    name               = "sglang"
    base_engine_digest = "2222222222222222222222222222222222222222222222222222222222222222"
    runtime_digest     = "1111111111111111111111111111111111111111111111111111111111111111"
  }
  arena {
    digest = "3333333333333333333333333333333333333333333333333333333333333333"
  }
  contribution "activation.silu_and_mul" { # ERROR: Contribution in a reference stack
    source             = "//kernels/contributions:silu"
    attribution_digest = "4444444444444444444444444444444444444444444444444444444444444444"
  }
}
