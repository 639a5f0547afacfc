"""Case planning: catalog shapes, seeded jitter, and fresh replay inputs.

Both the candidate harness and the reference checker call these functions
with the same arguments and get the same answers, so neither has to trust
the other's account of which inputs a call saw.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from typing import Dict, List, Tuple

from ._torch import torch

from .contract import BoundSlot as Slot
from .slots.base import index

JITTER_POLICY = "cacheon.verify-jitter.v1"

# Seed strides for fresh dynamic inputs: phase k, attempt a of a case with
# seed s draws from s + REPLAY_STRIDE*(k+1) + ATTEMPT_STRIDE*a.
REPLAY_STRIDE = 104_729
ATTEMPT_STRIDE = 1_000_003
MAX_ATTEMPTS = 8

# Graph replays use phase indices 0..2; the eager repeat uses 3 so its
# inputs never coincide with a replay's.
GRAPH_REPLAYS = 3
REPEAT_PHASE = 3

# The nudged call repeats the repeat call's inputs with one element of
# every floating-point dynamic input changed, at a position drawn from
# the repeat seed plus NUDGE_STRIDE. A cache keyed on a fingerprint of
# the inputs (the shape and a few values) replays the repeat call's
# output there, which is wrong where the changed element reaches.
NUDGED = "nudged"
NUDGE_STRIDE = 7_919


class FreshInputError(RuntimeError):
    """No attempt produced dynamic inputs that all differ from the previous call's."""


