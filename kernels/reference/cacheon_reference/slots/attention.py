"""Attention slots: prefill SDPA, paged-free decode, and the two MSA block scorers."""

from __future__ import annotations

import math

from .._torch import torch

from ..spec import OutputSpec
from .base import Slot, Streams, ceil_div, normal_f32, randn, seq_lens

LOG2E = 1.4426950409


def _gqa_f32(q, k, v, scale, visible):
    """fp32 grouped-query attention for one sequence.

    q (T, Hq, D), k/v (S, Hkv, D); visible (T, S) bool or None.
    """
    qf, kf, vf = q.to(torch.float32), k.to(torch.float32), v.to(torch.float32)
    group = qf.shape[1] // kf.shape[1]
    kf = kf.repeat_interleave(group, dim=1)
    vf = vf.repeat_interleave(group, dim=1)
    scores = torch.einsum("thd,shd->hts", qf, kf) * scale
    if visible is not None:
        scores = scores.masked_fill(~visible.unsqueeze(0), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hts,shd->thd", probs, vf)


class SDPA(Slot):
    """Prefill attention: q (T, Hq, D), k/v (S, Hkv, D), causal with offset S-T -> out (T, Hq, D)."""

    name = "attention.sdpa"
    reference_id = "attention.sdpa.reference.v1"
    shape_params = ("T", "Hq", "Hkv", "D")
    inputs = ("q", "k", "v")
    scalars = ("sm_scale", "causal")
    count_keys = {"T": 1}

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        T, S = p["T"], p["T"]
        return {
            "q": randn(s.rep, (T, p["Hq"], p["D"]), dtype),
            "k": randn(s.rep, (S, p["Hkv"], p["D"]), dtype),
            "v": randn(s.rep, (S, p["Hkv"], p["D"]), dtype),
            "sm_scale": 1.0 / math.sqrt(p["D"]),
            "causal": True,
        }

    def output_specs(self, p, dtype):
        return {"out": OutputSpec((p["T"], p["Hq"], p["D"]), dtype)}

    def truth(self, p, ranks, dtype):
        r = ranks[0]
        T, S = r["q"].shape[0], r["k"].shape[0]
        visible = None
        if r["causal"]:
            t = torch.arange(T).unsqueeze(1)
            s = torch.arange(S).unsqueeze(0)
            visible = s <= t + (S - T)
        return {"out": _gqa_f32(r["q"], r["k"], r["v"], r["sm_scale"], visible)}

    def live(self, p, world):
        return {"num_tokens": p["T"], "q_len": p["T"], "kv_len": p["T"], "num_q_heads": p["Hq"],
                "num_kv_heads": p["Hkv"], "head_dim": p["D"], "last_dim": p["D"], "phase": "prefill"}


class Decode(Slot):
    """Decode attention: q (B, Hq, D), k/v cache (B, S, Hkv, D), seq_lens int32 (B) -> out (B, Hq, D)."""

    name = "attention.decode"
    reference_id = "attention.decode.reference.v1"
    shape_params = ("B", "Hq", "Hkv", "D", "ctx")
    inputs = ("q", "k", "v", "seq_lens")
    scalars = ("sm_scale",)
    count_keys = {"B": 2, "ctx": 1}

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        B, ctx = p["B"], p["ctx"]
        return {
            "q": randn(s.rep, (B, p["Hq"], p["D"]), dtype),
            "k": randn(s.rep, (B, ctx, p["Hkv"], p["D"]), dtype),
            "v": randn(s.rep, (B, ctx, p["Hkv"], p["D"]), dtype),
            "seq_lens": seq_lens(s.rep, B, 1, ctx),
            "sm_scale": 1.0 / math.sqrt(p["D"]),
        }

    def output_specs(self, p, dtype):
        return {"out": OutputSpec((p["B"], p["Hq"], p["D"]), dtype)}

    def truth(self, p, ranks, dtype):
        r = ranks[0]
        q, k, v, lens = r["q"], r["k"], r["v"], r["seq_lens"]
        S = k.shape[1]
        rows = []
        for b in range(q.shape[0]):
            visible = (torch.arange(S) < int(lens[b])).unsqueeze(0)
            rows.append(_gqa_f32(q[b:b + 1], k[b], v[b], r["sm_scale"], visible)[0])
        return {"out": torch.stack(rows)}

    def live(self, p, world):
        return {"batch_size": p["B"], "num_tokens": p["B"], "kv_len": p["ctx"], "num_q_heads": p["Hq"],
                "num_kv_heads": p["Hkv"], "head_dim": p["D"], "last_dim": p["D"], "phase": "decode"}


class MSABlockScore(Slot):
    """MSA decode block scores: head-summed q . index_k, masked past seq_len, per-block max -> block_scores (B, S/bs)."""

    name = "attention.msa_block_score"
    reference_id = "attention.msa_block_score.reference.v1"
    shape_params = ("B", "Hq", "D", "ctx", "bs")
    inputs = ("q", "index_k", "seq_lens")
    scalars = ("block_size",)
    outputs = ("block_scores",)
    count_keys = {"B": 2, "ctx": 1}

    MIN_BLOCKS = 12

    def normalize(self, p):
        p = dict(p)
        # Every row must keep at least 8 valid blocks, so top-8 is defined.
        p["ctx"] = max(p["ctx"], 8 * p["bs"])
        return p

    def n_blocks(self, p):
        return max(self.MIN_BLOCKS, ceil_div(p["ctx"], p["bs"]))

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        B, bs = p["B"], p["bs"]
        S = self.n_blocks(p) * bs
        return {
            "q": randn(s.rep, (B, p["Hq"], p["D"]), dtype),
            "index_k": randn(s.rep, (B, S, 1, p["D"]), dtype),
            "seq_lens": seq_lens(s.rep, B, 8 * bs, p["ctx"]),
            "block_size": bs,
        }

    def output_specs(self, p, dtype):
        return {"block_scores": OutputSpec((p["B"], self.n_blocks(p)), dtype)}

    def truth(self, p, ranks, dtype):
        r = ranks[0]
        q = r["q"].to(torch.float32).sum(dim=1)  # (B, D)
        k = r["index_k"].to(torch.float32)[:, :, 0]  # (B, S, D)
        B, S = k.shape[0], k.shape[1]
        scores = torch.einsum("bd,bsd->bs", q, k)
        pos = torch.arange(S).unsqueeze(0)
        scores = scores.masked_fill(pos >= r["seq_lens"].to(torch.int64).unsqueeze(1), float("-inf"))
        return {"block_scores": scores.view(B, S // r["block_size"], r["block_size"]).amax(dim=-1)}

    def live(self, p, world):
        return {"batch_size": p["B"], "num_tokens": p["B"], "kv_len": p["ctx"], "num_q_heads": p["Hq"],
                "head_dim": p["D"], "last_dim": p["D"], "block_size": p["bs"], "phase": "decode"}


class MSAPrefillBlockScore(Slot):
    """MSA prefill block scores: scaled q . index_k over the visible prefix + causal tail,
    per-block max -> fp32 block_scores (q_len, ceil(S/bs)), row-padded."""

    name = "attention.msa_prefill_block_score"
    reference_id = "attention.msa_prefill_block_score.reference.v1"
    shape_params = ("q_len", "prefix_blocks", "D", "bs", "causal_probe")
    inputs = ("q", "index_k")
    scalars = ("prefix_len", "scale", "block_size")
    outputs = ("block_scores",)
    count_keys = {"q_len": 1, "prefix_blocks": 12}

    ROW_PADDING = 7
    PREFIX_TAIL = 39

    def jitter_keys(self, p):
        # A causal probe keeps its q_len so the invisible tail spans the
        # blocks it was designed to span.
        if p.get("causal_probe"):
            return {"prefix_blocks": 12}
        return dict(self.count_keys)

    def dims(self, p):
        prefix = p["prefix_blocks"] * p["bs"] + self.PREFIX_TAIL
        S = prefix + p["q_len"]
        return prefix, S, ceil_div(S, p["bs"])

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        T, D = p["q_len"], p["D"]
        prefix, S, _ = self.dims(p)
        if p["causal_probe"]:
            # Scores rise with key position, so the truth's top blocks are the
            # last visible ones and a kernel that lets rows see the future
            # picks blocks the truth masks to -inf.
            u = normal_f32(s.rep, D)
            u = u / u.norm()
            q = 4.0 * u + 0.25 * normal_f32(s.rep, T, D)
            ramp = torch.arange(S, dtype=torch.float32).unsqueeze(1) * (8.0 / S)
            k = ramp * u + 0.25 * normal_f32(s.rep, S, D)
            q, k = q.to(dtype).contiguous(), k.to(dtype).contiguous()
        else:
            q = randn(s.rep, (T, D), dtype)
            k = randn(s.rep, (S, D), dtype)
        return {"q": q, "index_k": k, "prefix_len": prefix, "scale": D ** -0.5 * LOG2E, "block_size": p["bs"]}

    def output_specs(self, p, dtype):
        _, _, nb = self.dims(p)
        return {"block_scores": OutputSpec((p["q_len"], nb), torch.float32, row_padding=self.ROW_PADDING)}

    def truth(self, p, ranks, dtype):
        r = ranks[0]
        q, k = r["q"].to(torch.float32), r["index_k"].to(torch.float32)
        T, S = q.shape[0], k.shape[0]
        bs, prefix = r["block_size"], r["prefix_len"]
        nb = ceil_div(S, bs)
        scores = (q @ k.t()) * r["scale"]
        visible = torch.arange(S).unsqueeze(0) <= (prefix + torch.arange(T)).unsqueeze(1)
        scores = scores.masked_fill(~visible, float("-inf"))
        padded = torch.full((T, nb * bs), float("-inf"))
        padded[:, :S] = scores
        return {"block_scores": padded.view(T, nb, bs).amax(dim=-1)}

    def live(self, p, world):
        _, S, _ = self.dims(p)
        return {"q_len": p["q_len"], "num_tokens": p["q_len"], "kv_len": S, "head_dim": p["D"],
                "last_dim": p["D"], "block_size": p["bs"], "phase": "prefill"}
