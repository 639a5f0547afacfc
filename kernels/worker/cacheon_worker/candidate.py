"""The candidate role: run a contribution's entry on validator inputs.

The slot's call signature, outputs, graph-dynamic inputs and prepare step
are those of the catalog contract the request carries. For every case the
harness generates the inputs (cacheon_reference), hands
the candidate validator-allocated outputs poisoned with NaN (or integer
sentinels), calls prepare/entry, and then checks what only this process can
see: outputs still the same tensors (type, storage, offset, shape, stride,
dtype, device), row padding untouched, inputs still bound to their storage
and bit-identical. It records input digests and writes every output's raw
bytes for the reference role, which recomputes the truth in a process that
never loads candidate code. This process never compares against the truth:
the expected values never exist here.

Calls per case: "eager" on fresh tensors, "repeat" with fresh dynamic
inputs written in place into the same tensors (defeats caches keyed on
tensor identity), "nudged" with the repeat's inputs but one element of
each floating-point dynamic input changed (defeats caches keyed on a
fingerprint of the inputs), and on CUDA when the graph gate applies, a capture
followed by three replays on fresh dynamic inputs with poisoned outputs.
A sequence case (the regrow case of collective slots: big, small, big
again) makes one eager call per step instead, each at its own shape.

Every checked call's tensors live in memory the validator owns
(cacheon_reference.arena): on the CPU a file the controller made, mapped
shared; on a GPU a device block the checker role allocated and exported
(cacheon_reference.sharedmem), which this process maps. After each call the
harness synchronizes the device, says so on the witness pipe and waits:
the controller stops the whole sandbox, copies the call's memory (itself,
or through the checker), and lets it go on. That copy, not anything this
process records, is what the reference judges: this process runs
candidate code, which can rewrite every check made here (the violations
below stay as an early, advisory account). The output dump is then not
written at all.
"""

import json
import os
import traceback

import torch

import cacheon_reference as ref
from cacheon_reference import arena, sharedmem, tensorio
from cacheon_reference.plan import call_inputs, phase_inputs, phase_seeds, sequence_seeds
from cacheon_reference.slots.base import bind_generators

from .loader import LoadError, callable_attr, load_module, load_native
from .protocol import PROTOCOL, RESULT_FILE, write_json_atomic
from . import distributed, environment


def _storage(t):
    """(data pointer, size in bytes) of t's storage across torch versions."""
    if hasattr(t, "untyped_storage"):
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    s = t.storage()
    return s.data_ptr(), s.size() * s.element_size()


def identity(t):
    if not isinstance(t, torch.Tensor):
        return ("not-a-tensor", type(t).__name__)
    ptr, nbytes = _storage(t)
    return (type(t).__name__, t.data_ptr(), ptr, nbytes, t.storage_offset(), tuple(t.shape), tuple(t.stride()),
            str(t.dtype), str(t.device))


def _describe_change(name, before, after):
    fields = ("type", "data_ptr", "storage", "storage bytes", "storage offset", "shape", "stride", "dtype", "device")
    if len(before) != len(after):
        return f"{name} was replaced by a {after[1] if len(after) > 1 else 'non-tensor'}"
    changed = [f for f, a, b in zip(fields, before, after) if a != b]
    return f"{name} changed {', '.join(changed)}"


def _error_text(exc):
    tb = traceback.format_exc().splitlines()
    return {"error": f"{type(exc).__name__}: {exc}"[:2000], "traceback": "\n".join(tb[-25:])}


