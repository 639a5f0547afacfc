"""The registry of the 11 registered slots (the submission ABI)."""

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


def get(name: str) -> Slot:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown slot {name!r}; registered: {', '.join(sorted(REGISTRY))}") from None


def names() -> List[str]:
    return sorted(REGISTRY)


__all__ = ["REGISTRY", "RANK_STRIDE", "Slot", "get", "names"]
