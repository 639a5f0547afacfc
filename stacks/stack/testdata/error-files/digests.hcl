stack "x" {
  kind    = "evaluation"
  catalog = "//catalog:targets.hcl"
  substrate {
    name               = "sglang"
    upstream_revision  = "v0.5.13" # ERROR: Invalid upstream revision
    base_engine_digest = "0000000000000000000000000000000000000000000000000000000000000000" # ERROR: Invalid digest
    runtime_digest     = "ABC" # ERROR: Invalid digest
  }
  arena {
    digest = 3 # ERROR: String required
  }
}
