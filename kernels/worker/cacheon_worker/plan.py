"""The plan role: which cases each slot runs, and on what.

Runs validator code only. The controller decides per case whether the
op row's declared domain admits it (it owns the manifest); this role says
what the cases are and what each call's live capability fields would be.
"""

import cacheon_reference as ref

from . import environment
from .protocol import PROTOCOL


def run(req, progress):
    seed = int(req.get("seed", 0))
    world = int(req.get("world_size", 2))
    device = req.get("device", "cpu")
    out = {"protocol": PROTOCOL, "role": "plan", "env": environment.describe(device), "slots": {}}
    for name in req.get("slots", []):
        if name not in ref.REGISTRY:
            out["slots"][name] = {"known": False}
            continue
        slot = ref.get(name)
        w = world if slot.collective else 1
        out["slots"][name] = {"known": True, "contract": slot.contract(), "world_size": w,
                              "cases": ref.plan_cases(slot, seed, w)}
    return out
