"""The reference role: judge a candidate's recorded outputs.

This process never imports candidate code. It regenerates every call's
inputs from the case seeds, computes the fp32 truth, and compares it with
the raw outputs the candidate process wrote, under the correctness policy
and the tolerance for the run's dtype that the request's catalog contract
states. It also checks the candidate's account of its inputs against its
own: the digest the candidate recorded before each call must equal the
digest of the regenerated inputs (so a candidate that tampers with the
generator at import time is caught), and the digest after the call must
be unchanged (inputs are read-only).
"""

import json
import os

import torch

import cacheon_reference as ref
from cacheon_reference import tensorio
from cacheon_reference.plan import NUDGED, call_inputs, phase_seeds, sequence_seeds

from .protocol import PROTOCOL, RESULT_FILE


# A candidate record larger than this is refused unread (the controller's
# own limit on result files is the same).
RECORD_LIMIT = 64 << 20


def _load_record(d):
    """A rank's record, or None when it is missing or unreadable: the file
    lies in a directory candidate code could write, so a broken one is the
    candidate's failure, never the reference's."""
    path = os.path.join(d, RESULT_FILE)
    try:
        rec = json.loads(tensorio.read_regular(path, RECORD_LIMIT).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


_SEQUENCE_LABELS = {"big": "big call", "small": "small call", "big_again": "big call again"}


def _phase_label(phase, slot=None, params=None):
    if phase == "eager":
        return "eager call"
    if phase == "repeat":
        return "repeat call on fresh inputs"
    if phase == NUDGED:
        return "repeat call with one input element changed"
    if phase in _SEQUENCE_LABELS:
        return f"{_SEQUENCE_LABELS[phase]} ({slot.describe(params)})"
    return f"graph {phase.replace('replay', 'replay ')}"


def case_calls(slot, case, dtype, world, graph):
    """(phase, seed, params) of every call of a case, as the candidate
    made them: a sequence case's steps at their own shapes, any other
    case's phases at the case's shape."""
    if case.steps:
        return sequence_seeds(slot, case.steps, dtype, case.seed, world)
    return [(phase, seed, case.params) for phase, seed in phase_seeds(slot, case.params, dtype, case.seed, world, graph)]


def judge_phase(slot, params, dtype, tol, rec, own_pre, expected, rank_dir, world):
    """Verdict of one rank's record of one call: (passed, reason, comparison)."""
    status = rec.get("status")
    if status == "raised":
        return False, f"entry raised {rec.get('error', 'an exception')}", None
    violations = rec.get("violations") or []
    if status not in ("ok", "violated"):
        return False, f"unknown call status {status!r}", None
    pre = rec.get("inputs_pre") or {}
    for name, d in own_pre.items():
        if pre.get(name) != d:
            return False, (f"input {name} seen by the candidate differs from the validator's regenerated input "
                           f"(inputs were tampered with before the call)"), None
    post = rec.get("inputs_post") or {}
    for name, d in own_pre.items():
        if post.get(name) != d:
            violations = violations + [f"input {name} was modified in place"]
    if violations:
        return False, "; ".join(dict.fromkeys(violations)), None
    specs = slot.output_specs(params, dtype)
    atol, rtol = tol
    actual = {}
    files = rec.get("outputs") or {}
    for name, spec in specs.items():
        f = files.get(name)
        if not f:
            return False, f"output {name} was not recorded", None
        fname = os.path.basename(str(f.get("file", "")))
        try:
            actual[name] = tensorio.read_tensor(os.path.join(rank_dir, fname), spec.dtype, spec.shape)
        except (OSError, ValueError) as e:
            return False, f"output {name} unreadable: {e}", None
    results = ref.compare_all(actual, expected, slot.correctness, atol, rtol)
    c = ref.worst(results)
    unwritten = [n for n, t in actual.items() if t.dtype.is_floating_point and bool(torch.isnan(t).all())]
    if unwritten and not c.passed:
        return False, f"output {', '.join(unwritten)} never written (still the NaN poison)", c
    return c.passed, c.reason, c


def run(req, progress):
    slot = ref.bind(req["contract"])
    dtype = ref.dtype_of(req["dtype"])
    world = int(req.get("world_size", 1))
    graph = bool(req.get("graph"))
    dirs = req["candidate_dirs"]
    if len(dirs) != world:
        raise ValueError(f"{len(dirs)} candidate directories for world size {world}")
    records = [_load_record(d) for d in dirs]
    verdict = {"protocol": PROTOCOL, "role": "reference", "slot": slot.name, "variant": req.get("variant"),
               "correctness": slot.correctness.describe(), "cases": [], "passed": False, "reason": ""}
    # The catalog's tolerance for the run's dtype, from the contract.
    atol, rtol = slot.tolerance(req["dtype"])
    verdict["tolerance"] = {"atol": atol, "rtol": rtol}

    for r, rec in enumerate(records):
        if rec is None:
            verdict["reason"] = f"rank {r} left no readable record"
            return verdict
        load = rec.get("load")
        if load is not None and not load.get("ok"):
            verdict["reason"] = f"candidate module failed to load: {load.get('error')}"
            verdict["load_error"] = load
            return verdict

    all_passed = True
    for c in req["cases"]:
        case = ref.Case.from_json(c)
        progress("judge", case=case.index)
        out = {"index": case.index, "params": case.params, "describe": slot.describe(case.params),
               "phases": [], "passed": False, "reason": ""}
        if case.name:
            out["name"] = case.name
        verdict["cases"].append(out)
        case_recs = []
        for r, rec in enumerate(records):
            cr = next((x for x in rec.get("cases", []) if x.get("index") == case.index), None)
            case_recs.append(cr)
        missing = [r for r, cr in enumerate(case_recs) if cr is None]
        if missing:
            out["reason"] = f"no record for this case on rank {missing[0]} (the worker ended before it)"
            all_passed = False
            continue
        bad_prepare = next(((r, cr["prepare"]) for r, cr in enumerate(case_recs)
                            if cr.get("prepare") and cr["prepare"].get("status") != "ok"), None)
        if bad_prepare:
            r, pr = bad_prepare
            out["reason"] = (f"prepare raised {pr.get('error')}" if pr.get("status") == "raised"
                             else "; ".join(pr.get("violations") or ["prepare failed"]))
            all_passed = False
            continue
        case_ok = True
        for phase, seed, params in case_calls(slot, case, dtype, world, graph):
            inputs = [call_inputs(slot, params, dtype, case.seed, phase, seed, r, world) for r in range(world)]
            expected = slot.truth(params, inputs, dtype)
            prow = {"phase": phase, "passed": True, "reason": ""}
            if case.steps:
                prow["params"] = dict(params)
            for r, cr in enumerate(case_recs):
                rec = next((x for x in cr.get("phases", []) if x.get("phase") == phase), None)
                if rec is None:
                    g = cr.get("graph") or {}
                    if phase.startswith("replay") and g.get("status") == "capture_failed":
                        reason = f"CUDA graph capture failed: {g.get('error')}"
                    else:
                        reason = f"no record of the {_phase_label(phase, slot, params)}"
                    passed, comp = False, None
                else:
                    if int(rec.get("seed", -1)) != seed:
                        passed, reason, comp = False, f"recorded seed {rec.get('seed')} for {phase}, expected {seed}", None
                    else:
                        own = tensorio.digests(inputs[r])
                        passed, reason, comp = judge_phase(slot, params, dtype, (atol, rtol), rec, own, expected, dirs[r], world)
                if comp is not None:
                    prow.setdefault("comparisons", []).append(dict(comp.to_json(), rank=r))
                if not passed:
                    prow["passed"] = False
                    where = f"rank {r}: " if world > 1 else ""
                    prow["reason"] = f"{_phase_label(phase, slot, params)}: {where}{reason}"
                    break
                prow["reason"] = reason
            out["phases"].append(prow)
            if not prow["passed"]:
                case_ok = False
                if not out["reason"]:
                    out["reason"] = prow["reason"]
        out["passed"] = case_ok
        if case_ok:
            out["reason"] = out["phases"][0]["reason"] if out["phases"] else ""
        all_passed = all_passed and case_ok

    if not req["cases"]:
        verdict["reason"] = "no applicable case"
    elif all_passed:
        verdict["passed"] = True
        verdict["reason"] = f"{len(req['cases'])} of {len(req['cases'])} cases pass"
    else:
        failed = [c for c in verdict["cases"] if not c["passed"]]
        first = failed[0]
        named = f" ({first['name']})" if first.get("name") else ""
        verdict["reason"] = f"{len(failed)} of {len(req['cases'])} cases fail; first: case {first['index']}{named}: {first['reason']}"
    return verdict
