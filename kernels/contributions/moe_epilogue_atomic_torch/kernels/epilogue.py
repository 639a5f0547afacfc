"""The MoE epilogue pair of collective.moe_epilogue.v1, in plain torch.

Both entries reduce across the tensor-parallel group in fp32, add the
replicated residual, and RMS-normalize. The validator allocates out_norm
and out_residual; these functions only fill them. With no group (or a
single rank) the all-reduce is the identity.
"""

import torch
import torch.distributed as dist


def _all_reduce_f32(t: torch.Tensor, group) -> torch.Tensor:
    if group is not None and dist.is_initialized() and dist.get_world_size(group) > 1:
        dist.all_reduce(t, op=dist.ReduceOp.SUM, group=group)
    return t


def _add_norm(summed, residual, weight, eps, out_norm, out_residual):
    new_residual = summed + residual.float()
    inv_rms = torch.rsqrt(new_residual.pow(2).mean(dim=-1, keepdim=True) + eps)
    out_norm.copy_((new_residual * inv_rms * weight.float()).to(out_norm.dtype))
    out_residual.copy_(new_residual.to(out_residual.dtype))


def ar_residual_rmsnorm(x, residual, weight, eps, out_norm, out_residual, group):
    """new_residual = sum over ranks of x + residual; out_norm = rmsnorm(new_residual) * weight."""
    # A private fp32 copy: for an fp32 x, x.float() is x itself, and the
    # in-place all-reduce must never write the validator's input.
    summed = _all_reduce_f32(x.to(torch.float32, copy=True).contiguous(), group)
    _add_norm(summed, residual, weight, eps, out_norm, out_residual)


def moe_finalize_ar_rmsnorm(gemm_out, row_map, scales, residual, weight, eps, out_norm, out_residual, group):
    """Finalize the routed expert rows of this rank, all-reduce, then add and norm.

    gemm_out (T_exp*K, H) holds expert outputs; row_map (T_exp*K) is a
    K-major permutation: slot (t, k) of token t lives at row
    row_map[t + k*T_exp]; scales (T_exp, K) weight each slot. Only the
    first T = residual.shape[0] tokens are kept.
    """
    tokens = residual.shape[0]
    exp_tokens, top_k = scales.shape
    rows = row_map.to(torch.int64).reshape(top_k, exp_tokens)[:, :tokens]  # (K, T)
    gathered = gemm_out.float()[rows]  # (K, T, H)
    weights = scales[:tokens].float().transpose(0, 1).unsqueeze(-1)  # (K, T, 1)
    acc = (gathered * weights).sum(dim=0).contiguous()
    summed = _all_reduce_f32(acc, group)
    _add_norm(summed, residual, weight, eps, out_norm, out_residual)
