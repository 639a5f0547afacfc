"""MoE expert slots: fused experts on one rank, and the sharded-reduce form."""

from __future__ import annotations

from .._torch import torch

from ..spec import OutputSpec
from .base import Slot, Streams, randn, silu_mul_f32, uniform, uniform_f32


def routing(g: torch.Generator, M: int, E: int, K: int):
    """topk_ids int32 (M, K), K distinct experts per token, and raw
    (unnormalized) fp32 topk_weights in [0.25, 0.75)."""
    ids = torch.argsort(uniform_f32(g, M, E), dim=-1)[:, :K].to(torch.int32).contiguous()
    weights = uniform(g, (M, K), 0.25, 0.75, torch.float32)
    return ids, weights


def experts_f32(x, topk_ids, topk_weights, w13, w2) -> torch.Tensor:
    """sum_k w_k * (silu(gate) * up) @ w2[e_k]^T in fp32.

    w13 (E, 2I, H) stacks gate over up; w2 (E, H, I).
    """
    xf = x.to(torch.float32)
    ids = topk_ids.to(torch.int64)
    tw = topk_weights.to(torch.float32)
    E, twoI, _ = w13.shape
    inter = twoI // 2
    out = torch.zeros(xf.shape[0], w2.shape[1], dtype=torch.float32)
    for e in range(E):
        sel = ids == e
        rows = sel.any(dim=-1).nonzero().flatten()
        if rows.numel() == 0:
            continue
        weight = (tw * sel).sum(dim=-1)[rows]
        h = xf[rows] @ w13[e].to(torch.float32).t()
        act = silu_mul_f32(h[:, :inter], h[:, inter:])
        out[rows] += weight.unsqueeze(1) * (act @ w2[e].to(torch.float32).t())
    return out


class FusedExperts(Slot):
    """Fused MoE experts: prepare(w13, w2); x (M, H), topk_ids int32 (M, K), topk_weights fp32 (M, K)
    -> out (M, H) = sum_k w_k * SiLU-gated expert."""

    name = "moe.fused_experts"
    reference_id = "moe.fused_experts.reference.v1"
    shape_params = ("M", "E", "H", "I", "K")
    inputs = ("x", "topk_ids", "topk_weights", "w13", "w2")
    prepare_args = ("w13", "w2")
    count_keys = {"M": 1}
    token_key = "M"

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        M, E, H, I, K = p["M"], p["E"], p["H"], p["I"], p["K"]
        x = randn(s.rep, (M, H), dtype, 0.1)
        ids, weights = routing(s.rep, M, E, K)
        w13 = randn(s.rep, (E, 2 * I, H), dtype, 0.05)
        w2 = randn(s.rep, (E, H, I), dtype, 0.05)
        return {"x": x, "topk_ids": ids, "topk_weights": weights, "w13": w13, "w2": w2}

    def output_specs(self, p, dtype):
        return {"out": OutputSpec((p["M"], p["H"]), dtype)}

    def truth(self, p, ranks, dtype):
        r = ranks[0]
        return {"out": experts_f32(r["x"], r["topk_ids"], r["topk_weights"], r["w13"], r["w2"])}

    def live(self, p, world):
        return {"num_tokens": p["M"], "num_experts": p["E"], "hidden_dim": p["H"], "intermediate_dim": p["I"],
                "top_k": p["K"], "last_dim": p["H"]}


class FusedExpertsReduce(FusedExperts):
    """Fused MoE experts with the cross-rank reduce: tokens and routing replicated, expert weights
    sharded per rank -> out (M, H) = sum over ranks of the local expert output."""

    name = "moe.fused_experts_reduce"
    reference_id = "moe.fused_experts_reduce.reference.v1"

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        M, E, H, I, K = p["M"], p["E"], p["H"], p["I"], p["K"]
        x = randn(s.rep, (M, H), dtype, 0.1)
        ids, weights = routing(s.rep, M, E, K)
        w13 = randn(s.own, (E, 2 * I, H), dtype, 0.05)
        w2 = randn(s.own, (E, H, I), dtype, 0.05)
        return {"x": x, "topk_ids": ids, "topk_weights": weights, "w13": w13, "w2": w2}

    def truth(self, p, ranks, dtype):
        total = None
        for r in ranks:
            part = experts_f32(r["x"], r["topk_ids"], r["topk_weights"], r["w13"], r["w2"])
            total = part if total is None else total + part
        return {"out": total}

    def live(self, p, world):
        live = super().live(p, world)
        live.update({"world_size": world, "tp_size": world})
        return live
