"""Raw tensor files, digests and output poisoning.

Outputs cross from the candidate process to the reference process as raw
little-endian element bytes of the logical (contiguous) tensor; shape and
dtype come from the validator's output contract, never from the file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Dict

from ._torch import torch

from .spec import dtype_name


def tensor_bytes(t: torch.Tensor) -> bytes:
    c = t.detach().contiguous().cpu()
    if c.dtype == torch.bool:
        c = c.to(torch.uint8)
    return c.reshape(-1).view(torch.uint8).numpy().tobytes()


def digest(t: torch.Tensor) -> str:
    """sha256 over dtype, shape and element bytes."""
    h = hashlib.sha256()
    h.update(dtype_name(t.dtype).encode())
    h.update(repr(tuple(t.shape)).encode())
    h.update(tensor_bytes(t))
    return h.hexdigest()


def digests(values: Dict[str, object]) -> Dict[str, str]:
    return {k: digest(v) for k, v in values.items() if isinstance(v, torch.Tensor)}


def write_tensor(path: str, t: torch.Tensor) -> Dict[str, object]:
    data = tensor_bytes(t)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return {"file": os.path.basename(path), "bytes": len(data)}


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of path, which must be a regular file of at most limit
    bytes. Files a candidate wrote are read this way: a link is not
    followed, a FIFO or device is refused unread and without blocking, and
    the size is taken from the opened file itself."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{os.path.basename(path)}: not a regular file")
        if st.st_size > limit:
            raise ValueError(f"{os.path.basename(path)}: {st.st_size} bytes, more than {limit}")
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) != st.st_size:
            raise ValueError(f"{os.path.basename(path)}: changed while read")
        return data
    finally:
        os.close(fd)


def read_tensor(path: str, dtype: torch.dtype, shape) -> torch.Tensor:
    """Read a raw tensor file written by write_tensor; the byte count must
    match shape and dtype exactly."""
    elem = torch.empty((), dtype=dtype).element_size()
    n = 1
    for s in shape:
        n *= int(s)
    data = read_regular(path, n * elem)
    if len(data) != n * elem:
        raise ValueError(f"{os.path.basename(path)}: {len(data)} bytes, expected {n * elem} for {tuple(shape)} {dtype}")
    import numpy as np

    raw = np.frombuffer(bytearray(data), dtype=np.uint8)
    t = torch.from_numpy(raw)
    if dtype == torch.bool:
        return t.to(torch.bool).reshape(shape)
    return t.view(dtype).reshape(shape).clone()


def poison(t: torch.Tensor, call: int = 0) -> None:
    """Fill t so stale or unwritten cells are detectable: floats NaN, ints
    max - call%17, bools alternating (starting with call parity)."""
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        pattern = (torch.arange(t.numel(), device=t.device) + call) % 2 == 0
        t.copy_(pattern.reshape(t.shape))
    else:
        t.fill_(torch.iinfo(t.dtype).max - (call % 17))
