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
candidate changed. Which calls' records must be there it recomputes
from the seed, the rate, the budget, the call counts and each slot's
first record (the recorder's reservoir, cacheon_substrate.audit), and it
refuses a record more, a record less or an index that says otherwise.

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
# The recorder's reservoir (cacheon_substrate.audit), recomputed here: the
# most records a slot keeps, the room a record's header is given beyond
# the first's, and the prefix of the reservoir's draws.
MAX_KEPT = 8192
HEADER_SLACK = 256
RESERVOIR_DOMAIN = "cacheon.qualification.audit-reservoir.v1"
INDEX_KEYS = {"rank", "pid", "rate_ppm", "seed", "budget_bytes", "overflow", "calls", "capacity", "kept"}
OVERFLOW_KEYS = {"call", "record_bytes", "kept_bytes", "limit"}

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
          "int32": torch.int32, "int64": torch.int64, "bool": torch.bool, "uint8": torch.uint8}

# The shape parameters of a slot's truth, from a recorded call's named
# tensors. Slots absent here cannot be audited by this validator yet
# (NO_DECISION, the validator's shortfall, never the candidate's). The
# attention truths read their shapes from the recorded tensors
# themselves; the parameters are what their contracts name. The MoE
# expert slot's prepared state is recorded as the layer it was prepared
# from, and its w13 and w2 are read from the model (ModelExperts).
PARAMS = {
    "norm.rmsnorm": lambda t: {"T": t["x"].shape[0], "H": t["x"].shape[1]},
    "activation.silu_and_mul": lambda t: {"T": t["x"].shape[0], "d": t["out"].shape[-1]},
    "attention.sdpa": lambda t: {"T": t["q"].shape[0], "Hq": t["q"].shape[1], "Hkv": t["k"].shape[1], "D": t["q"].shape[2]},
    "attention.decode": lambda t: {"B": t["q"].shape[0], "Hq": t["q"].shape[1], "Hkv": t["k"].shape[2], "D": t["q"].shape[2],
                                   "ctx": t["k"].shape[1]},
    "moe.fused_experts": lambda t: {"M": t["x"].shape[0], "E": t["w13"].shape[0], "H": t["x"].shape[1],
                                    "I": t["w13"].shape[1] // 2, "K": t["topk_ids"].shape[1]},
}

# How many bytes of expert weights the judge keeps between records: the
# records come in call order, which cycles through the layers, so a model
# whose experts fit is read once; a larger one is read again per layer.
EXPERT_CACHE_BYTES = 4 << 30


class ModelError(Exception):
    """The model could not be read: the validator's trouble (the judge's
    harness error, NO_DECISION), never a record's fault."""


class ModelExperts:
    """One layer's expert weights (w13, w2) as the audited engine built
    them: read from the sealed model the engine served (its
    model.safetensors, cast to the config's dtype, stacked by the
    substrate's own code), never from the candidate's process."""

    def __init__(self, model_dir):
        self.dir, self.cfg, self.cache, self.bytes = model_dir, None, {}, 0

    def __call__(self, layer, where):
        if not isinstance(layer, int) or isinstance(layer, bool):
            raise RecordError(f"{where}: expert_weights layer {layer!r} is not an integer")
        if self.dir is None:
            raise ModelError(f"{where}: the call names expert weights, and the audit was given no model to read them from")
        from cacheon_substrate import safetensors as st, weights
        from cacheon_substrate.config import ModelConfig
        if self.cfg is None:
            try:
                self.cfg = ModelConfig.load(self.dir)
            except Exception as e:
                raise ModelError(f"the model's config: {type(e).__name__}: {e}") from None
        cfg = self.cfg
        if not cfg.is_moe or not 0 <= layer < cfg.num_hidden_layers:
            raise RecordError(f"{where}: expert_weights layer {layer}: the model has "
                              f"{cfg.num_hidden_layers} layers{'' if cfg.is_moe else ' and no experts'}")
        if layer not in self.cache:
            try:
                hf = st.load(os.path.join(self.dir, "model.safetensors"), weights.expert_names(cfg, layer))
                w13, w2 = weights.stack_experts({k: v.to(cfg.dtype) for k, v in hf.items()}, cfg, layer)
            except Exception as e:
                raise ModelError(f"layer {layer}'s experts: {type(e).__name__}: {e}") from None
            size = (w13.numel() + w2.numel()) * w13.element_size()
            if self.bytes + size > EXPERT_CACHE_BYTES:
                self.cache, self.bytes = {}, 0
            self.cache[layer] = (w13, w2)
            self.bytes += size
        return self.cache[layer]


def record_name(slot, call):
    return f"{slot}.{call:07d}{SUFFIX}"


class RecordError(Exception):
    """A record is missing, truncated or malformed."""


def sampled(seed, slot, call, rate_ppm):
    # The schedule of cacheon_substrate.audit, recomputed here.
    if rate_ppm >= PPM:
        return True
    h = hashlib.sha256(f"{seed}\0{slot}\0{call}".encode()).digest()
    return int.from_bytes(h[:8], "big") % PPM < rate_ppm


def draw(seed, slot, call, m):
    # The reservoir's draw of cacheon_substrate.audit, recomputed here.
    h = hashlib.sha256(f"{RESERVOIR_DOMAIN}\0{seed}\0{slot}\0{call}".encode()).digest()
    return int.from_bytes(h[:8], "big") % m


def reservoir(seed, slot, calls, capacity):
    """The reservoir after the sampled calls `calls` (in call order) with
    room for capacity - 1 records after the first: its records by
    position, as the recorder's _keep leaves them."""
    room, res = capacity - 1, []
    for m, c in enumerate(calls[1:], 1):
        if m <= room:
            res.append(c)
        else:
            x = draw(seed, slot, c, m)
            if x < room:
                res[x] = c
    return res


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
    if not isinstance(doc, dict) or set(doc) != INDEX_KEYS:
        raise RecordError(f"{INDEX}: not an audit index (keys {sorted(doc) if isinstance(doc, dict) else type(doc).__name__})")
    for k in ("calls", "capacity", "kept"):
        if not isinstance(doc[k], dict) or set(doc[k]) != set(slots):
            raise RecordError(f"{INDEX}: {k} must name exactly the expected slots {sorted(slots)}")
    for s in slots:
        _int(doc["calls"][s], f"{INDEX}: calls.{s}")
        _int(doc["capacity"][s], f"{INDEX}: capacity.{s}")
        kept = doc["kept"][s]
        if not isinstance(kept, list) or len(kept) > MAX_KEPT:
            raise RecordError(f"{INDEX}: kept.{s} must be a list of at most {MAX_KEPT} calls")
        for c in kept:
            _int(c, f"{INDEX}: kept.{s}")
    _int(doc["rank"], f"{INDEX}: rank")
    _int(doc["pid"], f"{INDEX}: pid")
    _int(doc["budget_bytes"], f"{INDEX}: budget_bytes")
    ov = doc["overflow"]
    if not isinstance(ov, dict) or not set(ov) <= set(slots):
        raise RecordError(f"{INDEX}: overflow must map expected slots to where they stopped recording")
    for s, e in ov.items():
        if not isinstance(e, dict) or set(e) != OVERFLOW_KEYS:
            raise RecordError(f"{INDEX}: overflow.{s} must hold exactly {sorted(OVERFLOW_KEYS)}")
        for k in OVERFLOW_KEYS:
            _int(e[k], f"{INDEX}: overflow.{s}.{k}")
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


def judge_call(bound, head, body, name, experts):
    """(score, passed, reason) of one record. experts reads a layer's
    expert weights (ModelExperts) for a call that names them."""
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
        elif kind == "expert_weights":
            inputs["w13"], inputs["w2"] = experts(entry.get("layer"), where)
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
    # The audit's bar is a little below the catalog's (bar()); a truth
    # below atol is held to its own scale all the same (off_scale).
    passed = (score >= threshold and not w.off_scale) if c.correctness.mode in ("allclose", "matched_ratio") else w.passed
    reason = w.reason
    if mutated:
        passed, reason = False, f"inputs {', '.join(mutated)} changed by the call; " + reason
    return score, passed, reason, threshold


def _read(d, name, slot, call):
    """One record's bytes, parsed header and body, its header checked
    against its name."""
    data = tensorio.read_regular(os.path.join(d, name), RECORD_LIMIT)
    head, body = parse_record(data, name)
    if head["slot"] != slot or head["call"] != call or not isinstance(head["origin"], str):
        raise RecordError(f"{name}: header names {head['slot']!r} call {head['call']!r}")
    return data, head, body


def expected_sample(d, slot, idx, seed, rate, share, budget, nslots):
    """The calls whose records slot must keep, recomputed from the seed,
    the rate, the call count, the slot's share of the budget and its first
    record's size (which fixes the capacity); the first record, read; and
    why the slot stopped recording ('' when it did not). The index's
    capacity and kept calls must be these, and where the slot stopped
    recording the index must say why in numbers this recomputation
    confirms."""
    calls = idx["calls"][slot]
    sampled_calls = [i for i in range(calls) if sampled(seed, slot, i, rate)]
    ov = idx["overflow"].get(slot)
    stop = calls
    if ov is not None:
        stop = ov["call"]
        if stop not in set(sampled_calls):
            raise RecordError(f"{INDEX}: overflow.{slot} names call {stop}, which is not a sampled call of the {calls} the index counts")
    before = [i for i in sampled_calls if i < stop]
    capacity, first, want = 0, None, []
    if before:
        name = record_name(slot, before[0])
        if not os.path.lexists(os.path.join(d, name)):
            raise RecordError(f"{slot}: the first sampled call's record {name} is missing; "
                              f"it is always kept, and its size sets the slot's capacity")
        first = _read(d, name, slot, before[0])
        size = len(first[0])
        if size > share:
            raise RecordError(f"{name}: {size} bytes, over the slot's share of {share} bytes, yet it was kept")
        capacity = max(1, min(share // (size + HEADER_SLACK), MAX_KEPT))
        want = sorted([before[0]] + reservoir(seed, slot, before, capacity))
    if idx["capacity"][slot] != capacity:
        raise RecordError(f"{INDEX}: capacity.{slot} is {idx['capacity'][slot]}, the slot's share of {share} bytes "
                          f"over its first record gives {capacity}")
    if idx["kept"][slot] != want:
        lost, extra = sorted(set(want) - set(idx["kept"][slot])), sorted(set(idx["kept"][slot]) - set(want))
        raise RecordError(f"{INDEX}: kept.{slot} lists {len(idx['kept'][slot])} calls, the sample keeps {len(want)}: "
                          f"{len(lost)} left out (first {lost[:1]}), {len(extra)} not in it (first {extra[:1]})")
    if ov is None:
        return want, first, ""
    # The recorder sizes a record only when the sample keeps its call.
    m, room = len(before), capacity - 1
    if before and m > room and draw(seed, slot, stop, m) >= room:
        raise RecordError(f"{INDEX}: overflow.{slot} names call {stop}, which the sample does not keep")
    where = f"{slot} stopped recording at call {stop}: its record of {ov['record_bytes']} bytes"
    if ov["record_bytes"] > RECORD_LIMIT:
        if ov["limit"] != RECORD_LIMIT:
            raise RecordError(f"{INDEX}: overflow.{slot}: limit {ov['limit']}, a record's bound is {RECORD_LIMIT}")
        return want, first, f"{where} exceeds the bound of one record, {RECORD_LIMIT} bytes"
    if ov["limit"] != share or ov["kept_bytes"] <= share:
        raise RecordError(f"{INDEX}: overflow.{slot}: {ov['kept_bytes']} bytes kept against a limit of "
                          f"{ov['limit']} is no overflow of the slot's share of {share} bytes")
    if not before:
        if ov["kept_bytes"] != ov["record_bytes"]:
            raise RecordError(f"{INDEX}: overflow.{slot}: the first record would be all the slot keeps, "
                              f"yet {ov['kept_bytes']} bytes are claimed for {ov['record_bytes']}")
        return want, first, (f"{where} is over its share of {share} bytes "
                             f"(a budget of {budget} bytes over {nslots} slot(s))")
    return want, first, (f"{where} would bring the records it keeps to {ov['kept_bytes']} bytes, over its share of "
                         f"{share} bytes (a budget of {budget} bytes over {nslots} slot(s); a capacity of {capacity} "
                         f"records from its first record of {len(first[0])} bytes)")


def judge_rank(d, rank, bounds, seed, rate, budget, experts):
    """Receipts of one rank's directory and why any slot stopped
    recording, or a record error."""
    slots = sorted(bounds)
    idx = read_index(d, slots)
    if idx["rank"] != rank:
        raise RecordError(f"{INDEX}: rank {idx['rank']}, this directory is rank {rank}'s")
    if idx["seed"] != seed or idx["rate_ppm"] != rate or idx["budget_bytes"] != budget:
        raise RecordError(f"{INDEX}: seed, rate or budget differ from the audit policy's")
    share = budget // len(slots)
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
    receipts, overflows = [], []
    for slot in slots:
        bound = bounds[slot]
        calls = idx["calls"][slot]
        want, first, overflow = expected_sample(d, slot, idx, seed, rate, share, budget, len(slots))
        if overflow:
            overflows.append(overflow)
        have = sorted(n for n in records if n.startswith(slot + ".") and n[len(slot) + 1:-len(SUFFIX)].isdigit())
        wanted = [record_name(slot, i) for i in want]
        if have != wanted:
            extra, lost = sorted(set(have) - set(wanted)), sorted(set(wanted) - set(have))
            raise RecordError(f"{slot}: the index counts {calls} calls and the sample keeps {len(wanted)} of them, but "
                              f"{len(lost)} records are missing (first {lost[:1]}) and {len(extra)} unexpected (first {extra[:1]})")
        r = {"slot": slot, "rank": rank, "pid": idx["pid"], "world_size": 1, "calls": calls, "n": 0, "violations": 0,
             "compare_errors": 0, "worst_frac": "1", "bar": "", "mode": bound.contract.correctness.mode,
             "first_violation": None, "origins": {}}
        worst, total = 1.0, 0
        for n in have:
            call = int(n[len(slot) + 1:-len(SUFFIX)])
            data, head, body = first if call == want[0] else _read(d, n, slot, call)
            total += len(data)
            if total > share:
                raise RecordError(f"{slot}: the records kept hold more than the slot's share of {share} bytes "
                                  f"(a budget of {budget} bytes over {len(slots)} slot(s))")
            r["origins"][head["origin"][:200]] = r["origins"].get(head["origin"][:200], 0) + 1
            try:
                score, passed, reason, threshold = judge_call(bound, head, body, n, experts)
            except (RecordError, ModelError):
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
    return receipts, overflows


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
           "overflow": []}
    if unsupported:
        return out
    model = req.get("model_dir")
    if model is not None and not isinstance(model, str):
        raise ValueError("model_dir must be a path")
    experts = ModelExperts(model)
    for rank, d in enumerate(dirs):
        progress("audit_rank", case=rank)
        try:
            receipts, overflow = judge_rank(d, rank, bounds, seed, rate, budget, experts)
        except (RecordError, OSError, ValueError) as e:
            out["record_errors"].append({"rank": rank, "reason": str(e)[:1000]})
            continue
        out["receipts"].extend(receipts)
        out["overflow"].extend(f"rank {rank}: {o}" for o in overflow)
    return out