class Call:
    """One case's tensors: inputs, outputs, the prepared state and the call."""

    def __init__(self, slot, params, dtype, device, case_seed, rank, world, group, entry, holder=None):
        self.slot, self.params, self.dtype, self.device = slot, params, dtype, device
        self.case_seed, self.rank, self.world, self.group = case_seed, rank, world, group
        self.entry = entry
        cpu = phase_inputs(slot, params, dtype, case_seed, case_seed, rank, world)
        self.specs = slot.output_specs(params, dtype)
        self.outputs, self.backing = {}, {}
        self.witnessed = holder is not None
        if self.witnessed:
            # Every tensor in the validator's memory, where the controller
            # (or the checker) reads it while this process is stopped.
            regions, total = arena.layout(cpu, self.specs)
            buf = holder(total)
            placed = {r.name if r.kind == "input" else ("out", r.name): arena.view(buf, r) for r in regions}
            self.inputs = {}
            for k, v in cpu.items():
                if isinstance(v, torch.Tensor):
                    placed[k].copy_(v)
                    self.inputs[k] = placed[k]
                else:
                    self.inputs[k] = v
            for name, spec in self.specs.items():
                backing = placed[("out", name)]
                self.outputs[name], self.backing[name] = arena.output_view(backing, spec), backing
        else:
            # Private copies: the candidate gets tensors no other call shares.
            self.inputs = {k: (v.to(device, copy=True) if isinstance(v, torch.Tensor) else v) for k, v in cpu.items()}
            for name, spec in self.specs.items():
                view, backing = spec.allocate(device)
                self.outputs[name], self.backing[name] = view, backing
        self.prepared = None
        self.calls = 0

    def args(self):
        a = []
        for name in self.slot.call:
            if name == "prepared":
                a.append(self.prepared)
            elif name == "group":
                a.append(self.group)
            elif name in self.outputs:
                a.append(self.outputs[name])
            else:
                a.append(self.inputs[name])
        return a

    def load_fresh(self, phase, seed):
        """Write the dynamic inputs of phase, drawn from seed, into the
        existing tensors."""
        fresh = call_inputs(self.slot, self.params, self.dtype, self.case_seed, phase, seed, self.rank, self.world)
        for n in self.slot.dynamic_inputs:
            self.inputs[n].copy_(fresh[n].to(self.device))

    def poison(self):
        for name, b in self.backing.items():
            tensorio.poison(b, self.calls)
        self.calls += 1

    def snapshot(self):
        return ({k: identity(v) for k, v in self.inputs.items() if isinstance(v, torch.Tensor)},
                {k: identity(v) for k, v in self.outputs.items()},
                {k: identity(v) for k, v in self.backing.items()})

    def violations(self, snap, pre_digests):
        """What the call changed that it must not have."""
        ins, outs, backs = snap
        now_ins, now_outs, now_backs = self.snapshot()
        found = []
        for k, before in outs.items():
            if now_outs[k] != before:
                found.append("output " + _describe_change(k, before, now_outs[k]))
            elif type(self.outputs[k]) is not torch.Tensor:
                found.append(f"output {k} is a {type(self.outputs[k]).__name__}, not a plain torch.Tensor")
        for k, before in backs.items():
            if now_backs[k] != before:
                found.append("output storage " + _describe_change(k, before, now_backs[k]))
        for name, spec in self.specs.items():
            mask = spec.padding_mask(self.device)
            if mask is not None and not bool(torch.isnan(self.backing[name][mask]).all()):
                found.append(f"output {name}: row padding outside the logical view was written")
        for k, before in ins.items():
            if now_ins[k] != before:
                found.append("input " + _describe_change(k, before, now_ins[k]))
        post = tensorio.digests(self.inputs)
        for k, d in pre_digests.items():
            if post.get(k) != d:
                found.append(f"input {k} was modified in place")
        return found, post

    def dump(self, work_dir, case, phase):
        files = {}
        for name, t in self.outputs.items():
            path = os.path.join(work_dir, f"c{case}_{phase}_{name}.bin")
            files[name] = tensorio.write_tensor(path, t)
        return files


def _map_arena(path, nbytes):
    """The controller's file at path, sized to nbytes and mapped shared as
    a flat uint8 tensor. The file must exist: the controller made it and
    holds it open, so a file made here would be one it never reads."""
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    try:
        os.ftruncate(fd, nbytes)
    finally:
        os.close(fd)
    return torch.from_file(path, shared=True, size=nbytes, dtype=torch.uint8)


