"""activation.silu_and_mul as a Triton kernel.

Each program handles BLOCK columns of one row: it loads the gate and up
halves, computes silu(gate) in fp32, rounds it to the input dtype (as the
reference does), multiplies by up and stores into the validator-allocated
output. Any row and column strides are honoured.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _silu_and_mul_kernel(
    x_ptr, out_ptr, d,
    x_row_stride, x_col_stride, out_row_stride, out_col_stride,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    x_row = x_ptr + row * x_row_stride
    gate = tl.load(x_row + cols * x_col_stride, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_row + (cols + d) * x_col_stride, mask=mask, other=0.0)
    act = (gate / (1.0 + tl.exp(-gate))).to(up.dtype)
    out_row = out_ptr + row * out_row_stride
    tl.store(out_row + cols * out_col_stride, act * up, mask=mask)


_BLOCK = 1024


def silu_and_mul(x: torch.Tensor, out: torch.Tensor) -> None:
    rows, width = x.shape
    d = width // 2
    if rows == 0 or d == 0:
        return
    grid = (rows, triton.cdiv(d, _BLOCK))
    _silu_and_mul_kernel[grid](
        x, out, d,
        x.stride(0), x.stride(1), out.stride(0), out.stride(1),
        BLOCK=_BLOCK,
    )
