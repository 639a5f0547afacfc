"""Audit mode of an engine session (audit role A; docs/reference/audit.md).

Only the audit session is started with the CACHEON_SLOT_AUDIT_* variables;
a timed session never is, so the recording costs a timed read nothing.
In audit mode every call the seam makes at an expected slot is counted,
and its output arguments are poisoned before the call (floats NaN,
integers their maximum, bools alternating), on every call, sampled or
not, so a kernel cannot tell the recorded calls from the others and an
output it leaves unwritten is never the stale answer of an identical
earlier call (the audit serves one prompt over and over, and a caching
allocator can hand back the very buffer that held it). On the sampled
calls the recorder keeps a clone of every argument taken before the call
and every tensor argument as the call left it (the candidate's outputs). It writes them to files in the session's private
directory. Nothing is judged here: the validator's reference worker reads
the files after this process has ended and recomputes the stock result
on the recorded inputs, in a process that runs no candidate code.

Record format (one file per sampled call, ``<slot>.<call:07d>.rec``):
8 bytes little-endian header length N, N bytes of JSON header, then the
raw tensor bytes. The header is {"slot", "call", "origin", "args": [...]}
with one entry per positional argument: {"kind": "tensor", "dtype",
"shape", "pre": [begin, end], "post": [begin, end]} (post equal to pre when
the call left the argument unchanged), {"kind": "scalar",
"value"}, {"kind": "tuple", "items": [tensor entries]} or {"kind":
"opaque"} (a process group). Offsets are relative to the end of the
header. At the end of the session ``index.json`` says how many calls each
expected slot saw, and which of them the sample kept.

The sample is bounded by a byte budget that comes on the request pipe
with the seed, shared equally between the expected slots. Each slot keeps
its first sampled call's record, and from it the slot's capacity in
records (its share over that record's size and HEADER_SLACK); the later
sampled calls
go through a reservoir of the remaining capacity: while it has room a
record is kept, then the m-th call replaces a uniformly drawn kept record
with probability (capacity - 1) / m. The draw is SHA-256 of the
reservoir domain, the seed, the slot and the call, so the kept set is a
uniform sample of every sampled call whatever the run's length, unknown
to a kernel that lacks the seed, and recomputed exactly by the judge
from the seed, the rate, the budget, the call counts and the first
record's size (docs/reference/audit.md, "The budget").
"""

import hashlib
import json
import os
import struct

import torch

ENV_DIR = "CACHEON_SLOT_AUDIT_DIR"
# The sample's seed and rate were once these variables. They are refused
# there now: the environment is the candidate's to read (os.environ,
# /proc/self/environ), and a kernel that knows the seed knows which calls
# are recorded. They come as the first line of the request pipe instead
# (read_secret), read before the engine tree is imported.
ENV_RATE = "CACHEON_SLOT_AUDIT_RATE"
ENV_SEED = "CACHEON_SLOT_AUDIT_SEED"
ENV_SLOTS = "CACHEON_SLOT_AUDIT_SLOTS"  # comma-separated expected slots
ENV_RANK = "CACHEON_SLOT_AUDIT_RANK"
# Each expected slot's output argument positions in its call, from the
# catalog contract: "slot=2;other=4+5" (a slot with none: "slot=").
ENV_OUTPUTS = "CACHEON_SLOT_AUDIT_OUTPUTS"

INDEX = "index.json"
SUFFIX = ".rec"
# Bounds the controller's judge enforces too: one record, and the most a
# policy's budget (all records) may be. The budget itself comes on the
# request pipe with the seed (read_secret).
RECORD_LIMIT = 64 << 20
MAX_BUDGET = 1 << 34
PPM = 1_000_000
# The most records a slot keeps, whatever its share: the judge reads and
# judges every kept record, and a budget of tiny records must not turn
# into an audit that outlasts its timeout.
MAX_KEPT = 8192
# What a later record's header may hold beyond the first's at the same
# shapes: the digits of its call number, another origin. The capacity
# leaves this much room a record, so that an honest run whose calls keep
# the first call's shapes never outgrows the share.
HEADER_SLACK = 256
# The prefix of the reservoir's draws, so that they are independent of
# the rate's schedule, which hashes the same seed, slot and call.
RESERVOIR_DOMAIN = "cacheon.qualification.audit-reservoir.v1"


class AuditError(Exception):
    """The audit configuration is malformed."""


