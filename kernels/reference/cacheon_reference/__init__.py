"""Validator-owned references for the registered slots.

For each of the 11 slots: deterministic input generators, the validator's
output allocation and the fp32 truth (``slots``), plus the comparators that
judge an output under a correctness policy (``compare``). What the catalog
states about a slot (call signature, catalog shapes, graph-dynamic inputs,
correctness policy, tolerances) is not kept here: a verify worker binds the
contract its request carries (``bind``); other users bind the contracts
generated from the default catalog (``get``). Nothing here imports
candidate code.
"""

from .compare import Comparison, compare, compare_all, worst
from .contract import BoundSlot, Contract, ContractError, UnknownSlot
from .plan import call_inputs, phase_inputs, phase_seeds, plan_cases
from .slots import REGISTRY, names, semantics
from .spec import COMPUTE_DTYPES, Case, Correctness, OutputSpec, dtype_of
from . import contract as _contract

__all__ = [
    "COMPUTE_DTYPES", "BoundSlot", "Case", "Comparison", "Contract", "ContractError", "Correctness", "OutputSpec",
    "REGISTRY", "UnknownSlot", "bind", "compare", "compare_all", "default_contracts", "dtype_of", "get", "names",
    "call_inputs", "phase_inputs", "phase_seeds", "plan_cases", "semantics", "tolerance", "worst",
]


def bind(contract_json) -> BoundSlot:
    """The slot a contract (wire form) names, bound to it. Raises
    UnknownSlot when this validator has no semantics for the slot and
    ContractError when the semantics cannot honour the contract."""
    c = Contract.from_json(contract_json)
    if c.slot not in REGISTRY:
        raise UnknownSlot(f"this validator has no semantics for slot {c.slot!r}; it knows {', '.join(names())}")
    return _contract.bind(REGISTRY[c.slot], c)


def default_contracts():
    """The wire-form contracts of the default catalog, by slot id.

    They are generated from catalog/targets.hcl into the source tree (a Go
    test keeps them current) and are not part of the validator code a verify
    worker runs: a worker uses the contract its request carries.
    """
    try:
        from .default_catalog import CONTRACTS
    except ImportError:
        raise RuntimeError("the default catalog's contracts are not available here: verify workers bind the "
                           "contract their request carries (cacheon_reference.bind)") from None
    return CONTRACTS


def get(name: str) -> BoundSlot:
    """Slot name's semantics bound to the contract the default catalog states."""
    contracts = default_contracts()
    if name not in contracts:
        raise KeyError(f"unknown slot {name!r}; the default catalog registers {', '.join(sorted(contracts))}")
    return bind(contracts[name])


def tolerance(dtype_name: str):
    """(atol, rtol) every slot of the default catalog states for dtype_name.
    A slot's own tolerance is BoundSlot.tolerance; this is for callers that
    hold no slot, and fails when the slots disagree or none lists dtype_name."""
    seen = {get(n).tolerance(dtype_name) for n in default_contracts()}
    if len(seen) != 1:
        raise ValueError(f"the default catalog's slots state {len(seen)} different tolerances for {dtype_name!r}")
    return seen.pop()
