"""activation.silu_and_mul in plain torch.

x has shape (T, 2d): the first half of each row is the gate, the second
half the up projection. The validator allocates out (T, d) in x's dtype;
this function only fills it.
"""

import torch
import torch.nn.functional as F


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    d = x.shape[-1] // 2
    gate = x[..., :d]
    up = x[..., d:]
    # SiLU in fp32 (its exp loses too much in half precision), cast back
    # before the product, as the reference does.
    out.copy_(F.silu(gate.float()).to(x.dtype) * up)
