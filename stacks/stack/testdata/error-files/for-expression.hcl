stack "x" {
  kind    = "evaluation"
  catalog = "//catalog:targets.hcl"
  substrate {
    name               = "sglang"
    base_engine_digest = "2222222222222222222222222222222222222222222222222222222222222222"
    runtime_digest     = "1111111111111111111111111111111111111111111111111111111111111111"
  }
  arena {
    digest = join("", [for c in ["3", "3"] : c]) # ERROR: Function call not allowed
    name   = [for c in ["a"] : c] # ERROR: For expression not allowed
  }
}
