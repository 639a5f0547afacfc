"""activation.silu_and_mul: out = silu(x[:, :d]) * x[:, d:]."""

from __future__ import annotations

from .._torch import torch

from ..spec import OutputSpec
from .base import Slot, Streams, randn, silu_mul_f32


class SiluAndMul(Slot):
    """Gated SiLU: x (T, 2d) -> out (T, d) = silu(gate half) * up half."""

    name = "activation.silu_and_mul"
    reference_id = "activation.silu_and_mul.reference.v1"
    shape_params = ("T", "d")
    inputs = ("x",)
    count_keys = {"T": 1}

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        return {"x": randn(s.rep, (p["T"], 2 * p["d"]), dtype)}

    def output_specs(self, p, dtype):
        return {"out": OutputSpec((p["T"], p["d"]), dtype)}

    def truth(self, p, ranks, dtype):
        x = ranks[0]["x"]
        d = p["d"]
        return {"out": silu_mul_f32(x[:, :d], x[:, d:])}

    def live(self, p, world):
        return {"num_tokens": p["T"], "last_dim": 2 * p["d"], "intermediate_dim": p["d"]}
