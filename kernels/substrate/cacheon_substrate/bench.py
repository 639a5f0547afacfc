"""Decode throughput against the HBM roofline.

A decode step must at least read every weight once and the keys and values
each sequence attends to, so bytes / bandwidth is a floor on its time:

  roofline_step_s = (weight_bytes + kv_bytes_per_step) / peak_bandwidth

kv_bytes_per_step counts the attended context (prompt + tokens so far,
averaged over the decode); the full-cache figure is reported beside it.
"""

import hashlib
import statistics
from typing import Dict

import torch

from .engine import Engine, prompts
from .model import Model

HBM_PEAK_BYTES_PER_S = 4.8e12  # H200 HBM3e


def kv_bytes(m: Model, batch: int, context: float) -> float:
    elem = torch.empty((), dtype=m.dtype).element_size()
    return 2.0 * len(m.w.layers) * batch * m.hkv * m.d * elem * context


def run(m: Model, batch: int, prompt_len: int, new_tokens: int, graph: bool, iters: int, warmup: int,
        prompt_seed: int = 1234, peak: float = HBM_PEAK_BYTES_PER_S) -> Dict[str, object]:
    eng = Engine(m, batch)
    p = prompts(batch, prompt_len, m.cfg.vocab_size, prompt_seed, m.device)
    if graph:
        eng.capture(p)
    for _ in range(warmup):
        eng.generate(p, new_tokens, use_graph=graph)
    gens = [eng.generate(p, new_tokens, use_graph=graph) for _ in range(iters)]
    dec = [g.decode_ms for g in gens]
    med = statistics.median(dec)
    step_ms = med / new_tokens
    wbytes = m.w.nbytes_per_decode_step()
    attended = prompt_len + (new_tokens + 1) / 2.0
    kv_att = kv_bytes(m, batch, attended)
    kv_full = kv_bytes(m, batch, m.max_len)
    roof_ms = (wbytes + kv_att) / peak * 1e3
    tokens = gens[-1].tokens
    same = all(torch.equal(g.tokens, tokens) for g in gens)
    return {
        "batch": batch, "prompt_len": prompt_len, "new_tokens": new_tokens, "graph": graph, "iters": iters,
        "decode_ms_median": med, "decode_ms": dec,
        "decode_cv_pct": 100.0 * statistics.pstdev(dec) / statistics.mean(dec) if len(dec) > 1 else 0.0,
        "step_ms": step_ms, "decode_tok_s": batch * new_tokens / (med / 1e3),
        "prefill_ms_median": statistics.median(g.prefill_ms for g in gens),
        "weight_bytes": wbytes, "kv_bytes_attended_per_step": kv_att, "kv_bytes_full_cache": kv_full,
        "roofline_step_ms": roof_ms, "roofline_tok_s": batch / (roof_ms / 1e3),
        "fraction_of_roofline": roof_ms / step_ms,
        "roofline_full_cache_step_ms": (wbytes + kv_full) / peak * 1e3,
        "tokens_sha256": hashlib.sha256(tokens.numpy().tobytes()).hexdigest(),
        "tokens_stable_across_iters": same,
        "slot_calls": {k: dict(v) for k, v in m.seam.calls.items()},
    }


def compare(arms: Dict[str, Model], batch: int, prompt_len: int, new_tokens: int, graph: bool, rounds: int,
            iters: int, warmup: int, prompt_seed: int = 1234, peak: float = HBM_PEAK_BYTES_PER_S) -> Dict[str, object]:
    """Arms in one process, measured in interleaved rounds (A, B, A, B, ...),
    so every arm shares the process's launch conditions; each round times
    `iters` generations per arm and keeps their median."""
    names = list(arms)
    engines, ps = {}, {}
    for name, m in arms.items():
        eng = Engine(m, batch)
        p = prompts(batch, prompt_len, m.cfg.vocab_size, prompt_seed, m.device)
        if graph:
            eng.capture(p)
        for _ in range(warmup):
            eng.generate(p, new_tokens, use_graph=graph)
        engines[name], ps[name] = eng, p
    per_round = {n: [] for n in names}
    tokens = {}
    for _ in range(rounds):
        for n in names:
            gens = [engines[n].generate(ps[n], new_tokens, use_graph=graph) for _ in range(iters)]
            per_round[n].append(statistics.median(g.decode_ms for g in gens))
            tokens[n] = gens[-1].tokens
    out = {"batch": batch, "prompt_len": prompt_len, "new_tokens": new_tokens, "graph": graph, "rounds": rounds,
           "iters": iters, "arms": {}}
    for n in names:
        m = arms[n]
        med = statistics.median(per_round[n])
        step_ms = med / new_tokens
        wbytes = m.w.nbytes_per_decode_step()
        kv_att = kv_bytes(m, batch, prompt_len + (new_tokens + 1) / 2.0)
        roof_ms = (wbytes + kv_att) / peak * 1e3
        out["arms"][n] = {
            "decode_ms_per_round": per_round[n], "decode_ms_median": med, "step_ms": step_ms,
            "decode_tok_s": batch * new_tokens / (med / 1e3), "roofline_step_ms": roof_ms,
            "roofline_tok_s": batch / (roof_ms / 1e3), "fraction_of_roofline": roof_ms / step_ms,
            "weight_bytes": wbytes, "kv_bytes_attended_per_step": kv_att,
            "tokens_sha256": hashlib.sha256(tokens[n].numpy().tobytes()).hexdigest(),
            "slot_calls": {k: dict(v) for k, v in m.seam.calls.items()},
        }
    base = out["arms"][names[0]]["decode_tok_s"]
    for n in names:
        out["arms"][n]["speedup_vs_" + names[0]] = out["arms"][n]["decode_tok_s"] / base
    return out
