# The reference (pristine) stack: no contribution at any target, so the
# engine runs stock code everywhere. Qualification's pristine arm T and the
# reference manifest are built from it; it must share the incumbent's
# substrate, arena and catalog.
#
#   cacheon stack materialize stacks/reference.hcl --out /tmp/pristine
stack "reference" {
  kind    = "reference"
  catalog = "//catalog:targets.hcl"

  substrate {
    name               = "cacheon-substrate"
    source             = "//kernels:substrate"
    base_engine_digest = "f2c7f647f188999de0d8919b1b8953b7e060eadeb6675e8c92e8ed2a0e9d51cd"
    runtime_digest     = "ed47039c8130c446d63da11bfe7ff848713e1ee131c6c7f687f5c9a5e8d020f5"
  }

  arena {
    name   = "local"
    digest = "3f50c8ed0f1faec61392f8e5d99d34dd8dbf7b4d805016237c50a9ae206fe3b0"
  }
}
