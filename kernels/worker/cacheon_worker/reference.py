"""The reference role: judge a candidate's recorded outputs.

This process never imports candidate code. It regenerates every call's
inputs from the case seeds, computes the fp32 truth, and compares it with
the call's outputs under the correctness policy and the tolerance for the
run's dtype that the request's catalog contract states.

With witness_dirs (verify always gives them), every fact comes from the
controller's copy of the call's memory, taken while the candidate's
sandbox was stopped right after the call (Witnessed,
cacheon_reference.arena; on a GPU the checker role copied the device
memory): the inputs must be bit-identical to the regenerated ones, the row
padding still the poison, and the outputs are read at the validator's
strides. The candidate's own record then only adds reasons to fail.
Without them the outputs are the raw bytes the candidate process wrote,
and its account of its inputs is checked against the reference's own: the
digest before each call must equal that of the regenerated inputs, and
the digest after it unchanged.
"""

import json
import os

import torch

import cacheon_reference as ref
from cacheon_reference import arena, tensorio
from cacheon_reference.plan import NUDGED, call_inputs, phase_seeds, sequence_seeds

from .protocol import PROTOCOL, RESULT_FILE


# A candidate record larger than this is refused unread (the controller's
# own limit on result files is the same).
RECORD_LIMIT = 64 << 20


class Witnessed:
    """One call's memory as the controller copied it, with the candidate's
    whole sandbox stopped, right after the call returned (see
    cacheon_reference.arena). None of it passed through the candidate's
    process after that moment."""

    def __init__(self, path, inputs, specs):
        self.regions, self.total = arena.layout(inputs, specs)
        data = tensorio.read_regular_array(path, self.total)
        if len(data) != self.total:
            raise ValueError(f"the call's memory is {len(data)} bytes, its layout {self.total}")
        self.buf = torch.from_numpy(data)

    def region(self, kind, name):
        r = next(x for x in self.regions if x.kind == kind and x.name == name)
        return arena.view(self.buf, r)


def witnessed_facts(w, inputs, specs, call_index):
    """The reason the witnessed memory fails the call's rules, or "": every
    input bit-identical to the validator's regenerated one, every output's
    row padding still the poison of this call."""
    for name, t in inputs.items():
        if isinstance(t, torch.Tensor) and not tensorio.same_bytes(w.region("input", name), t):
            return f"input {name} was modified in place"
    for name, spec in specs.items():
        mask = spec.padding_mask("cpu")
        if mask is None:
            continue
        backing = w.region("output", name)
        expect = torch.empty_like(backing)
        tensorio.poison(expect, call_index)
        got, want = backing[mask], expect[mask]
        if got.dtype.is_floating_point:
            ok = bool(torch.isnan(got).all())
        else:
            ok = bool(torch.equal(got, want))
        if not ok:
            return f"output {name}: row padding outside the logical view was written"
    return ""


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


def judge_phase(slot, params, dtype, tol, rec, own_pre, expected, rank_dir, world, witness=None):
    """Verdict of one rank's record of one call: (passed, reason, comparison).
    witness is (snapshot path, regenerated inputs, call index) when the
    controller witnessed the call: its copy then decides every fact, and
    the candidate's own record only adds reasons to fail."""
    status = rec.get("status")
    if status == "raised":
        return False, f"entry raised {rec.get('error', 'an exception')}", None
    violations = rec.get("violations") or []
    if status not in ("ok", "violated"):
        return False, f"unknown call status {status!r}", None
    specs = slot.output_specs(params, dtype)
    w = None
    if witness is not None:
        path, inputs, call_index = witness
        if not os.path.exists(path):
            return False, "the controller holds no copy of the call's memory (the harness never said it returned)", None
        try:
            w = Witnessed(path, inputs, specs)
        except (OSError, ValueError) as e:
            return False, f"the call's memory as the controller copied it is unusable: {e}", None
        wrong = witnessed_facts(w, inputs, specs, call_index)
        if wrong:
            pre = rec.get("inputs_pre") or {}
            if wrong.startswith("input ") and any(pre.get(n) != d for n, d in own_pre.items()):
                name = wrong.split()[1]
                wrong = (f"input {name} seen by the candidate differs from the validator's regenerated input "
                         f"(inputs were tampered with before the call)")
            return False, wrong, None
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
    atol, rtol = tol
    actual = {}
    files = rec.get("outputs") or {}
    for name, spec in specs.items():
        if w is not None:
            # The copy is this process's own memory: a view of it is enough.
            actual[name] = arena.output_view(w.region("output", name), spec).contiguous()
            continue
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
    witness_dirs = req.get("witness_dirs") or None
    if witness_dirs is not None and len(witness_dirs) != world:
        raise ValueError(f"{len(witness_dirs)} witness directories for world size {world}")
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
        for call_index, (phase, seed, params) in enumerate(case_calls(slot, case, dtype, world, graph)):
            # The poison of a call's outputs counts the calls made on the
            # same tensors before it; every step of a sequence case has its own.
            poison_index = 0 if case.steps else call_index
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
                        witness = None
                        if witness_dirs is not None:
                            witness = (os.path.join(witness_dirs[r], arena.snapshot_name(case.index, phase)), inputs[r],
                                       poison_index)
                        passed, reason, comp = judge_phase(slot, params, dtype, (atol, rtol), rec, own, expected, dirs[r],
                                                           world, witness)
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
