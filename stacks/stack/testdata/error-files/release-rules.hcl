stack "r" {
  kind    = "release"
  catalog = "//catalog:targets.hcl"
  substrate {
    name               = "sglang"
    base_engine_digest = "2222222222222222222222222222222222222222222222222222222222222222"
    runtime_digest     = "1111111111111111111111111111111111111111111111111111111111111111"
  }
  arena { # ERROR: Arena in a release stack
    digest = "3333333333333333333333333333333333333333333333333333333333333333"
  }
  contribution "activation.silu_and_mul" {
    kind               = "proposal" # ERROR: Proposal in a release stack
    source             = "//kernels/contributions:silu"
    attribution_digest = "4444444444444444444444444444444444444444444444444444444444444444"
  }
  contribution "norm.rmsnorm" { # ERROR: Missing integration record digest
    source             = "//kernels/contributions:rms"
    attribution_digest = "4444444444444444444444444444444444444444444444444444444444444444"
    artifact_digest    = "4444444444444444444444444444444444444444444444444444444444444444" # ERROR: Attribute not allowed here
  }
}
