"""norm.rmsnorm in plain torch, recomputed on purpose: a slow incumbent.

The demonstration arena (stacks/demo.hcl) holds this entry so that a real
contribution computing the same result once is faster by far more than a
shared CPU's noise, and the crown loop can be shown honestly on the CPU
lane. The result is correct; only the time is wasted.
"""

import torch

REPEATS = 60


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, eps: float) -> None:
    xf = x.float()
    for _ in range(REPEATS):
        inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
        y = xf * inv_rms * weight.float()
    out.copy_(y.to(out.dtype))
