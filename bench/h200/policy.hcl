# The H200 measurement policy. max_noise 0.005: gpu-lane measurements put
# graph-replayed decode within 0.2 % (one standard deviation) across fresh
# processes, and a round whose B and B′ disagree by more is the lanes not
# being steady (NO_DECISION). min_margin 0.005 and noise_multiplier 2 are
# the spec's test values. The calibration it names is the earlier smoke
# calibration on an H200 (docs/results/calibration-h200-smoke.json).
speed_policy "h200-decode" {
  version                    = 8
  min_margin                 = 0.005
  noise_multiplier           = 2
  max_noise                  = 0.005
  min_windows                = 8
  max_window_scatter         = 0.05
  max_conditioning_slowdown  = 1.25
  max_stage_seconds          = 600
  max_qualification_seconds  = 1800
  calibration_digest         = "2d81f420f90d89cf0535835ef5508244c475b1becab0838c1d0c5e29fdd995c5"
  calibration_context_digest = "2d81f420f90d89cf0535835ef5508244c475b1becab0838c1d0c5e29fdd995c5"
}
