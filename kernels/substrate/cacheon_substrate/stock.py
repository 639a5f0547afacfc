"""Stock implementations of the slots the substrate calls.

Each has exactly the slot's call ABI (the caller allocates every output and
the implementation only fills it), so a contribution and the stock
implementation are interchangeable at the seam. They are plain PyTorch, in
the model dtype, with no host synchronization, so CUDA graphs can capture
them.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F

_SDPA = getattr(F, "scaled_dot_product_attention", None)


def _takes_scale(fn) -> bool:
    import inspect
    try:
        return "scale" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


_SDPA_SCALE = _SDPA is not None and _takes_scale(_SDPA)


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    torch.mul(F.silu(x[..., :d]), x[..., d:], out=out)


def rmsnorm(x, weight, out, eps):
    # Hugging Face Llama style: statistics in fp32, normalized value rounded
    # to the activation dtype, then scaled by the weight.
    xf = x.to(torch.float32)
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    torch.mul(weight, normed.to(x.dtype), out=out)


def _attend(q, k, v, scale, mask):
    """q (N, Hkv, G, D) grouped queries; k/v (N, Hkv, S, D); mask broadcastable
    to (N, Hkv, G, S), True = visible."""
    if _SDPA_SCALE:
        return _SDPA(q, k, v, attn_mask=mask, scale=scale)
    if _SDPA is not None:
        # Older signature: fold the scale into q (SDPA divides by sqrt(D)).
        return _SDPA(q * (scale * q.shape[-1] ** 0.5), k, v, attn_mask=mask)
    s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    s = s.masked_fill(~mask, float("-inf"))
    return torch.matmul(s.softmax(-1), v.float()).to(q.dtype)


def sdpa(q, k, v, out, sm_scale, causal):
    """Prefill attention of one sequence: q (T, Hq, D), k/v (S, Hkv, D)."""
    T, Hq, D = q.shape
    S, Hkv = k.shape[0], k.shape[1]
    g = Hq // Hkv
    # Group the query heads of each KV head: (1, Hkv, g*T, D) with rows
    # ordered (head-in-group, position).
    qg = q.permute(1, 0, 2).reshape(Hkv, g, T, D).reshape(1, Hkv, g * T, D)
    kk = k.permute(1, 0, 2).unsqueeze(0)
    vv = v.permute(1, 0, 2).unsqueeze(0)
    if causal:
        t = torch.arange(T, device=q.device).repeat(g).unsqueeze(1)
        s = torch.arange(S, device=q.device).unsqueeze(0)
        mask = (s <= t + (S - T)).view(1, 1, g * T, S)
    else:
        mask = torch.ones(1, 1, g * T, S, dtype=torch.bool, device=q.device)
    o = _attend(qg, kk, vv, sm_scale, mask)  # (1, Hkv, g*T, D)
    out.copy_(o.reshape(Hkv, g, T, D).reshape(Hq, T, D).permute(1, 0, 2))


def decode(q, k, v, seq_lens, sm_scale, out):
    """One query per sequence: q (B, Hq, D), caches k/v (B, S, Hkv, D)."""
    B, Hq, D = q.shape
    S, Hkv = k.shape[1], k.shape[2]
    qg = q.view(B, Hkv, Hq // Hkv, D)
    mask = (torch.arange(S, device=q.device).unsqueeze(0) < seq_lens.to(torch.int64).unsqueeze(1)).view(B, 1, 1, S)
    o = _attend(qg, k.transpose(1, 2), v.transpose(1, 2), sm_scale, mask)
    out.copy_(o.reshape(B, Hq, D))


def prepare_experts(w13, w2):
    return (w13, w2)


def fused_experts(x, topk_ids, topk_weights, prepared, out):
    """Every expert over every token, weighted by the token's routing weight
    for it (zero when unrouted): data-independent control flow, so it can be
    captured in a CUDA graph. Fine for the small models the substrate tests."""
    w13, w2 = prepared
    E, two_i, _ = w13.shape
    inter = two_i // 2
    ids = topk_ids.to(torch.int64)
    acc = torch.zeros(out.shape, dtype=torch.float32, device=x.device)
    for e in range(E):
        weight = (topk_weights.to(torch.float32) * (ids == e)).sum(-1, keepdim=True)
        h = x @ w13[e].t()
        a = F.silu(h[:, :inter]) * h[:, inter:]
        acc += weight * (a @ w2[e].t()).to(torch.float32)
    out.copy_(acc)


def all_reduce(x, out, group):
    out.copy_(x)
    dist.all_reduce(out, group=group)


def ar_residual_rmsnorm(x, residual, weight, eps, out_norm, out_residual, group):
    out_residual.copy_(x)
    dist.all_reduce(out_residual, group=group)
    out_residual.add_(residual)
    rmsnorm(out_residual, weight, out_norm, eps)


def fused_experts_reduce(x, topk_ids, topk_weights, prepared, out, group):
    fused_experts(x, topk_ids, topk_weights, prepared, out)
    dist.all_reduce(out, group=group)


# slot -> (entry, prepare)
STOCK = {
    "activation.silu_and_mul": (silu_and_mul, None),
    "norm.rmsnorm": (rmsnorm, None),
    "attention.sdpa": (sdpa, None),
    "attention.decode": (decode, None),
    "moe.fused_experts": (fused_experts, prepare_experts),
    "moe.fused_experts_reduce": (fused_experts_reduce, prepare_experts),
    "collective.all_reduce": (all_reduce, None),
    "collective.ar_residual_rmsnorm": (ar_residual_rmsnorm, None),
}
