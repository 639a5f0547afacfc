"""The checker role: own the memory of a candidate's checked calls.

On the CPU the controller makes the arena files the candidate harness maps
and copies them itself. Device memory it cannot read, so on a GPU this
validator process, which never imports candidate code, takes its place:

1. It computes, from the request's cases alone, the arena layout of every
   call holder (cacheon_reference.arena: a case's Call, each step of a
   sequence case), allocates one block on the rank's device big enough for
   all of them, and exports it (cacheon_reference.sharedmem). It sends the
   block's descriptor on the unix socket it was given as fd 6 and writes
   one line on fd 5: the block's size and each holder's offset and size.
   The controller passes the descriptor to the candidate worker, whose
   harness places each call's tensors in its holder.
2. For each "copy" line on fd 4 (sent by the controller while the whole
   candidate sandbox is stopped, right after the harness said a call
   returned) it copies that holder's bytes from the device and writes
   {"bytes": N} and then the N bytes on fd 5; the controller stores them
   as the call's snapshot, which the reference role judges.

It ends when fd 4 ends. Its result says how many copies it made.
"""

import json
import os
import socket

import cacheon_reference as ref
from cacheon_reference import arena, sharedmem
from cacheon_reference.plan import phase_inputs, sequence_seeds

from . import environment
from .protocol import PROTOCOL

COMMANDS_FD, REPLIES_FD, SOCKET_FD = 4, 5, 6

# Each holder starts on a page, so no two share one.
HOLDER_ALIGN = 4096


def holder_layouts(slot, cases, dtype, rank, world):
    """[(holder name, layout bytes)] of every call holder of cases, in the
    order the candidate harness makes them."""
    out = []
    for c in cases:
        case = ref.Case.from_json(c)
        if case.steps:
            for phase, _seed, params in sequence_seeds(slot, case.steps, dtype, case.seed, world):
                out.append((arena.file_name(case.index, phase), _layout_bytes(slot, params, dtype, case.seed, rank, world)))
        else:
            out.append((arena.file_name(case.index), _layout_bytes(slot, case.params, dtype, case.seed, rank, world)))
    return out


def _layout_bytes(slot, params, dtype, case_seed, rank, world):
    inputs = phase_inputs(slot, params, dtype, case_seed, case_seed, rank, world)
    _regions, total = arena.layout(inputs, slot.output_specs(params, dtype))
    return total


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _reply(obj):
    _write_all(REPLIES_FD, (json.dumps(obj, sort_keys=True) + "\n").encode())


def run(req, progress):
    slot = ref.bind(req["contract"])
    dtype = ref.dtype_of(req["dtype"])
    world, rank = int(req.get("world_size", 1)), int(req.get("rank", 0))
    device = environment.rank_device(req["device"], rank, slot.collective)

    progress("layout")
    holders, off = {}, 0
    for name, nbytes in holder_layouts(slot, req["cases"], dtype, rank, world):
        holders[name] = {"offset": off, "bytes": nbytes}
        off += (nbytes + HOLDER_ALIGN - 1) // HOLDER_ALIGN * HOLDER_ALIGN
    progress("allocate", bytes=off)
    block, fd, size = sharedmem.export(off, device)
    with socket.socket(fileno=SOCKET_FD) as sock:
        socket.send_fds(sock, [b"b"], [fd])
    os.close(fd)
    _reply({"bytes": size, "holders": holders})

    copies = 0
    commands = os.fdopen(COMMANDS_FD, "rb", buffering=0)
    for line in commands:
        try:
            name = json.loads(line)["copy"]
            h = holders[name]
        except (ValueError, KeyError, TypeError):
            _reply({"error": "not a copy of a known holder"})
            continue
        if device.type == "cuda":
            import torch
            # Every stream of this process; the candidate synchronized its
            # own device before it said the call returned.
            torch.cuda.synchronize(device)
        data = block[h["offset"]:h["offset"] + h["bytes"]].cpu().numpy()
        _reply({"bytes": h["bytes"]})
        _write_all(REPLIES_FD, data)
        copies += 1
    progress("done", copies=copies)
    return {"protocol": PROTOCOL, "role": "checker", "device": str(device), "bytes": size, "holders": holders,
            "copies": copies}