def jitter(value: int, floor: int, rng: random.Random) -> int:
    """max(floor, v + U{-1..3} + (v//3) * U{0,1})."""
    a = rng.randint(-1, 3)
    b = rng.randint(0, 1)
    return max(floor, value + a + (value // 3) * b)


def plan_cases(slot: Slot, seed: int, world: int) -> List[Dict[str, object]]:
    """The slot's verification cases for seed: every catalog shape of its
    contract, with its count parameters jittered from random.Random(seed).
    Case i draws its inputs from seed + i. Each case carries both the jittered and the catalog
    params with their live capability fields, so the controller can fall
    back to the catalog shape when jitter leaves a declared domain."""
    rng = random.Random(seed)
    cases = []
    for i, shape in enumerate(slot.catalog_shapes):
        catalog = slot.normalize(slot.params(shape))
        p = dict(catalog)
        for key, floor in slot.jitter_keys(catalog).items():
            p[key] = jitter(p[key], floor, rng)
        p = slot.normalize(p)
        cases.append({
            "index": i,
            "seed": seed + i,
            "params": p,
            "catalog_params": catalog,
            "live": slot.live(p, world),
            "catalog_live": slot.live(catalog, world),
            "describe": slot.describe(p),
        })
    return cases


# Planning a case draws the same inputs several times (the previous
# phase's, each attempt's, the call's own); a few recent draws are kept.
# Callers must treat returned tensors as read-only.
_MEMO: "OrderedDict[tuple, Dict[str, object]]" = OrderedDict()
_MEMO_ENTRIES = 6


def generate(slot: Slot, p, dtype, seed: int, rank: int, world: int) -> Dict[str, object]:
    key = (slot.name, tuple(sorted(p.items())), str(dtype), seed, rank, world)
    hit = _MEMO.get(key)
    if hit is not None:
        _MEMO.move_to_end(key)
        return dict(hit)
    v = slot.generate(p, dtype, seed, rank, world)
    _MEMO[key] = v
    while len(_MEMO) > _MEMO_ENTRIES:
        _MEMO.popitem(last=False)
    return dict(v)


def _dynamic(slot: Slot, p, dtype, seed: int, world: int) -> List[Dict[str, torch.Tensor]]:
    per_rank = []
    for r in range(world):
        v = generate(slot, p, dtype, seed, r, world)
        per_rank.append({n: v[n] for n in slot.dynamic_inputs})
    return per_rank


def fresh_seed(slot: Slot, p, dtype, case_seed: int, phase: int, previous_seed: int, world: int) -> int:
    """The first seed for phase whose dynamic inputs differ, on every rank
    and in every dynamic tensor, from those drawn from previous_seed."""
    before = _dynamic(slot, p, dtype, previous_seed, world)
    for attempt in range(MAX_ATTEMPTS):
        s = case_seed + REPLAY_STRIDE * (phase + 1) + ATTEMPT_STRIDE * attempt
        now = _dynamic(slot, p, dtype, s, world)
        if all(not torch.equal(now[r][n], before[r][n]) for r in range(world) for n in now[r]):
            return s
    raise FreshInputError(f"{slot.name}: no fresh dynamic inputs after {MAX_ATTEMPTS} attempts for phase {phase}")


def phase_seeds(slot: Slot, p, dtype, case_seed: int, world: int, graph: bool) -> List[Tuple[str, int]]:
    """The calls of one case in order, each with the seed its dynamic inputs
    come from: "eager" (the case seed: every input), "repeat" (fresh dynamic
    inputs written in place into the same tensors, eager again), "nudged"
    (the repeat's inputs with one element changed, call_inputs), then when
    the graph gate runs "replay0".."replay2" (fresh dynamic inputs copied
    into the captured tensors before each replay)."""
    phases = [("eager", case_seed)]
    repeat = fresh_seed(slot, p, dtype, case_seed, REPEAT_PHASE, case_seed, world)
    phases.append(("repeat", repeat))
    phases.append((NUDGED, repeat))
    if graph:
        prev = repeat
        for k in range(GRAPH_REPLAYS):
            s = fresh_seed(slot, p, dtype, case_seed, k, prev, world)
            phases.append((f"replay{k}", s))
            prev = s
    return phases


def phase_inputs(slot: Slot, p, dtype, case_seed: int, seed: int, rank: int, world: int) -> Dict[str, object]:
    """The full inputs of a call in a phase drawn from seed: static inputs
    (weights, scalars) from the case seed, dynamic ones from seed. The
    tensors may be shared with later calls: copy before writing to them."""
    base = generate(slot, p, dtype, case_seed, rank, world)
    if seed == case_seed:
        return base
    fresh = generate(slot, p, dtype, seed, rank, world)
    for n in slot.dynamic_inputs:
        base[n] = fresh[n]
    return base


def call_inputs(slot: Slot, p, dtype, case_seed: int, phase: str, seed: int, rank: int, world: int) -> Dict[str, object]:
    """The full inputs of the call of phase drawn from seed: phase_inputs,
    and for the nudged call one element of each floating-point dynamic
    input changed by one (the same position on every rank)."""
    v = phase_inputs(slot, p, dtype, case_seed, seed, rank, world)
    if phase != NUDGED:
        return v
    g = torch.Generator(device="cpu")
    g.manual_seed((seed + NUDGE_STRIDE) % (1 << 63))
    for n in slot.dynamic_inputs:
        t = v[n]
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point or t.numel() == 0:
            continue
        i = index(g, t.numel())
        t = t.clone()
        flat = t.view(-1)
        flat[i] = flat[i] + 1
        v[n] = t
    return v


# The regrow case of collective slots: three eager calls in one process at
# token counts big, small and big again, every other dim the big call's.
# An engine calls a collective at whatever token count the batch has, so a
# kernel that keeps state sized by an earlier call (a workspace, a
# registered buffer, a cached view) must still be right when the count
# grows again after shrinking; at each hidden size the catalog cases only
# ever grow.
REGROW = "regrow"
REGROW_PHASES = ("big", "small", "big_again")


def _tokens(slot: Slot, p, count: int) -> Dict[str, int]:
    q = dict(p)
    q[slot.token_key] = count
    return slot.normalize(q)


def _regrow_steps(slot: Slot, big, small_count: int, world: int):
    small = _tokens(slot, big, small_count)
    if small[slot.token_key] >= big[slot.token_key]:
        return None
    return [{"phase": phase, "params": dict(p), "live": slot.live(p, world)}
            for phase, p in zip(REGROW_PHASES, (big, small, big))]


def regrow_sequences(slot: Slot, cases: List[Dict[str, object]], seed: int, world: int) -> List[Dict[str, object]]:
    """The candidate shape sequences of a collective slot's regrow case, most
    preferred first; empty for other slots. The controller, which owns the
    op row's declared domain, runs the first whose three calls it admits
    (jittered steps, else the catalog steps).

    big is a planned case's shape (jittered, or its catalog shape in the
    catalog steps); small is big with only the token count lowered, to the
    jitter floor (one token: a single-request decode step) or to the token
    count of another planned case. Preference: the largest big count first
    (the case with the most state to go stale), then the smallest small
    count. The case takes the next index after the catalog cases and is
    seeded seed + index like them."""
    key = slot.token_key
    if not slot.collective or not key:
        return []
    floor = slot.count_keys.get(key, 1)
    index = len(cases)
    # Each small count with the catalog count it stands for: the floor is
    # its own, a case's jittered count stands for its catalog count, so a
    # catalog fallback keeps the sequence's intent.
    smalls = {floor: floor}
    for o in cases:
        smalls.setdefault(int(o["params"][key]), int(o["catalog_params"][key]))
    out = []
    for c in cases:
        big, cat = c["params"], c["catalog_params"]
        for s in sorted(smalls):
            steps = _regrow_steps(slot, big, s, world)
            if steps is None:
                continue
            cat_steps = _regrow_steps(slot, cat, smalls[s], world)
            out.append(((-big[key], s, c["index"]), {
                "index": index,
                "seed": seed + index,
                "name": REGROW,
                "steps": steps,
                "catalog_steps": cat_steps,
                "describe": describe_regrow(slot, big, steps[1]["params"]),
                "catalog_describe": describe_regrow(slot, cat, cat_steps[1]["params"]) if cat_steps else "",
            }))
    out.sort(key=lambda x: x[0])
    return [x for _, x in out]


def describe_regrow(slot: Slot, big, small) -> str:
    key = slot.token_key
    return f"{slot.describe(big)}, then {key}={small[key]}, then {key}={big[key]} again"


def sequence_seeds(slot: Slot, steps, dtype, case_seed: int, world: int) -> List[Tuple[str, int, Dict[str, int]]]:
    """(phase, seed, params) of each call of a sequence case (the regrow
    case), in order. The first call draws from the case seed; call k > 0
    from the fresh-input scheme at phase REPEAT_PHASE + k, fresh against
    the last earlier call of the same shape (so big_again never sees the
    big call's dynamic inputs: a stale result cannot pass for a right
    one)."""
    out = []
    for k, (phase, given) in enumerate(steps):
        # The slot's parameter order, whatever order the request had.
        params = {n: int(given[n]) for n in slot.shape_params if n in given}
        params.update((n, int(v)) for n, v in given.items() if n not in params)
        if k == 0:
            s = case_seed
        else:
            prev = next((ps for _, ps, pp in reversed(out) if pp == params), case_seed)
            s = fresh_seed(slot, params, dtype, case_seed, REPEAT_PHASE + k, prev, world)
        out.append((phase, s, dict(params)))
    return out
