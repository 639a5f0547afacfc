# The release stack: what a signed release ships. It holds integrated
# (reviewed) source only, each entry admitted by one approved integration
# review record of a crowned proposal; it has no arena. Updating it is a
# separate, explicitly authorized transition from updating the incumbent.
#
# No contribution has been through integration review yet, so the release
# ships the stock substrate. An entry looks like:
#
#   contribution "activation.silu_and_mul" {
#     source                    = "//kernels/integrated:silu_and_mul"
#     attribution_digest        = "<the crowned proposal's attribution>"
#     integration_record_digest = "<H(cacheon.contribution.integration-review, record)>"
#   }
#
# and is materialized with its record:
#   cacheon stack materialize stacks/release.hcl --out /tmp/release \
#       --integration-record records/silu_and_mul.json
stack "release" {
  kind    = "release"
  catalog = "//catalog:targets.hcl"

  substrate {
    name               = "cacheon-substrate"
    source             = "//kernels:substrate"
    base_engine_digest = "f2c7f647f188999de0d8919b1b8953b7e060eadeb6675e8c92e8ed2a0e9d51cd"
    runtime_digest     = "ed47039c8130c446d63da11bfe7ff848713e1ee131c6c7f687f5c9a5e8d020f5"
  }
}
