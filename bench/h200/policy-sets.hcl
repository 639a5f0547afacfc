# The version 9 measurement policy: four read sets of B, C and B′ (twelve
# engine processes), graded on the mean of the sets' speedups
# (docs/reference/speed-policy.md, "Version 9").
#
# min_margin 0.0033 is what qualify calibrate derives for four sets and
# noise_multiplier 3 (three standard errors of the mean of four set
# speedups) from the 19 three-process stock-versus-stock rounds of
# docs/results/rereads-h100.md, each read as one set: their speedups'
# root mean square about 1 is 0.220 %, so the mean of four sets scatters
# by 0.110 % and the margin is 3 × 0.110 % = 0.330 %. It was fixed before
# the rounds of docs/results/sets-h100.md ran, which are graded under it.
# max_noise 0.005: a set whose B and B′ differ by more is dropped (one per
# grade; two leave it NO_DECISION). The other values, and the calibration
# named, are bench/h200/policy.hcl's.
speed_policy "h200-decode-sets" {
  version                    = 9
  sets                       = 4
  min_margin                 = 0.0033
  noise_multiplier           = 3
  max_noise                  = 0.005
  min_windows                = 8
  max_window_scatter         = 0.05
  max_conditioning_slowdown  = 1.25
  max_stage_seconds          = 600
  max_qualification_seconds  = 1800
  calibration_digest         = "2d81f420f90d89cf0535835ef5508244c475b1becab0838c1d0c5e29fdd995c5"
  calibration_context_digest = "2d81f420f90d89cf0535835ef5508244c475b1becab0838c1d0c5e29fdd995c5"
}