def sampled(seed: str, slot: str, call: int, rate_ppm: int) -> bool:
    """Whether call number `call` of slot is recorded: the first eight
    bytes of SHA-256(seed NUL slot NUL call) modulo a million, below the
    rate. The judge recomputes the same schedule."""
    if rate_ppm >= PPM:
        return True
    h = hashlib.sha256(f"{seed}\0{slot}\0{call}".encode()).digest()
    return int.from_bytes(h[:8], "big") % PPM < rate_ppm


def draw(seed: str, slot: str, call: int, m: int) -> int:
    """The reservoir's draw for the m-th sampled call after a slot's
    first: the first eight bytes of SHA-256(domain NUL seed NUL slot NUL
    call), big-endian, modulo m (the bias of 2^64 modulo m < 2^14 is below
    2^-50). The judge recomputes it."""
    h = hashlib.sha256(f"{RESERVOIR_DOMAIN}\0{seed}\0{slot}\0{call}".encode()).digest()
    return int.from_bytes(h[:8], "big") % m


def capacity_of(share: int, first_size: int) -> int:
    """A slot's capacity in records: its share of the budget over the size
    of its first record (which it always keeps) and HEADER_SLACK, at most
    MAX_KEPT, and never below the one record it already holds."""
    return max(1, min(share // (first_size + HEADER_SLACK), MAX_KEPT))


def record_name(slot: str, call: int) -> str:
    return f"{slot}.{call:07d}{SUFFIX}"


def _raw(t: torch.Tensor) -> bytes:
    c = t.detach().contiguous().cpu()
    if c.dtype == torch.bool:
        c = c.to(torch.uint8)
    return c.reshape(-1).view(torch.uint8).numpy().tobytes()


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


class Recorder:
    """Wraps one seam's call for the expected slots."""

    def __init__(self, directory, rate_ppm, seed, slots, outputs, rank=0, budget=1 << 30):
        self.dir, self.rate, self.seed, self.slots, self.rank = directory, rate_ppm, seed, frozenset(slots), rank
        self.budget = budget
        missing = sorted(self.slots - set(outputs))
        if missing:
            raise AuditError(f"no output positions for expected slot(s) {', '.join(missing)}")
        self.outputs = {s: tuple(outputs[s]) for s in self.slots}
        self.calls = {s: 0 for s in sorted(self.slots)}
        # Each slot's share of the budget, its capacity (0 until its first
        # record), the reservoir's records after the first as [call, size]
        # by position, the sampled calls it has seen after the first, the
        # bytes it keeps, and why it stopped recording (see _keep).
        self.share = budget // len(self.slots) if self.slots else 0
        self.capacity = {s: 0 for s in self.slots}
        self.first = {}
        self.reservoir = {s: [] for s in self.slots}
        self.seen = {s: 0 for s in self.slots}
        self.kept_bytes = {s: 0 for s in self.slots}
        self.overflow = {}
        os.makedirs(self.dir, exist_ok=True)

    def install(self, seam):
        inner = seam.call

        def call(slot, live, *args, graph=False):
            if slot not in self.slots:
                return inner(slot, live, *args, graph=graph)
            if graph:
                raise AuditError("an audit session runs eagerly; a captured call cannot be recorded")
            i = self.calls[slot]
            self.calls[slot] = i + 1
            _poison_outputs(args, self.outputs[slot])
            if slot in self.overflow or not sampled(self.seed, slot, i, self.rate):
                return inner(slot, live, *args, graph=graph)
            # The clones are taken before the candidate runs, so what it
            # does to its arguments cannot change the recorded inputs.
            # Every sampled call is cloned, whether the reservoir will keep
            # it or not, and the draw is made after the call: a kernel that
            # watched the allocator for the clones would learn nothing.
            # A prepared expert state is recorded as the layer it was
            # prepared from (its raw weights are in the model, where the
            # judge reads them), so it is neither cloned nor copied.
            layers = [_prepared_layer(seam, a) for a in args]
            pre = [a if layer is not None else _clone(a) for a, layer in zip(args, layers)]
            result = inner(slot, live, *args, graph=graph)
            if args and isinstance(args[0], torch.Tensor) and args[0].device.type == "cuda":
                torch.cuda.synchronize()
            self._keep(slot, i, lambda: seam.resolve(slot, live, graph).origin, pre, args, layers)
            return result

        seam.call = call
        return self

    def _keep(self, slot, i, origin, pre, post, layers):
        """The reservoir's step for sampled call i of slot: keep its record
        (the slot's first, or while the reservoir has room, or in place of
        the kept record the draw names) or drop it. A record that does not
        fit (over RECORD_LIMIT, or the slot's kept records over its share)
        stops the slot's recording, and the index says where and by how
        much: the validator's budget, not the candidate, fell short."""
        evicted = None
        if slot not in self.first:
            position = None
        else:
            self.seen[slot] += 1
            m, room = self.seen[slot], self.capacity[slot] - 1
            res = self.reservoir[slot]
            if m <= room:
                position = len(res)
            else:
                position = draw(self.seed, slot, i, m)
                if position >= room:
                    return
                evicted = res[position]
        header, blobs = self._encode(slot, i, origin(), pre, post, layers)
        size = 8 + len(header) + sum(len(b) for b in blobs)
        total = self.kept_bytes[slot] - (evicted[1] if evicted else 0) + size
        if size > RECORD_LIMIT or total > self.share:
            self.overflow[slot] = {"call": i, "record_bytes": size, "kept_bytes": total,
                                   "limit": RECORD_LIMIT if size > RECORD_LIMIT else self.share}
            return
        path = os.path.join(self.dir, record_name(slot, i))
        with open(path + ".tmp", "wb") as f:
            f.write(struct.pack("<Q", len(header)))
            f.write(header)
            for b in blobs:
                f.write(b)
        # The new record is whole before the evicted one goes: at no time
        # does the directory hold a partial record.
        os.replace(path + ".tmp", path)
        if evicted is not None:
            os.remove(os.path.join(self.dir, record_name(slot, evicted[0])))
        self.kept_bytes[slot] = total
        if position is None:
            self.first[slot] = i
            self.capacity[slot] = capacity_of(self.share, size)
        elif position == len(self.reservoir[slot]):
            self.reservoir[slot].append([i, size])
        else:
            self.reservoir[slot][position] = [i, size]

    def kept(self, slot):
        """The calls whose records slot keeps, in call order."""
        first = [self.first[slot]] if slot in self.first else []
        return sorted(first + [c for c, _ in self.reservoir[slot]])

    def _encode(self, slot, i, origin, pre, post, layers):
        blobs, entries, offset = [], [], 0

        def put(data):
            nonlocal offset
            blobs.append(data)
            span = [offset, offset + len(data)]
            offset += len(data)
            return span

        def tensor_entry(p, q):
            before, after = _raw(p), _raw(q)
            e = {"kind": "tensor", "dtype": _dtype(p), "shape": list(p.shape), "pre": put(before)}
            # An argument the call left as it was (an input) is recorded
            # once; one it changed (an output, or a mutated input) twice.
            e["post"] = e["pre"] if after == before else put(after)
            return e

        for p, q, layer in zip(pre, post, layers):
            if layer is not None:
                entries.append({"kind": "expert_weights", "layer": layer})
            elif isinstance(p, torch.Tensor):
                entries.append(tensor_entry(p, q))
            elif isinstance(p, tuple) and p and all(isinstance(x, torch.Tensor) for x in p):
                entries.append({"kind": "tuple", "items": [tensor_entry(a, b) for a, b in zip(p, q)]})
            elif isinstance(p, (bool, int, float)):
                entries.append({"kind": "scalar", "value": p})
            else:
                entries.append({"kind": "opaque"})
        header = json.dumps({"slot": slot, "call": i, "origin": origin, "args": entries},
                            separators=(",", ":"), sort_keys=True, allow_nan=False).encode()
        return header, blobs

    def close(self):
        doc = {"rank": self.rank, "pid": os.getpid(), "rate_ppm": self.rate, "seed": self.seed,
               "budget_bytes": self.budget, "overflow": self.overflow, "calls": self.calls,
               "capacity": self.capacity, "kept": {s: self.kept(s) for s in sorted(self.slots)}}
        path = os.path.join(self.dir, INDEX)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(doc, f, sort_keys=True)
        os.replace(path + ".tmp", path)


def _storage_ptr(t):
    return t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr()


def _poison_outputs(args, positions):
    """Poison the output arguments at positions, except one that shares
    storage with another argument (an engine passing an input as its own
    output): poisoning it would change the input."""
    others = {_storage_ptr(a) for j, a in enumerate(args) if j not in positions and isinstance(a, torch.Tensor)}
    for j in positions:
        t = args[j] if j < len(args) else None
        if isinstance(t, torch.Tensor) and _storage_ptr(t) not in others:
            poison(t)


def poison(t):
    """Fill t so an unwritten element is detectable: floats NaN, integers
    their maximum, bools alternating."""
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.copy_((torch.arange(t.numel(), device=t.device) % 2 == 0).reshape(t.shape))
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def parse_outputs(value):
    """The ENV_OUTPUTS value as {slot: (positions)}."""
    out = {}
    for item in value.split(";"):
        if not item:
            continue
        slot, sep, positions = item.partition("=")
        if not sep or not slot or slot in out:
            raise AuditError(f"{ENV_OUTPUTS}: malformed entry {item!r}")
        try:
            out[slot] = tuple(int(p) for p in positions.split("+") if p)
        except ValueError:
            raise AuditError(f"{ENV_OUTPUTS}: entry {item!r} has a position that is not an integer") from None
        if any(p < 0 for p in out[slot]):
            raise AuditError(f"{ENV_OUTPUTS}: entry {item!r} has a negative position")
    return out


def _prepared_layer(seam, a):
    """The layer whose expert weights a was prepared from, when a is a
    prepared state the model registered on seam; None otherwise."""
    entry = seam.prepared_from.get(id(a))
    if entry is None or entry[0] is not a or not isinstance(entry[1], int) or entry[1] < 0:
        return None
    return entry[1]


def _clone(a):
    if isinstance(a, torch.Tensor):
        return a.detach().clone()
    if isinstance(a, tuple) and a and all(isinstance(x, torch.Tensor) for x in a):
        return tuple(x.detach().clone() for x in a)
    return a


def audited(env):
    """Whether the environment starts an audit session (whose first request
    line is then the secret)."""
    return bool(env.get(ENV_DIR))


def read_secret(line):
    """The sample's (seed, rate in ppm, budget in bytes) from the audit
    session's first request line: {"audit_seed": "<32 hex>",
    "audit_rate_ppm": N, "audit_budget_bytes": B}."""
    if line is None:
        raise AuditError("the audit session's request pipe closed before the audit secret")
    try:
        doc = json.loads(line)
    except ValueError:
        raise AuditError("the audit session's first request line is not the audit secret (not JSON)") from None
    if not isinstance(doc, dict):
        raise AuditError("the audit secret line is not a JSON object")
    rate, seed = doc.get("audit_rate_ppm"), doc.get("audit_seed")
    if not isinstance(rate, int) or isinstance(rate, bool):
        raise AuditError("audit_rate_ppm must be an integer number of parts per million")
    if not 1 <= rate <= PPM:
        raise AuditError(f"audit_rate_ppm {rate} is outside [1, {PPM}]")
    if not isinstance(seed, str) or len(seed) != 32 or any(c not in "0123456789abcdef" for c in seed):
        raise AuditError("audit_seed must be 32 lowercase hex digits")
    budget = doc.get("audit_budget_bytes")
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= MAX_BUDGET:
        raise AuditError(f"audit_budget_bytes {budget!r} must be an integer number of bytes in [1, {MAX_BUDGET}]")
    return seed, rate, budget


def from_env(env, secret=None):
    """The recorder the environment asks for, or None outside an audit.
    secret is read_secret's (seed, rate, budget): never from the
    environment."""
    for k in (ENV_RATE, ENV_SEED):
        if k in env:
            raise AuditError(f"{k} is in the environment, which the candidate's code can read; "
                             f"the sample's seed and rate come on the request pipe")
    if not env.get(ENV_DIR):
        for k in (ENV_SLOTS, ENV_OUTPUTS):
            if env.get(k):
                raise AuditError(f"{k} is set without {ENV_DIR}")
        return None
    directory = env[ENV_DIR]
    if secret is None:
        raise AuditError("an audit session needs the audit secret from its request pipe")
    seed, rate, budget = secret
    slots = [s for s in env.get(ENV_SLOTS, "").split(",") if s]
    if not slots:
        raise AuditError(f"{ENV_SLOTS} names no slot")
    if ENV_OUTPUTS not in env:
        raise AuditError(f"{ENV_OUTPUTS} is not set: the outputs to poison are unknown")
    outputs = parse_outputs(env[ENV_OUTPUTS])
    rank = int(env.get(ENV_RANK, "0") or 0)
    return Recorder(directory, rate, seed, slots, outputs, rank, budget)
