"""The plan role: which cases each slot runs, and on what.

Runs validator code only. The request carries the catalog's contract of
every slot to plan; this role binds each to the slot's semantics (refusing,
per slot, a contract the semantics cannot honour) and lists the cases: the
contract's catalog shapes with seeded jitter and the live capability fields
of every call, the dtypes the slot's live call sites see, and for
collective slots the candidate shape sequences of the regrow case (big,
small, big again in one process). The controller
decides per case whether the op row's declared domain admits it (it owns
the manifest).
"""

import cacheon_reference as ref
from cacheon_reference.plan import regrow_sequences

from . import environment
from .protocol import PROTOCOL


def run(req, progress):
    seed = int(req.get("seed", 0))
    world = int(req.get("world_size", 2))
    device = req.get("device", "cpu")
    out = {"protocol": PROTOCOL, "role": "plan", "env": environment.describe(device), "slots": {}}
    for contract in req["contracts"]:
        name = contract["slot"]
        try:
            slot = ref.bind(contract)
        except ref.UnknownSlot:
            out["slots"][name] = {"known": False}
            continue
        except ref.ContractError as e:
            out["slots"][name] = {"known": True, "contract_error": str(e)}
            continue
        w = world if slot.collective else 1
        cases = ref.plan_cases(slot, seed, w)
        # live_dtypes travels with the cases: the controller, which knows the
        # run's dtype, reports a dtype outside it N/A for the whole row.
        out["slots"][slot.name] = {"known": True, "contract": slot.describe_contract(), "world_size": w,
                                   "live_dtypes": list(slot.live_dtypes),
                                   "cases": cases, "sequences": regrow_sequences(slot, cases, seed, w)}
    return out
