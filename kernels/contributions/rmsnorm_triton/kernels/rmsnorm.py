"""norm.rmsnorm as a Triton kernel.

One program per row: load the row (padded to a power of two with masked
zeros, which add nothing to the sum of squares), reduce in fp32, scale by
rsqrt(mean + eps) and the weight, store in the output dtype. The block
size is chosen on the host: Triton needs it as a compile-time constant.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(
    x_ptr, w_ptr, out_ptr, hidden, eps,
    x_row_stride, out_row_stride,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / hidden
    y = x * (1.0 / tl.sqrt(mean_sq + eps)) * w
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


_MAX_HIDDEN = 16384


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor, eps: float) -> None:
    hidden = x.shape[-1]
    if hidden > _MAX_HIDDEN:
        raise ValueError(f"hidden size {hidden} exceeds {_MAX_HIDDEN}")
    x2 = x.reshape(-1, hidden)
    out2 = out.view(-1, hidden)
    if x2.stride(-1) != 1 or out2.stride(-1) != 1 or weight.stride(-1) != 1:
        raise ValueError("rows must be contiguous")
    rows = x2.shape[0]
    if rows == 0:
        return
    block = triton.next_power_of_2(hidden)
    num_warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    _rmsnorm_kernel[(rows,)](
        x2, weight, out2, hidden, eps,
        x2.stride(0), out2.stride(0),
        BLOCK=block, num_warps=num_warps,
    )
