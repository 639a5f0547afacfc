"""The evaluation incumbent's contributions, for //stacks:incumbent.

Written by `cacheon stack export --workspace` with stacks/incumbent.hcl; never edit it by hand.
"""

INCUMBENT_CONTRIBUTIONS = [
    "//kernels/contributions:rmsnorm_triton",
    "//kernels/contributions:silu_and_mul_triton",
]
