"""The audit role: judge the calls an audit engine session recorded.

This process never imports candidate code. It reads the records the
candidate's engine left in its private directory (hostile input: every
file is read as a regular file of bounded size, every header field is
checked), recomputes the fp32 truth of each recorded call from the
recorded inputs with the validator's own slot semantics, and compares the
candidate's outputs with it under the slot's correctness policy and the
audit bar (spec: allclose slots need 0.995 of the elements within
tolerance, matched_ratio slots their min_ratio less 0.005, cosine and
top-k slots their own thresholds). It also fails a call whose inputs the
candidate changed.

Three kinds of trouble are kept apart, because they are attributed
differently: a violation (the candidate's output is wrong), a record
error (a record is missing, truncated or malformed: the candidate's
engine wrote it, so it is the candidate's failure) and an unsupported
slot (this validator cannot recompute the slot from a record: the
validator's shortfall).
"""

import hashlib
import json
import os
import struct

import cacheon_reference as ref
from cacheon_reference import tensorio
from cacheon_reference._torch import torch

from .protocol import PROTOCOL

INDEX = "index.json"
SUFFIX = ".rec"
INDEX_LIMIT = 1 << 20
HEADER_LIMIT = 1 << 20
RECORD_LIMIT = 64 << 20
MAX_RECORDS = 1 << 16
PPM = 1_000_000

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "int32": torch.int32, "int64": torch.int64, "bool": torch.bool, "uint8": torch.uint8}

# The shape parameters of a slot's truth, from a recorded call's named
# tensors. Slots absent here cannot be audited by this validator yet.
# The attention truths read their shapes from the recorded tensors
# themselves; the parameters are what their contracts name. The MoE slots
# take prepared expert weights, which a record does not hold (an opaque
# argument), so they stay unsupported: NO_DECISION, the validator's
# shortfall, never the candidate's.
PARAMS = {
    "norm.rmsnorm": lambda t: {"T": t["x"].shape[0], "H": t["x"].shape[1]},
    "activation.silu_and_mul": lambda t: {"T": t["x"].shape[0], "d": t["out"].shape[-1]},
    "attention.sdpa": lambda t: {"T": t["q"].shape[0], "Hq": t["q"].shape[1], "Hkv": t["k"].shape[1], "D": t["q"].shape[2]},
    "attention.decode": lambda t: {"B": t["q"].shape[0], "Hq": t["q"].shape[1], "Hkv": t["k"].shape[2], "D": t["q"].shape[2],
                                   "ctx": t["k"].shape[1]},
}


class RecordError(Exception):
    """A record is missing, truncated or malformed."""


def sampled(seed, slot, call, rate_ppm):
    # The schedule of cacheon_substrate.audit, recomputed here.
    if rate_ppm >= PPM:
        return True
    h = hashlib.sha256(f"{seed}\0{slot}\0{call}".encode()).digest()
    return int.from_bytes(h[:8], "big") % PPM < rate_ppm


def bar(policy):
    """The audit's threshold on a comparison's score, by mode."""
    if policy.mode == "allclose":
        return 0.995
    if policy.mode == "matched_ratio":
        return policy.min_ratio - 0.005
    if policy.mode == "cosine":
        return policy.min_cosine
    return policy.min_overlap


def _int(v, what):
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise RecordError(f"{what}: {v!r} is not a non-negative integer")
    return v


def read_index(d, slots):
    try:
        doc = json.loads(tensorio.read_regular(os.path.join(d, INDEX), INDEX_LIMIT).decode("utf-8"))
    except FileNotFoundError:
        raise RecordError(f"{INDEX} is missing: the engine ended without closing its audit") from None
    except (OSError, ValueError) as e:
        raise RecordError(f"{INDEX}: {e}") from None
    if not isinstance(doc, dict) or set(doc) != {"rank", "pid", "rate_ppm", "seed", "overflow", "calls", "recorded"}:
        raise RecordError(f"{INDEX}: not an audit index (keys {sorted(doc) if isinstance(doc, dict) else type(doc).__name__})")
    for k in ("calls", "recorded"):
        if not isinstance(doc[k], dict) or set(doc[k]) != set(slots):
            raise RecordError(f"{INDEX}: {k} must name exactly the expected slots {sorted(slots)}")
        for s, n in doc[k].items():
            _int(n, f"{INDEX}: {k}.{s}")
    _int(doc["rank"], f"{INDEX}: rank")
    _int(doc["pid"], f"{INDEX}: pid")
    if not isinstance(doc["overflow"], bool):
        raise RecordError(f"{INDEX}: overflow must be a boolean")
    return doc


