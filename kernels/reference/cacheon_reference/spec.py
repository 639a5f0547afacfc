"""Slot contract types: correctness policy, output allocation, cases.

A slot is a validator-owned call boundary. The validator generates the
inputs, allocates every output and computes the truth in fp32; a candidate
only fills the outputs it is handed. The values of a slot's policy come from
the catalog (``cacheon_reference.contract``); the per-slot math lives in
``cacheon_reference.slots``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from ._torch import torch

# Dtypes a slot tensor may have, by the name used everywhere on the wire.
DTYPE_NAMES = ("bfloat16", "float16", "float32", "int32", "int64", "bool")


def dtype_name(dtype) -> str:
    """"bfloat16" for torch.bfloat16, and so on."""
    return str(dtype).replace("torch.", "")


# Activation dtypes a verify run may be asked for.
COMPUTE_DTYPES = ("bfloat16", "float16", "float32")


def dtype_of(name: str) -> torch.dtype:
    if name not in DTYPE_NAMES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {sorted(DTYPE_NAMES)}")
    return getattr(torch, name)


@dataclass(frozen=True)
class Correctness:
    """How a slot's outputs are judged against the fp32 truth.

    allclose: every element within atol + rtol*|expected|, non-finite fails.
    matched_ratio: the fraction of such elements is at least min_ratio.
    cosine: flattened cosine similarity at least min_cosine, and, when
      max_rel_norm_err > 0, | |a| - |e| | / |e| at most that.
    topk_overlap: per row, |topk(actual) & topk(expected)| / k averaged over
      rows is at least min_overlap; NaN and +inf scores are rejected, -inf is
      a legal "never select" score.
    """

    mode: str
    min_ratio: float = 0.0
    min_cosine: float = 0.0
    max_rel_norm_err: float = 0.0
    top_k: int = 0
    min_overlap: float = 0.0

    def __post_init__(self):
        if self.mode not in ("allclose", "matched_ratio", "cosine", "topk_overlap"):
            raise ValueError(f"unknown correctness mode {self.mode!r}")

    def describe(self) -> str:
        if self.mode == "allclose":
            return "allclose"
        if self.mode == "matched_ratio":
            return f"matched_ratio >= {self.min_ratio:g}"
        if self.mode == "cosine":
            s = f"cosine >= {self.min_cosine:g}"
            if self.max_rel_norm_err > 0:
                s += f", rel norm err <= {self.max_rel_norm_err:g}"
            return s
        return f"top-{self.top_k} overlap >= {self.min_overlap:g}"


@dataclass(frozen=True)
class OutputSpec:
    """A validator-allocated output: logical shape and dtype, plus optional
    row padding (elements appended to every row of a 2-D output) so the
    output is strided and its padding can be checked for stray writes."""

    shape: Tuple[int, ...]
    dtype: torch.dtype
    row_padding: int = 0

    def allocate(self, device) -> Tuple[torch.Tensor, torch.Tensor]:
        """(view, backing): the logical output and the storage it lives in."""
        if self.row_padding == 0:
            t = torch.empty(self.shape, dtype=self.dtype, device=device)
            return t, t
        rows, cols = self.shape
        stride = cols + self.row_padding
        backing = torch.empty(rows * stride, dtype=self.dtype, device=device)
        return backing.as_strided((rows, cols), (stride, 1)), backing

    def padding_mask(self, device) -> Optional[torch.Tensor]:
        """Boolean mask over the backing storage that is True on padding."""
        if self.row_padding == 0:
            return None
        rows, cols = self.shape
        stride = cols + self.row_padding
        m = torch.ones(rows, stride, dtype=torch.bool, device=device)
        m[:, :cols] = False
        return m.reshape(-1)


@dataclass(frozen=True)
class Case:
    """One verification case: the shape parameters and the input seed.

    A sequence case (the regrow case of collective slots) also has steps:
    one eager call per (phase, params), in order, in the same process;
    params is then its first step's."""

    index: int
    params: Dict[str, int]
    seed: int
    name: str = ""
    steps: Tuple[Tuple[str, Dict[str, int]], ...] = ()

    def to_json(self):
        obj = {"index": self.index, "params": dict(self.params), "seed": self.seed}
        if self.name:
            obj["name"] = self.name
        if self.steps:
            obj["steps"] = [{"phase": ph, "params": dict(p)} for ph, p in self.steps]
        return obj

    @staticmethod
    def from_json(obj) -> "Case":
        steps = tuple((str(s["phase"]), {k: int(v) for k, v in s["params"].items()}) for s in obj.get("steps") or ())
        return Case(index=int(obj["index"]), params={k: int(v) for k, v in obj["params"].items()}, seed=int(obj["seed"]),
                    name=str(obj.get("name") or ""), steps=steps)


@dataclass
class Inputs:
    """The generated arguments of one call, by name, in semantic order.

    tensors and scalars together cover every argument except outputs, the
    prepared state and the process group.
    """

    values: Dict[str, object] = field(default_factory=dict)

    def tensors(self) -> Dict[str, torch.Tensor]:
        return {k: v for k, v in self.values.items() if isinstance(v, torch.Tensor)}
