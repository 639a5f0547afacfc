"""Correctness comparators: an output against its fp32 truth.

Every comparator returns a ``Comparison`` with a pass flag, a score in the
mode's own unit (ratio, cosine, overlap) and a reason a person can act on.
NaN never matches anything, including a NaN in the expected tensor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict

from ._torch import torch

from .spec import Correctness


@dataclass
class Comparison:
    passed: bool
    mode: str
    score: float  # matched fraction, cosine or overlap; 1.0 is perfect
    threshold: float
    max_abs_err: float
    reason: str
    # The matched elements of a truth below atol were, together, outside
    # rtol of it (_below_atol): a failure the score does not show.
    off_scale: bool = False

    def to_json(self):
        return {
            "passed": self.passed,
            "mode": self.mode,
            "score": _finite_or_str(self.score),
            "threshold": self.threshold,
            "max_abs_err": _finite_or_str(self.max_abs_err),
            "reason": self.reason,
        }


def _finite_or_str(x: float):
    # JSON has no NaN/inf; keep them readable and parseable.
    if x != x:
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return x


def _max_abs_err(a: torch.Tensor, e: torch.Tensor) -> float:
    both = torch.isfinite(a) & torch.isfinite(e)
    if not bool(both.any()):
        return 0.0
    return float((a - e).abs().masked_fill_(~both, 0.0).max())


def compare(actual: torch.Tensor, expected: torch.Tensor, policy: Correctness, atol: float, rtol: float) -> Comparison:
    """Judge actual (any float dtype) against expected (fp32) under policy."""
    if tuple(actual.shape) != tuple(expected.shape):
        return Comparison(False, policy.mode, 0.0, 0.0, float("inf"),
                          f"shape {tuple(actual.shape)} != expected {tuple(expected.shape)}")
    a = actual.detach().to(torch.float32).reshape(expected.shape)
    e = expected.detach().to(torch.float32)
    if policy.mode == "topk_overlap":
        return _topk(a, e, policy)
    if policy.mode == "cosine":
        return _cosine(a, e, policy, _max_abs_err(a, e))
    # The tensors can be hundreds of MB, so the common case takes the
    # fewest passes: with every expected element finite, a finite largest
    # |a - e| means every actual element is finite too (a = e ± |a - e|),
    # and it is the max abs error. Otherwise the full rule: finite
    # expected: within atol + rtol*|e| and finite; infinite expected:
    # matched exactly; NaN matches nothing.
    n = expected.numel()
    diff = (a - e).abs_()
    fe = torch.isfinite(e)
    mae = float(diff.max()) if n else 0.0
    if bool(fe.all()) and math.isfinite(mae):
        ok = diff <= e.abs().mul_(rtol).add_(atol)
        nonfinite = 0
    else:
        fa = torch.isfinite(a)
        ok = torch.where(fe, (diff <= atol + rtol * e.abs()) & fa, a == e)
        both = fa & fe
        mae = float(diff.masked_fill_(~both, 0.0).max()) if bool(both.any()) else 0.0
        nonfinite = int((~fa & fe).count_nonzero())
    good = int(ok.count_nonzero())
    frac = good / n if n else 1.0
    if policy.mode == "allclose":
        passed = frac == 1.0
        threshold = 1.0
    else:
        passed = frac >= policy.min_ratio
        threshold = policy.min_ratio
    off_scale = False
    if passed:
        reason = f"{frac:.6f} of elements within atol={atol:g} rtol={rtol:g}"
        weak = _below_atol(diff, e, fe, ok, atol, rtol)
        if weak is not None:
            rms, rel = weak
            if not rel <= rtol:  # NaN fails too
                passed, off_scale = False, True
                reason = (f"the truth's RMS {rms:.3g} is below atol={atol:g}, where the tolerance cannot tell an output "
                          f"from zero, so the matched elements must be within rtol={rtol:g} of it as a whole: "
                          f"relative L2 error {rel:.4g}")
            else:
                reason += f"; the truth's RMS {rms:.3g} is below atol, relative L2 error {rel:.4g} (at most rtol)"
    else:
        bad = n - good
        reason = f"{bad} of {n} elements outside atol={atol:g} rtol={rtol:g} (matched {frac:.6f}, need {threshold:g})"
        if nonfinite:
            reason += f"; {nonfinite} non-finite where finite expected"
    return Comparison(passed, policy.mode, frac, threshold, mae, reason, off_scale)


def _below_atol(diff: torch.Tensor, e: torch.Tensor, fe: torch.Tensor, ok: torch.Tensor, atol: float, rtol: float):
    """(RMS of the truth, relative L2 error of the matched elements) when
    the truth's RMS is below atol, else None. There the elementwise rule
    has no power: an output of zeros, or one that leaves out half of a sum,
    lies within atol of every element (the MoE cases' outputs are about
    0.002 against bfloat16's atol of 0.02), so the elements the rule
    matched are held, together, to rtol of their truth. The elements it did
    not match stay the ratio's business, as the catalog's policy says.
    This is the validator's own rule, beyond the catalog's
    (compatibility.md). diff is |actual - expected|; fe marks the finite
    expected elements and ok the matched ones."""
    if atol <= 0 or e.numel() == 0:
        return None
    whole = bool(fe.all())
    count = e.numel() if whole else int(fe.count_nonzero())
    if count == 0:
        return None
    rms = float(torch.linalg.vector_norm(e if whole else e.masked_fill(~fe, 0.0), dtype=torch.float64)) / math.sqrt(count)
    if rms >= atol:
        return None
    matched = ok if whole else ok & fe  # an infinite truth matched exactly adds nothing to either norm
    if not bool(matched.all()):
        diff, e = diff.masked_fill(~matched, 0.0), e.masked_fill(~matched, 0.0)
    norm = float(torch.linalg.vector_norm(e, dtype=torch.float64))
    if norm == 0.0:
        return None
    return rms, float(torch.linalg.vector_norm(diff, dtype=torch.float64)) / norm


def _cosine(a: torch.Tensor, e: torch.Tensor, policy: Correctness, mae: float) -> Comparison:
    if not bool(torch.isfinite(a).all()):
        bad = int((~torch.isfinite(a)).sum())
        return Comparison(False, "cosine", 0.0, policy.min_cosine, mae, f"{bad} non-finite elements")
    af, ef = a.reshape(-1).double(), e.reshape(-1).double()
    na, ne = float(af.norm()), float(ef.norm())
    if na == 0.0 or ne == 0.0:
        cos = 1.0 if na == ne else 0.0
    else:
        cos = float(af @ ef) / (na * ne)
    rel = abs(na - ne) / ne if ne else (0.0 if na == 0 else float("inf"))
    passed = cos >= policy.min_cosine
    reason = f"cosine {cos:.6f} (need {policy.min_cosine:g})"
    if policy.max_rel_norm_err > 0:
        if rel > policy.max_rel_norm_err:
            passed = False
        reason += f", rel norm err {rel:.4g} (max {policy.max_rel_norm_err:g})"
    return Comparison(passed, "cosine", cos, policy.min_cosine, mae, reason)


def _topk(a: torch.Tensor, e: torch.Tensor, policy: Correctness) -> Comparison:
    if bool(torch.isnan(a).any()) or bool((a == float("inf")).any()):
        bad = int((torch.isnan(a) | (a == float("inf"))).sum())
        return Comparison(False, "topk_overlap", 0.0, policy.min_overlap, float("inf"),
                          f"{bad} NaN or +inf scores (only -inf may mark unselectable cells)")
    a2 = a.reshape(-1, a.shape[-1])
    e2 = e.reshape(-1, e.shape[-1])
    k = min(policy.top_k, a2.shape[-1])
    ia = torch.topk(a2, k, dim=-1).indices
    ie = torch.topk(e2, k, dim=-1).indices
    # |A ∩ E| per row via a membership mask over the columns.
    mask_e = torch.zeros_like(e2, dtype=torch.bool).scatter_(1, ie, True)
    hits = mask_e.gather(1, ia).sum(dim=-1).to(torch.float64)
    overlap = float((hits / k).mean()) if hits.numel() else 1.0
    worst = float((hits / k).min()) if hits.numel() else 1.0
    passed = overlap >= policy.min_overlap
    reason = f"mean top-{k} overlap {overlap:.4f} (need {policy.min_overlap:g}, worst row {worst:.3f})"
    return Comparison(passed, "topk_overlap", overlap, policy.min_overlap, _max_abs_err(a, e), reason)


def compare_all(actual: Dict[str, torch.Tensor], expected: Dict[str, torch.Tensor], policy: Correctness,
                atol: float, rtol: float) -> Dict[str, Comparison]:
    """Compare every named output; a missing output fails."""
    out = {}
    for name, e in expected.items():
        if name not in actual:
            out[name] = Comparison(False, policy.mode, 0.0, 0.0, float("inf"), f"output {name!r} was not recorded")
            continue
        out[name] = compare(actual[name], e, policy, atol, rtol)
    return out


def worst(results: Dict[str, Comparison]) -> Comparison:
    """The output that fails, or the lowest-scoring one."""
    items = list(results.items())
    failing = [(n, c) for n, c in items if not c.passed]
    pool = failing or items
    name, c = min(pool, key=lambda nc: nc[1].score)
    if len(items) > 1:
        c = Comparison(c.passed, c.mode, c.score, c.threshold, c.max_abs_err, f"{name}: {c.reason}", c.off_scale)
    return c