def parse_record(data, name):
    """The header and body of one record; every offset checked."""
    if len(data) < 8:
        raise RecordError(f"{name}: {len(data)} bytes, truncated before its header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > HEADER_LIMIT or 8 + n > len(data):
        raise RecordError(f"{name}: header length {n} exceeds the record ({len(data)} bytes) or {HEADER_LIMIT}")
    try:
        head = json.loads(data[8:8 + n].decode("utf-8"))
    except ValueError as e:
        raise RecordError(f"{name}: header is not JSON: {e}") from None
    if not isinstance(head, dict) or set(head) != {"slot", "call", "origin", "args"} or not isinstance(head["args"], list):
        raise RecordError(f"{name}: header fields {sorted(head) if isinstance(head, dict) else '?'}")
    return head, memoryview(data)[8 + n:]


def _tensor(entry, body, where, which):
    dtype = DTYPES.get(entry.get("dtype"))
    if dtype is None:
        raise RecordError(f"{where}: dtype {entry.get('dtype')!r}")
    shape = entry.get("shape")
    if not isinstance(shape, list) or len(shape) > 8:
        raise RecordError(f"{where}: shape {shape!r}")
    count = 1
    for s in shape:
        count *= _int(s, f"{where}: shape")
    span = entry.get(which)
    if not isinstance(span, list) or len(span) != 2:
        raise RecordError(f"{where}: {which} span {span!r}")
    b, e = _int(span[0], f"{where}: {which}"), _int(span[1], f"{where}: {which}")
    elem = torch.empty((), dtype=dtype).element_size()
    if e > len(body) or e - b != count * elem or b > e:
        raise RecordError(f"{where}: {which} bytes [{b}, {e}) do not hold {shape} {entry['dtype']} in a body of {len(body)}")
    raw = torch.frombuffer(bytearray(body[b:e]), dtype=torch.uint8) if e > b else torch.empty(0, dtype=torch.uint8)
    if dtype == torch.bool:
        return raw.to(torch.bool).reshape(shape)
    return raw.view(dtype).reshape(shape).clone()


def judge_call(bound, head, body, name):
    """(score, passed, reason) of one record."""
    c = bound.contract
    args = head["args"]
    if len(args) != len(c.call):
        raise RecordError(f"{name}: {len(args)} arguments, the contract's call has {len(c.call)}")
    inputs, outputs, mutated = {}, {}, []
    for argname, entry in zip(c.call, args):
        where = f"{name}: argument {argname}"
        if not isinstance(entry, dict):
            raise RecordError(f"{where}: not an object")
        kind = entry.get("kind")
        if kind == "tensor":
            pre, post = _tensor(entry, body, where, "pre"), _tensor(entry, body, where, "post")
            if argname in c.outputs:
                outputs[argname] = post
            else:
                inputs[argname] = pre
                if bytes(body[entry["pre"][0]:entry["pre"][1]]) != bytes(body[entry["post"][0]:entry["post"][1]]):
                    mutated.append(argname)
        elif kind == "scalar":
            v = entry.get("value")
            if not isinstance(v, (bool, int, float)):
                raise RecordError(f"{where}: scalar {v!r}")
            inputs[argname] = v
        elif kind in ("tuple", "opaque"):
            inputs[argname] = None  # prepared state or a process group: not needed by the op truths audited here
        else:
            raise RecordError(f"{where}: kind {kind!r}")
    missing = [o for o in c.outputs if o not in outputs]
    if missing:
        raise RecordError(f"{name}: outputs {missing} are not tensors")
    p = PARAMS[c.slot]({**inputs, **outputs})
    dtype = next(iter(outputs.values())).dtype
    dname = str(dtype).replace("torch.", "")
    if dname not in c.tolerances:
        raise RecordError(f"{name}: output dtype {dname} has no tolerance in the contract")
    atol, rtol = c.tolerances[dname]
    truth = bound.semantics.truth(p, [inputs], dtype)
    comps = ref.compare_all(outputs, truth, c.correctness, atol, rtol)
    w = ref.worst(comps)
    threshold = bar(c.correctness)
    score = w.score if w.score == w.score else 0.0
    passed = score >= threshold if c.correctness.mode in ("allclose", "matched_ratio") else w.passed
    reason = w.reason
    if mutated:
        passed, reason = False, f"inputs {', '.join(mutated)} changed by the call; " + reason
    return score, passed, reason, threshold


def judge_rank(d, rank, bounds, seed, rate, budget):
    """Receipts of one rank's directory, or a record error."""
    slots = sorted(bounds)
    idx = read_index(d, slots)
    if idx["rank"] != rank:
        raise RecordError(f"{INDEX}: rank {idx['rank']}, this directory is rank {rank}'s")
    if idx["seed"] != seed or idx["rate_ppm"] != rate:
        raise RecordError(f"{INDEX}: seed or rate differ from the audit policy's")
    try:
        names = os.listdir(d)
    except OSError as e:
        raise RecordError(f"{d}: {e}") from None
    records = sorted(n for n in names if n.endswith(SUFFIX))
    if len(records) > MAX_RECORDS:
        raise RecordError(f"{len(records)} records, more than {MAX_RECORDS}")
    stray = [n for n in records if not any(n.startswith(s + ".") and n[len(s) + 1:-len(SUFFIX)].isdigit() for s in slots)]
    if stray:
        raise RecordError(f"{len(stray)} records of no expected slot (first {stray[0]!r})")
    total = 0
    receipts = []
    for slot in slots:
        bound = bounds[slot]
        calls = idx["calls"][slot]
        want = [i for i in range(calls) if sampled(seed, slot, i, rate)]
        have = sorted(n for n in records if n.startswith(slot + ".") and n[len(slot) + 1:-len(SUFFIX)].isdigit())
        wanted = [f"{slot}.{i:07d}{SUFFIX}" for i in want]
        if not idx["overflow"] and have != wanted:
            extra, lost = sorted(set(have) - set(wanted)), sorted(set(wanted) - set(have))
            raise RecordError(f"{slot}: the index counts {calls} calls ({len(wanted)} sampled) but "
                              f"{len(lost)} records are missing (first {lost[:1]}) and {len(extra)} unexpected (first {extra[:1]})")
        if idx["recorded"][slot] != len(have):
            raise RecordError(f"{slot}: the index says {idx['recorded'][slot]} records, {len(have)} are here")
        r = {"slot": slot, "rank": rank, "pid": idx["pid"], "world_size": 1, "calls": calls, "n": 0, "violations": 0,
             "compare_errors": 0, "worst_frac": "1", "bar": "", "mode": bound.contract.correctness.mode,
             "first_violation": None, "origins": {}}
        worst = 1.0
        for n in have:
            data = tensorio.read_regular(os.path.join(d, n), RECORD_LIMIT)
            total += len(data)
            if total > budget:
                raise RecordError(f"the records hold more than the recorder's budget of {budget} bytes")
            head, body = parse_record(data, n)
            call = int(n[len(slot) + 1:-len(SUFFIX)])
            if head["slot"] != slot or head["call"] != call or not isinstance(head["origin"], str):
                raise RecordError(f"{n}: header names {head['slot']!r} call {head['call']!r}")
            r["origins"][head["origin"][:200]] = r["origins"].get(head["origin"][:200], 0) + 1
            try:
                score, passed, reason, threshold = judge_call(bound, head, body, n)
            except RecordError:
                raise
            except Exception as e:  # the truth could not be computed on what was recorded
                r["compare_errors"] += 1
                if r["first_violation"] is None:
                    r["first_violation"] = {"call": call, "frac": "0", "reason": f"compare error: {type(e).__name__}: {e}"[:500]}
                continue
            r["n"] += 1
            r["bar"] = repr(threshold)
            worst = min(worst, score)
            if not passed:
                r["violations"] += 1
                if r["first_violation"] is None:
                    r["first_violation"] = {"call": call, "frac": repr(score), "reason": reason[:500]}
        r["worst_frac"] = repr(worst)
        if not r["bar"]:
            r["bar"] = repr(bar(bound.contract.correctness))
        receipts.append(r)
    return receipts, idx["overflow"]


def run(req, progress):
    contracts = req.get("contracts")
    dirs = req.get("record_dirs")
    seed, rate, budget = req.get("seed"), req.get("rate_ppm"), req.get("budget_bytes")
    if not isinstance(contracts, list) or not isinstance(dirs, list) or not isinstance(seed, str) or not isinstance(rate, int) \
            or not isinstance(budget, int) or budget < 1:
        raise ValueError("an audit request needs contracts, record_dirs, seed, rate_ppm and a positive budget_bytes")
    bounds, unsupported = {}, []
    for c in contracts:
        b = ref.bind(c)
        if b.contract.slot not in PARAMS:
            unsupported.append(b.contract.slot)
        bounds[b.contract.slot] = b
    out = {"protocol": PROTOCOL, "role": "audit", "receipts": [], "record_errors": [], "unsupported": unsupported,
           "overflow": False}
    if unsupported:
        return out
    for rank, d in enumerate(dirs):
        progress("audit_rank", case=rank)
        try:
            receipts, overflow = judge_rank(d, rank, bounds, seed, rate, budget)
        except (RecordError, OSError, ValueError) as e:
            out["record_errors"].append({"rank": rank, "reason": str(e)[:1000]})
            continue
        out["receipts"].extend(receipts)
        out["overflow"] = out["overflow"] or overflow
    return out
