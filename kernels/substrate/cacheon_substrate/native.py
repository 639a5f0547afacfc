"""Prebuilt native libraries for rows that declare cuda_sources.

The controller compiles a contribution's declared CUDA sources before any
engine starts, in a contained compiler child, and seals the libraries in a
content-addressed, read-only artifact directory (evaluator/prebuild); it
reopens and verifies that directory and binds it into the engine's sandbox.
An engine never compiles: it finds the library built from exactly the
bytes a row declares, checks the library's sealed digest, and loads it
with torch.ops.load_library, whose TORCH_LIBRARY registrations make the
row's operators callable before the row's module is imported.
"""

import hashlib
import json
import os
from typing import Dict, List

ARTIFACT_SCHEMA = "prebuild-artifact-v1"
MANIFEST = "artifact.json"
MAX_MANIFEST_BYTES = 1 << 20


class NativeError(Exception):
    """The artifact cannot be read, has no library for a row, or does not
    verify."""


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _contained(root: str, rel: str) -> str:
    root = os.path.realpath(root)
    path = os.path.realpath(os.path.join(root, rel))
    if os.path.isabs(rel) or os.path.commonpath([root, path]) != root:
        raise NativeError(f"{rel!r} escapes {root}")
    return path


class NativeArtifact:
    """One sealed prebuild artifact directory."""

    def __init__(self, directory: str):
        self.dir = os.path.realpath(directory)
        path = os.path.join(self.dir, MANIFEST)
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_MANIFEST_BYTES + 1)
        except OSError as e:
            raise NativeError(f"{path}: {e}") from None
        if len(data) > MAX_MANIFEST_BYTES:
            raise NativeError(f"{path}: larger than {MAX_MANIFEST_BYTES} bytes")
        try:
            doc = json.loads(data)
        except ValueError as e:
            raise NativeError(f"{path}: {e}") from None
        if not isinstance(doc, dict) or doc.get("schema") != ARTIFACT_SCHEMA:
            raise NativeError(f"{path}: not a {ARTIFACT_SCHEMA} inventory")
        self.digest = os.path.basename(self.dir)
        self.files: Dict[str, str] = {f["path"]: f["sha256"] for f in doc.get("files") or []}
        self.libraries: List[dict] = list(doc.get("libraries") or [])
        self.loaded: Dict[str, str] = {}

    def bind(self, root: str, sources: List[str], where: str) -> dict:
        """The library built from the bytes of the row's declared sources
        (paths relative to root). Bound by content, so the paths a
        materialized tree gives the files do not matter."""
        try:
            want = sorted(_sha256(_contained(root, s)) for s in sources)
        except OSError as e:
            raise NativeError(f"{where}: cuda_sources: {e}") from None
        for lib in self.libraries:
            if sorted(s.get("sha256", "") for s in lib.get("sources") or []) == want:
                return lib
        raise NativeError(f"{where}: the sealed prebuild artifact {self.digest} holds no library built from "
                          f"the row's cuda_sources ({', '.join(sources)})")

    def load(self, lib: dict) -> str:
        """Loads the library once, after checking its sealed digest."""
        rel = lib.get("path", "")
        if rel in self.loaded:
            return self.loaded[rel]
        path = _contained(self.dir, rel)
        want = self.files.get(rel)
        if want is None:
            raise NativeError(f"artifact {self.digest}: library {rel!r} is not in its inventory")
        got = _sha256(path)
        if got != want:
            raise NativeError(f"artifact {self.digest}: {rel} has sha256 {got}, sealed {want}")
        import torch

        torch.ops.load_library(path)
        self.loaded[rel] = path
        return path
