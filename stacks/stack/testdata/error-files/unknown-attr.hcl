stack "a" {
  kind    = "reference"
  catalog = "//catalog:targets.hcl"
  catalogue = "x" # ERROR: Unsupported argument
  substrate {
    name               = "sglang"
    base_engine_digest = "2222222222222222222222222222222222222222222222222222222222222222"
    runtime_digest     = "1111111111111111111111111111111111111111111111111111111111111111"
  }
  arena {
    digest = "3333333333333333333333333333333333333333333333333333333333333333"
  }
}
