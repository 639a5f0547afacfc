stack "x" {
  kind    = "production" # ERROR: Invalid stack kind
  catalog = "//catalog:targets.hcl"
  substrate {
    name               = "sglang"
    base_engine_digest = "2222222222222222222222222222222222222222222222222222222222222222"
    runtime_digest     = "1111111111111111111111111111111111111111111111111111111111111111"
  }
}
