stack "e" {
  kind    = "evaluation"
  catalog = "//catalog:targets.hcl"
  substrate {
    name               = "sglang"
    base_engine_digest = "2222222222222222222222222222222222222222222222222222222222222222"
    runtime_digest     = "1111111111111111111111111111111111111111111111111111111111111111"
  }
  arena {
    digest = "3333333333333333333333333333333333333333333333333333333333333333"
  }
  contribution "activation.silu_and_mul" {
    source             = "//kernels/contributions:silu"
    attribution_digest = "4444444444444444444444444444444444444444444444444444444444444444"
  }
  contribution "activation.silu_and_mul" { # ERROR: Duplicate contribution
    source             = "//kernels/contributions:other"
    attribution_digest = "4444444444444444444444444444444444444444444444444444444444444444"
  }
  contribution "norm.rmsnorm" {
    kind                      = "reviewed" # ERROR: Invalid contribution kind
    source                    = "//kernels/contributions/rms" # ERROR: Invalid source label
    attribution_digest        = "4444444444444444444444444444444444444444444444444444444444444444"
  }
  contribution "bad target!" { # ERROR: Invalid target id
    source                    = "@other//x" # ERROR: Invalid source label
    attribution_digest        = "4444444444444444444444444444444444444444444444444444444444444444"
    integration_record_digest = "4444444444444444444444444444444444444444444444444444444444444444" # ERROR: Attribute not allowed here
  }
  contribution "attention.sdpa" { # ERROR: Missing required argument
    source = "//kernels/contributions:sdpa"
  }
  contribution "attention.decode" {
    source             = var.decode # ERROR: Variables not allowed
    attribution_digest = "4444444444444444444444444444444444444444444444444444444444444444"
  }
}
