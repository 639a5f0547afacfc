"""moe.fused_experts in plain torch.

prepare(w13, w2) runs once per layer: w13 (E, 2I, H) stacks each expert's
gate over its up projection, w2 (E, H, I) is its down projection. It
keeps them transposed, (E, H, 2I) and (E, I, H), so that a token's rows
multiply them without a transpose per call.

fused_experts(x, topk_ids, topk_weights, prepared, out): x (M, H), topk_ids
int32 (M, K), topk_weights fp32 (M, K). Each token's output is the
weighted sum of its K experts' SiLU-gated MLPs, accumulated in fp32 and
cast into the validator-allocated out (M, H).
"""

import torch
import torch.nn.functional as F


def prepare(w13: torch.Tensor, w2: torch.Tensor):
    return w13.transpose(1, 2).contiguous(), w2.transpose(1, 2).contiguous()


def fused_experts(x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, prepared, out: torch.Tensor) -> None:
    w13t, w2t = prepared
    inter = w13t.shape[2] // 2
    ids = topk_ids.to(torch.int64)
    weights = topk_weights.to(torch.float32)
    acc = torch.zeros(out.shape, dtype=torch.float32, device=x.device)
    for e in range(w13t.shape[0]):
        # The tokens routed to expert e, and each one's weight for it.
        routed = ids == e
        rows = routed.any(dim=-1).nonzero().flatten()
        if rows.numel() == 0:
            continue
        weight = (weights * routed).sum(dim=-1)[rows].unsqueeze(1)
        h = (x[rows] @ w13t[e]).float()
        act = (F.silu(h[:, :inter]) * h[:, inter:]).to(x.dtype)
        acc[rows] += weight * (act @ w2t[e]).float()
    out.copy_(acc)