class Witness:
    """The harness's end of the controller's witness: a line on fd 5 saying
    which call returned, then a wait on fd 4 for the controller's answer,
    which comes once it has copied the call's memory with the whole
    sandbox stopped. The memory is an arena file of the directory the
    controller names (the CPU), or a holder of the checker's device block
    (a GPU: device_arena, the block's descriptor, size and holders)."""

    ANSWERS_FD, ANNOUNCE_FD = 4, 5

    def __init__(self, directory=None, device_arena=None, device=None):
        self.directory, self.block, self.holders = directory, None, {}
        for fd in (self.ANSWERS_FD, self.ANNOUNCE_FD):
            os.fstat(fd)  # the controller passed both; fail now, not at the first call
        if device_arena is not None:
            fd = int(device_arena["fd"])
            self.block = sharedmem.open_shared(fd, int(device_arena["bytes"]), device)
            os.close(fd)
            self.holders = device_arena["holders"]

    def holder(self, case_index, step=""):
        """The mapper of one call holder's memory: given the layout's size,
        the flat uint8 tensor the Call places its tensors in."""
        name = arena.file_name(case_index, step)
        if self.block is None:
            path = os.path.join(self.directory, name)
            return lambda total: _map_arena(path, total)
        h = self.holders.get(name)
        if h is None:
            raise RuntimeError(f"the checker's block has no holder {name}")

        def place(total):
            if total > int(h["bytes"]):
                raise RuntimeError(f"holder {name} is {h['bytes']} bytes; the call's layout needs {total}")
            off = int(h["offset"])
            return self.block[off:off + total]
        return place

    def returned(self, case_index, phase):
        line = json.dumps({"case": case_index, "phase": phase}) + "\n"
        os.write(self.ANNOUNCE_FD, line.encode())
        if os.read(self.ANSWERS_FD, 2) != b"k\n":
            raise RuntimeError("the controller did not confirm the witnessed call")


