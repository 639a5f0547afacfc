"""Call memory a checker can read: the layout of one call's tensors in a
file the controller made.

The candidate harness places every tensor of a checked call (the inputs
and the validator-allocated outputs with their row padding) in one file,
mapped shared, at offsets this module computes from the call's inputs and
output contract alone. The controller copies the file while the whole
candidate sandbox is stopped, right after the harness says the call
returned; the reference role recomputes the same layout from its own
regenerated inputs and reads every fact (input mutation, output values at
the validator's strides, padding) from that copy. Nothing of the layout is
taken from the candidate's process: if its copy of this module lies, the
reference reads its own layout and the call fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

from ._torch import torch

# Every region starts on this boundary: any dtype can view it, and a
# vector load never straddles two tensors.
ALIGN = 64


@dataclass(frozen=True)
class Region:
    kind: str  # "input" or "output" (an output's backing storage)
    name: str
    offset: int  # bytes from the start of the file
    dtype: torch.dtype
    shape: Tuple[int, ...]
    stride: Tuple[int, ...]
    span: int  # elements the strided view reaches, the region's extent

    @property
    def nbytes(self) -> int:
        return self.span * torch.empty((), dtype=self.dtype).element_size()


def _span(shape, stride) -> int:
    if any(int(s) == 0 for s in shape):
        return 0
    return 1 + sum((int(n) - 1) * int(st) for n, st in zip(shape, stride))


def layout(inputs: Dict[str, object], specs) -> Tuple[List[Region], int]:
    """(regions, total bytes) of a call: its tensor inputs in argument
    order at their own strides, then every output's backing storage."""
    regions, off = [], 0

    def place(kind, name, dtype, shape, stride):
        nonlocal off
        off = (off + ALIGN - 1) // ALIGN * ALIGN
        r = Region(kind, name, off, dtype, tuple(int(s) for s in shape), tuple(int(s) for s in stride),
                   _span(shape, stride))
        regions.append(r)
        off += r.nbytes

    for name, v in inputs.items():
        if isinstance(v, torch.Tensor):
            place("input", name, v.dtype, v.shape, v.stride())
    for name, spec in specs.items():
        n = 1
        for s in spec.shape:
            n *= int(s)
        if spec.row_padding:
            rows, cols = spec.shape
            n = rows * (cols + spec.row_padding)
        place("output", name, spec.dtype, (n,), (1,))
    total = (off + ALIGN - 1) // ALIGN * ALIGN
    return regions, max(total, ALIGN)


def view(buf: torch.Tensor, r: Region) -> torch.Tensor:
    """The tensor of region r inside buf, a flat uint8 tensor of the file."""
    flat = buf[r.offset:r.offset + r.nbytes]
    if r.dtype == torch.bool:
        typed = flat.view(torch.bool)
    else:
        typed = flat.view(r.dtype)
    if r.span == 0:
        return typed[:0].reshape(r.shape) if r.shape else typed[:0]
    return typed.as_strided(r.shape, r.stride)


def output_view(backing: torch.Tensor, spec) -> torch.Tensor:
    """The logical output inside its backing storage, as OutputSpec.allocate
    lays it out."""
    if spec.row_padding == 0:
        return backing.reshape(spec.shape)
    rows, cols = spec.shape
    return backing.as_strided((rows, cols), (cols + spec.row_padding, 1))


def file_name(case_index: int, step: str = "") -> str:
    """The arena file of one Call: a case's, or one step's of a sequence
    case. The controller makes exactly these files."""
    return f"c{case_index}_{step}.arena" if step else f"c{case_index}.arena"


def snapshot_name(case_index: int, phase: str) -> str:
    """The controller's copy of a Call's file right after the call of phase."""
    return f"c{case_index}_{phase}.bin"
