"""norm.rmsnorm: out = x * rsqrt(mean(x^2) + eps) * weight (residual add stays outside)."""

from __future__ import annotations

from ..spec import OutputSpec
from .base import Slot, Streams, randn, rmsnorm_f32, uniform

EPS = 1e-6


class RMSNorm(Slot):
    """RMSNorm: x (T, H), weight (H), eps -> out (T, H)."""

    name = "norm.rmsnorm"
    reference_id = "norm.rmsnorm.reference.v1"
    shape_params = ("T", "H")
    inputs = ("x", "weight")
    scalars = ("eps",)
    count_keys = {"T": 1}

    def generate(self, p, dtype, seed, rank=0, world=1):
        s = Streams(seed, rank)
        x = randn(s.rep, (p["T"], p["H"]), dtype)
        w = uniform(s.rep, (p["H"],), 0.75, 1.25, dtype)
        return {"x": x, "weight": w, "eps": EPS}

    def output_specs(self, p, dtype):
        return {"out": OutputSpec((p["T"], p["H"]), dtype)}

    def truth(self, p, ranks, dtype):
        r = ranks[0]
        return {"out": rmsnorm_f32(r["x"], r["weight"], r["eps"])}

    def live(self, p, world):
        return {"num_tokens": p["T"], "hidden_dim": p["H"], "last_dim": p["H"]}
