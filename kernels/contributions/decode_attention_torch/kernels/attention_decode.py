"""attention.decode in plain torch.

q (B, Hq, D) holds one query token per sequence; k and v (B, S, Hkv, D)
are the KV cache; seq_lens (B, int32) says how many cache positions of
each sequence are valid. Query head h reads KV head h // (Hq // Hkv).
Scores and softmax are computed in fp32; the result is cast into the
validator-allocated out (B, Hq, D).
"""

import torch


def attention_decode(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_lens: torch.Tensor,
    sm_scale: float,
    out: torch.Tensor,
) -> None:
    batch, q_heads, head_dim = q.shape
    cache_len, kv_heads = k.shape[1], k.shape[2]
    group = q_heads // kv_heads
    qf = q.float().reshape(batch, kv_heads, group, head_dim)
    kf = k.float().permute(0, 2, 1, 3)  # (B, Hkv, S, D)
    vf = v.float().permute(0, 2, 1, 3)
    scores = torch.matmul(qf, kf.transpose(-1, -2)) * sm_scale  # (B, Hkv, group, S)
    positions = torch.arange(cache_len, device=q.device)
    masked = positions.unsqueeze(0) >= seq_lens.to(torch.int64).unsqueeze(1)  # (B, S)
    scores = scores.masked_fill(masked[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    result = torch.matmul(probs, vf)  # (B, Hkv, group, D)
    out.copy_(result.reshape(batch, q_heads, head_dim).to(out.dtype))
