"""Importing candidate modules by file path.

Only the candidate role ever calls this. The bundle root goes first on
sys.path so a bundle's own sibling modules resolve; the module gets a
name derived from the bundle and file, so two contributions never share a
module object.
"""

import hashlib
import importlib.util
import os
import sys


class LoadError(Exception):
    """The candidate module could not be imported or lacks a callable."""


def load_module(bundle_root: str, source: str):
    root = os.path.realpath(bundle_root)
    path = os.path.realpath(os.path.join(root, source))
    if os.path.commonpath([root, path]) != root:
        raise LoadError(f"{source}: resolves outside the bundle root")
    if not os.path.isfile(path):
        raise LoadError(f"{source}: not a file")
    tag = hashlib.sha256(f"{root}\0{source}".encode()).hexdigest()[:16]
    name = f"cacheon_kernel_{tag}"
    if root not in sys.path:
        sys.path.insert(0, root)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"{source}: cannot build an import spec")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_native(native):
    """Loads a row's prebuilt library from its sealed artifact (the
    controller compiled it in a contained compiler child and reopened it
    read-only): its TORCH_LIBRARY registrations make the row's operators
    callable as torch.ops.<namespace>.<op>. The worker never compiles."""
    path = native["path"]
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        raise LoadError(f"prebuilt library {path}: {e}") from None
    if digest != native["sha256"]:
        raise LoadError(f"prebuilt library {path}: sha256 {digest}, sealed {native['sha256']}")
    import torch

    torch.ops.load_library(path)


def callable_attr(module, name: str, what: str):
    fn = getattr(module, name, None)
    if fn is None:
        raise LoadError(f"{what} {name!r} is not defined in the module")
    if not callable(fn):
        raise LoadError(f"{what} {name!r} is not callable")
    return fn
