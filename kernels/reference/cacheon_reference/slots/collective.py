"""Collective slots: all-reduce, fused all-reduce + residual + RMSNorm, MoE finalize."""

from __future__ import annotations

from .._torch import torch

from ..spec import OutputSpec
from .base import Slot, Streams, permutation, randn, rmsnorm_f32, uniform, uniform_f32

EPS = 1e-6


class AllReduce(Slot):
    """All-reduce: per-rank x (M, H) -> out (M, H) = sum over ranks."""

    name = "collective.all_reduce"
    reference_id = "collective.all_reduce.reference.v1"
    shape_params = ("M", "H")
    inputs = ("x",)
    count_keys = {"M": 1}
    token_key = "M"

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        return {"x": randn(s.own, (p["M"], p["H"]), dtype, 0.1)}

    def output_specs(self, p, dtype):
        return {"out": OutputSpec((p["M"], p["H"]), dtype)}

    def truth(self, p, ranks, dtype):
        return {"out": sum(r["x"].to(torch.float32) for r in ranks)}

    def live(self, p, world):
        return {"num_tokens": p["M"], "hidden_dim": p["H"], "last_dim": p["H"], "world_size": world, "tp_size": world}


class ARResidualRMSNorm(Slot):
    """All-reduce + residual add + RMSNorm: new_residual = sum(x) + residual,
    out_norm = rmsnorm(new_residual) * weight."""

    name = "collective.ar_residual_rmsnorm"
    reference_id = "collective.ar_residual_rmsnorm.reference.v1"
    shape_params = ("M", "H")
    inputs = ("x", "residual", "weight")
    scalars = ("eps",)
    outputs = ("out_norm", "out_residual")
    count_keys = {"M": 1}
    token_key = "M"

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        M, H = p["M"], p["H"]
        return {
            "x": randn(s.own, (M, H), dtype, 0.1),
            "residual": randn(s.rep, (M, H), dtype, 0.1),
            "weight": uniform(s.rep, (H,), 0.75, 1.25, dtype),
            "eps": EPS,
        }

    def output_specs(self, p, dtype):
        shape = (p["M"], p["H"])
        return {"out_norm": OutputSpec(shape, dtype), "out_residual": OutputSpec(shape, dtype)}

    def truth(self, p, ranks, dtype):
        r0 = ranks[0]
        res = sum(r["x"].to(torch.float32) for r in ranks) + r0["residual"].to(torch.float32)
        return {"out_norm": rmsnorm_f32(res, r0["weight"], r0["eps"]), "out_residual": res}

    def live(self, p, world):
        return {"num_tokens": p["M"], "hidden_dim": p["H"], "last_dim": p["H"], "world_size": world, "tp_size": world}


class MoEFinalizeARRMSNorm(Slot):
    """MoE finalize + all-reduce + residual + RMSNorm: acc[t] = sum_k scales[t,k] *
    gemm_out[row_map[t + k*T_exp]] over t < T, summed over ranks, then add + norm."""

    name = "collective.moe_finalize_ar_rmsnorm"
    reference_id = "collective.moe_finalize_ar_rmsnorm.reference.v1"
    shape_params = ("T", "T_exp", "K", "H")
    inputs = ("gemm_out", "row_map", "scales", "residual", "weight")
    scalars = ("eps",)
    outputs = ("out_norm", "out_residual")
    count_keys = {"T": 1}
    token_key = "T"
    # The engine's deep-export MoE epilogue runs in bfloat16 only.
    live_dtypes = ("bfloat16",)

    def normalize(self, p):
        # The head trim needs at least T expert rows, so when jitter (or
        # the regrow case) raises T past T_exp, the expert-token count grows
        # with it: T is the count the engine serves and stays what the plan
        # drew, as upstream's cases do ([84, 64] -> T_exp 84).
        p = dict(p)
        p["T_exp"] = max(p["T_exp"], p["T"])
        return p

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        T, T_exp, K, H = p["T"], p["T_exp"], p["K"], p["H"]
        gemm_out = randn(s.own, (T_exp * K, H), dtype, 0.1)
        row_map = permutation(s.rep, T_exp * K).to(torch.int32)
        scales = ((uniform_f32(s.rep, T_exp, K) + 0.1) / K).to(torch.float32)
        return {
            "gemm_out": gemm_out,
            "row_map": row_map,
            "scales": scales,
            "residual": randn(s.rep, (T, H), dtype, 0.1),
            "weight": uniform(s.rep, (H,), 0.75, 1.25, dtype),
            "eps": EPS,
        }

    def output_specs(self, p, dtype):
        shape = (p["T"], p["H"])
        return {"out_norm": OutputSpec(shape, dtype), "out_residual": OutputSpec(shape, dtype)}

    def truth(self, p, ranks, dtype):
        T, T_exp, K = p["T"], p["T_exp"], p["K"]
        total = None
        for r in ranks:
            g = r["gemm_out"].to(torch.float32)
            rm = r["row_map"].to(torch.int64)
            acc = torch.zeros(T, g.shape[1])
            for k in range(K):
                rows = rm[torch.arange(T) + k * T_exp]
                acc += r["scales"][:T, k].unsqueeze(1) * g[rows]
            total = acc if total is None else total + acc
        r0 = ranks[0]
        res = total + r0["residual"].to(torch.float32)
        return {"out_norm": rmsnorm_f32(res, r0["weight"], r0["eps"]), "out_residual": res}

    def live(self, p, world):
        return {"num_tokens": p["T"], "exp_tokens": p["T_exp"], "top_k": p["K"], "hidden_dim": p["H"],
                "last_dim": p["H"], "world_size": world, "tp_size": world}
