"""The substrate's identity: the bundle content hash of its package tree.

Computed exactly as `cacheon hash kernels/substrate/cacheon_substrate`:
every regular file below the package directory (symlinks and special files
skipped, as are __pycache__ trees, .pyc/.pyo files and names starting with
"._"), in path-component order, fed to one SHA-256 as a 4-byte big-endian
path length, the UTF-8 relative path, an 8-byte big-endian content length
and the content. Tests, docs and anything outside the package do not count.
"""

import hashlib
import os
import stat
import struct


def _skipped(rel: str) -> bool:
    parts = rel.split("/")
    if any(p in ("__pycache__", ".git") for p in parts):
        return True
    name = parts[-1]
    return name.endswith((".pyc", ".pyo")) or name.startswith("._")


def files(root: str):
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or _skipped(rel):
                continue
            out.append(rel)
    out.sort(key=lambda r: r.split("/"))
    return out


def content_hash(root: str) -> str:
    h = hashlib.sha256()
    rels = files(root)
    if not rels:
        raise ValueError(f"{root}: no files to hash")
    for rel in rels:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
        p = rel.encode("utf-8")
        h.update(struct.pack(">I", len(p)))
        h.update(p)
        h.update(struct.pack(">Q", len(data)))
        h.update(data)
    return h.hexdigest()


def substrate_digest() -> str:
    """The digest of this installed substrate package."""
    return content_hash(os.path.dirname(os.path.abspath(__file__)))
