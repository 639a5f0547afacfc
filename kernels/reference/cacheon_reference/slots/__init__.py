"""The semantics of the 11 registered slots, by slot id.

Each entry generates a slot's inputs, allocates its outputs and computes its
fp32 truth. The slot's contract (call signature, shapes, correctness policy,
tolerances) is the catalog's and is bound to these semantics by
``cacheon_reference.bind`` (from a worker request) or ``cacheon_reference.get``
(from the default catalog, outside the verify workers).
"""

from typing import Dict, List

from .activation import SiluAndMul
from .attention import SDPA, Decode, MSABlockScore, MSAPrefillBlockScore
from .base import RANK_STRIDE, Slot
from .collective import AllReduce, ARResidualRMSNorm, MoEFinalizeARRMSNorm
from .moe import FusedExperts, FusedExpertsReduce
from .norm import RMSNorm

REGISTRY: Dict[str, Slot] = {
    s.name: s
    for s in (
        SiluAndMul(),
        RMSNorm(),
        SDPA(),
        Decode(),
        MSABlockScore(),
        MSAPrefillBlockScore(),
        FusedExperts(),
        FusedExpertsReduce(),
        AllReduce(),
        ARResidualRMSNorm(),
        MoEFinalizeARRMSNorm(),
    )
}


def semantics(name: str) -> Slot:
    """The semantics registered for slot id name."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown slot {name!r}; registered: {', '.join(sorted(REGISTRY))}") from None


def names() -> List[str]:
    return sorted(REGISTRY)


__all__ = ["REGISTRY", "RANK_STRIDE", "Slot", "names", "semantics"]
