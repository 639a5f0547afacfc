"""Reading and writing safetensors files without the safetensors package.

Layout: an 8-byte little-endian header length N, N bytes of JSON (an object
mapping tensor names to {dtype, shape, data_offsets: [begin, end]} plus an
optional "__metadata__" map of strings), then the raw little-endian data;
offsets are relative to the end of the header.
"""

import json
import os
import struct
from typing import Dict, Iterable, Optional, Tuple

import numpy as np
import torch

DTYPES = {
    "BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64,
    "I8": torch.int8, "U8": torch.uint8, "I16": torch.int16, "I32": torch.int32, "I64": torch.int64,
    "BOOL": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}

# A header larger than this is not a model header; refuse before reading it.
MAX_HEADER_BYTES = 100 << 20


class SafetensorsError(ValueError):
    """The file is not a well-formed safetensors file."""


def read_header(path: str) -> Tuple[Dict[str, dict], Dict[str, str], int]:
    """(entries by name, metadata, absolute offset of the data region)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise SafetensorsError(f"{path}: shorter than the 8-byte header length")
        (n,) = struct.unpack("<Q", raw)
        if n > MAX_HEADER_BYTES or 8 + n > size:
            raise SafetensorsError(f"{path}: header length {n} does not fit a {size}-byte file")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise SafetensorsError(f"{path}: header is not UTF-8 JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    data_size = size - 8 - n
    spans = []
    for name, e in header.items():
        try:
            dtype = DTYPES[e["dtype"]]
            shape = [int(s) for s in e["shape"]]
            begin, end = (int(x) for x in e["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(f"{path}: tensor {name!r}: bad entry {e!r}") from None
        count = 1
        for s in shape:
            if s < 0:
                raise SafetensorsError(f"{path}: tensor {name!r}: negative dimension")
            count *= s
        elem = torch.empty((), dtype=dtype).element_size()
        if not (0 <= begin <= end <= data_size) or end - begin != count * elem:
            raise SafetensorsError(f"{path}: tensor {name!r}: offsets {begin}..{end} do not hold {shape} {e['dtype']}")
        spans.append((begin, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, _, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise SafetensorsError(f"{path}: tensors {n0!r} and {n1!r} overlap")
    return header, metadata, 8 + n


def load(path: str, names: Optional[Iterable[str]] = None, device="cpu") -> Dict[str, torch.Tensor]:
    """Load tensors (all, or the given names) onto device."""
    header, _, base = read_header(path)
    wanted = list(header) if names is None else list(names)
    out = {}
    with open(path, "rb") as f:
        for name in wanted:
            if name not in header:
                raise SafetensorsError(f"{path}: no tensor {name!r}")
            e = header[name]
            begin, end = e["data_offsets"]
            f.seek(base + begin)
            buf = f.read(end - begin)
            dtype = DTYPES[e["dtype"]]
            raw = torch.from_numpy(np.frombuffer(buf, dtype=np.uint8).copy())
            if dtype == torch.bool:
                t = raw.to(torch.bool)
            elif raw.numel() == 0:
                t = torch.empty(0, dtype=dtype)
            else:
                t = raw.view(dtype)
            out[name] = t.reshape(e["shape"]).to(device)
    return out


def save(path: str, tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> None:
    """Write tensors (sorted by name, 8-byte aligned header) atomically."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        data = (t.to(torch.uint8) if t.dtype == torch.bool else t).reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = dict(metadata)
    js = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    js += b" " * (-len(js) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)