def _sync(device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def run_phase(call, work_dir, case_index, phase, seed, fn, progress, witness=None):
    """Run fn() as one checked call and return its record. With a witness,
    the controller copies the call's memory before anything here reads it."""
    rec = {"phase": phase, "seed": seed}
    if phase != "eager" and not phase.startswith("replay"):
        call.load_fresh(phase, seed)
    pre = tensorio.digests(call.inputs)
    rec["inputs_pre"] = pre
    call.poison()
    snap = call.snapshot()
    progress("call", case=case_index, phase=phase)
    try:
        fn()
        _sync(call.device)
    except Exception as e:  # the candidate raised: a verdict, not a crash
        rec.update(status="raised", **_error_text(e))
        return rec
    if witness is not None and call.witnessed:
        witness.returned(case_index, phase)
        rec["witnessed"] = True
    found, post = call.violations(snap, pre)
    rec["inputs_post"] = post
    rec["violations"] = found
    if not rec.get("witnessed"):
        rec["outputs"] = call.dump(work_dir, case_index, phase)
    rec["status"] = "violated" if found else "ok"
    return rec


def run_graph(call, work_dir, case_index, seeds, progress, witness=None):
    """Capture one call in a CUDA graph and replay it on fresh inputs."""
    graph = {"status": "not_run"}
    phases = []
    progress("graph_capture", case=case_index)
    try:
        side = torch.cuda.Stream(device=call.device)
        side.wait_stream(torch.cuda.current_stream(call.device))
        with torch.cuda.stream(side):
            call.entry(*call.args())
        torch.cuda.current_stream(call.device).wait_stream(side)
        _sync(call.device)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call.entry(*call.args())
        _sync(call.device)
    except Exception as e:
        graph.update(status="capture_failed", **_error_text(e))
        return graph, phases
    graph["status"] = "captured"
    for phase, seed in seeds:
        call.load_fresh(phase, seed)
        phases.append(run_phase(call, work_dir, case_index, phase, seed, g.replay, progress, witness))
    return graph, phases


def run_prepare(call, prepare, crec, case_index, progress):
    """Run the op row's prepare on the call's prepare inputs into
    call.prepared and record it in crec; False when it raised or modified
    its inputs (the case then makes no call)."""
    slot = call.slot
    progress("prepare", case=case_index)
    pre = tensorio.digests({n: call.inputs[n] for n in slot.prepare_args})
    try:
        call.prepared = prepare(*[call.inputs[n] for n in slot.prepare_args])
        _sync(call.device)
    except Exception as e:
        crec["prepare"] = {"status": "raised", **_error_text(e)}
        return False
    post = tensorio.digests({n: call.inputs[n] for n in slot.prepare_args})
    changed = [n for n in pre if post.get(n) != pre[n]]
    crec["prepare"] = {"status": "violated" if changed else "ok",
                       "violations": [f"prepare modified input {n} in place" for n in changed]}
    return not changed


def run_sequence(slot, case, crec, dtype, device, rank, world, group, entry, prepare, work_dir, save, progress, witness):
    """The calls of a sequence case (the regrow case of collective slots):
    one eager call per step, in order, each on fresh validator tensors of
    the step's shape. They all run in this process after the case before
    them, so whatever the candidate's module kept from an earlier call (a
    workspace sized by it, a cached view) is still there: that is what the
    case tests. A prepared state is made once and passed to every later
    step whose prepare inputs are bit-identical (an engine prepares a
    weight once, whatever the token count); a step with other prepare
    inputs is prepared anew."""
    crec["name"] = case.name
    try:
        seeds = sequence_seeds(slot, case.steps, dtype, case.seed, world)
    except Exception as e:
        crec["seeds_error"] = _error_text(e)["error"]
        return
    prepared, prepared_from = None, None
    for phase, seed, params in seeds:
        call = Call(slot, params, dtype, device, case.seed, rank, world, group, entry,
                    witness.holder(case.index, phase) if witness else None)
        if prepare is not None:
            digests = tensorio.digests({n: call.inputs[n] for n in slot.prepare_args})
            if digests != prepared_from:
                if not run_prepare(call, prepare, crec, case.index, progress):
                    return
                prepared, prepared_from = call.prepared, digests
            call.prepared = prepared
        rec = run_phase(call, work_dir, case.index, phase, seed, lambda: entry(*call.args()), progress, witness)
        rec["params"] = dict(params)
        crec["phases"].append(rec)
        save()
        if rec["status"] == "raised":
            return
        del call


def announce_candidate_code():
    """Tell the controller, on the control pipe only this harness holds,
    that candidate code runs from here on; then close the pipe, so nothing
    after this point can write to it. A death before this mark is the
    harness's own; one after it is the candidate's, whatever the progress
    log (which the candidate can rewrite) says."""
    fd = os.environ.get("CACHEON_CONTROL_FD")
    if not fd:
        return
    try:
        os.write(int(fd), b"candidate_code\n")
    finally:
        os.close(int(fd))


def _missing_dependency(exc, bundle_root):
    """The top-level module a failed import lacked, when it is not part of
    the bundle: a dependency this interpreter does not have (triton on a
    CPU-only host), which says nothing about the kernel."""
    while exc is not None and not isinstance(exc, ModuleNotFoundError):
        exc = exc.__cause__ or exc.__context__
    if exc is None or not getattr(exc, "name", None):
        return None
    top = exc.name.split(".")[0]
    if os.path.exists(os.path.join(bundle_root, top)) or os.path.exists(os.path.join(bundle_root, top + ".py")):
        return None
    return top


def run(req, progress):
    work_dir = req["work_dir"]
    slot = ref.bind(req["contract"])
    dtype = ref.dtype_of(req["dtype"])
    world, rank = int(req.get("world_size", 1)), int(req.get("rank", 0))
    device = environment.rank_device(req["device"], rank, slot.collective)
    result = {"protocol": PROTOCOL, "role": "candidate", "slot": slot.name, "variant": req.get("variant"),
              "rank": rank, "world_size": world, "device": str(device), "complete": False,
              "env": environment.describe(req["device"]), "cases": []}
    path = os.path.join(work_dir, RESULT_FILE)
    write_json_atomic(path, result)

    group = None
    if slot.collective:
        progress("distributed_init", rank=rank, world=world)
        group = distributed.init(req["rendezvous"], rank, world, req["device"], float(req.get("timeout_s", 300)))

    # The witness pipes are checked before candidate code runs; what the
    # candidate does with them later can only cost it its own calls.
    witness = None
    if req.get("witness") or req.get("device_arena"):
        witness = Witness(req.get("witness"), req.get("device_arena"), device)

    # Bind the input generators before any candidate code can rebind torch.
    bind_generators()
    announce_candidate_code()
    progress("import_candidate", source=req["source"])
    try:
        if req.get("cuda_sources"):
            if not req.get("native"):
                raise LoadError("the row declares cuda_sources and the controller gave no sealed prebuild artifact for it: "
                                "workers load prebuilt libraries only and never compile")
            progress("load_native", artifact=req["native"].get("artifact"))
            load_native(req["native"])
        module = load_module(req["bundle_root"], req["source"])
        entry = callable_attr(module, req["entry"], "entry")
        prepare = None
        if slot.prepare:
            if not req.get("prepare"):
                raise LoadError(f"{slot.name} needs a prepare callable; the op row declares none")
            prepare = callable_attr(module, req["prepare"], "prepare")
    except Exception as e:
        result["load"] = {"ok": False, **_error_text(e)}
        missing = _missing_dependency(e, req["bundle_root"])
        if missing:
            result["load"]["missing_module"] = missing
        result["complete"] = True
        write_json_atomic(path, result)
        return result
    result["load"] = {"ok": True}
    write_json_atomic(path, result)

    for c in req["cases"]:
        case = ref.Case.from_json(c)
        crec = {"index": case.index, "seed": case.seed, "params": case.params, "phases": []}
        result["cases"].append(crec)
        progress("case", case=case.index)
        if case.steps:
            run_sequence(slot, case, crec, dtype, device, rank, world, group, entry, prepare, work_dir,
                         lambda: write_json_atomic(path, result), progress, witness)
            write_json_atomic(path, result)
            continue
        call = Call(slot, case.params, dtype, device, case.seed, rank, world, group, entry,
                    witness.holder(case.index) if witness else None)
        if prepare is not None and not run_prepare(call, prepare, crec, case.index, progress):
            write_json_atomic(path, result)
            continue
        try:
            seeds = phase_seeds(slot, case.params, dtype, case.seed, world, bool(req.get("graph")))
        except Exception as e:
            # Only a tampered generator makes fresh inputs impossible; the
            # eager call still runs so the reference can name the tampering.
            crec["seeds_error"] = _error_text(e)["error"]
            seeds = [("eager", case.seed)]
        eager = [s for s in seeds if not s[0].startswith("replay")]
        for phase, seed in eager:
            rec = run_phase(call, work_dir, case.index, phase, seed, lambda: entry(*call.args()), progress, witness)
            crec["phases"].append(rec)
            write_json_atomic(path, result)
            if rec["status"] == "raised":
                break
        # Ranks of a collective must make the same calls, so the gate skips
        # only what every rank skips alike: a case whose eager calls raised.
        if req.get("graph") and len(crec["phases"]) == len(eager) and all(p["status"] != "raised" for p in crec["phases"]):
            graph, replays = run_graph(call, work_dir, case.index, seeds[len(eager):], progress, witness)
            crec["graph"] = graph
            crec["phases"].extend(replays)
            write_json_atomic(path, result)
        del call

    if group is not None:
        distributed.finish()
    result["complete"] = True
    write_json_atomic(path, result)
    progress("done")
    return result
