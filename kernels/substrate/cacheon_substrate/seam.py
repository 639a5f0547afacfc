"""The seam: every slot call site dispatches through here.

A materialized engine tree carries a runtime manifest (manifest.toml at the
tree root, bundle_id "cacheon-materialized-v1") whose [[ops]] rows name,
per slot, the active contribution: a source file relative to the tree root
(an entry shim that imports the namespaced contribution), the entry and
optional prepare callables, and an optional canonical metadata file whose
domain says which live calls the row accepts. The seam imports every row's
module at start-up, and for each call picks the row whose domain admits
the call; when no row admits it, or the stack has no row for the slot, the
stock implementation runs. The choice is cached per call signature, so
eager decode pays one dictionary lookup and a captured CUDA graph none.

Slots the substrate's model family never reaches are reported unavailable
rather than silently ignored.
"""

import hashlib
import importlib.util
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from . import stock
from .native import NativeArtifact, NativeError
# The wire vocabulary shared with the Go side (runtime manifest ids, slot
# kinds, capability fields) is generated from the Go declarations into
# _vocab; ABI_VERSION is re-exported for callers of this module.
from ._vocab import ABI_VERSION, CONTEXT_FIELDS, MATERIALIZED_BUNDLE_ID, NUMERIC_FIELDS, SLOT_KIND  # noqa: F401

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

# Slots the substrate executes, and why the others cannot run here.
EXECUTABLE = tuple(stock.STOCK)
UNAVAILABLE = {
    "attention.msa_block_score": "the substrate's attention is dense; it has no MSA block selection",
    "attention.msa_prefill_block_score": "the substrate's attention is dense; it has no MSA block selection",
    "collective.moe_finalize_ar_rmsnorm": "the substrate's MoE has no expert-parallel finalize epilogue",
}

GRAPH_SAFE_BY_DEFAULT = ("op",)

# GPU-only toolkits: a row whose module needs one that this interpreter
# lacks (Triton on a CPU-only host) cannot run here, so its slot runs
# stock, and the report says so. Any other import failure is an error.
GPU_ONLY_MODULES = ("triton",)


class SeamError(Exception):
    """The runtime manifest or a contribution cannot be loaded."""


@dataclass(frozen=True)
class Predicate:
    field: str
    allowed: Optional[Tuple] = None
    lo: Optional[int] = None
    hi: Optional[int] = None

    def admits(self, live: Dict[str, object]) -> bool:
        if self.field not in live:
            return False  # a missing live field is a mismatch, never a wildcard
        v = live[self.field]
        if self.allowed is not None:
            return v in self.allowed
        if not isinstance(v, int):
            return False
        return (self.lo is None or v >= self.lo) and (self.hi is None or v <= self.hi)


def parse_domain(row: dict, metadata: Optional[dict], where: str) -> Tuple[Predicate, ...]:
    """The row's eligibility: manifest dtypes/architectures, metadata legacy
    bounds and capability predicates. Dense weights only unless metadata
    names a quantization."""
    preds: List[Predicate] = []
    md = metadata or {}

    def one_of(field_, values):
        vals = tuple(str(v) for v in values)
        if vals:
            preds.append(Predicate(field_, allowed=vals))

    one_of("dtype", row.get("dtypes") or [])
    one_of("architecture", row.get("architectures") or [])
    one_of("dtype", md.get("dtypes") or [])
    one_of("architecture", md.get("architectures") or [])
    preds.append(Predicate("quant", allowed=tuple(md.get("quant") or ["dense"])))
    if md.get("max_last_dim") is not None:
        preds.append(Predicate("last_dim", hi=int(md["max_last_dim"])))
    if md.get("min_num_tokens") is not None or md.get("max_num_tokens") is not None:
        lo, hi = md.get("min_num_tokens"), md.get("max_num_tokens")
        preds.append(Predicate("num_tokens", lo=None if lo is None else int(lo), hi=None if hi is None else int(hi)))
    caps = md.get("capabilities") or {}
    if not isinstance(caps, dict):
        raise SeamError(f"{where}: capabilities must be an object")
    for name, spec in caps.items():
        if name not in NUMERIC_FIELDS and name not in CONTEXT_FIELDS:
            raise SeamError(f"{where}: unknown capability field {name!r}")
        if not isinstance(spec, dict):
            spec = {"one_of": spec} if isinstance(spec, list) else {"exact": spec}
        if "exact" in spec or "one_of" in spec:
            values = spec.get("one_of", [spec.get("exact")])
            preds.append(Predicate(name, allowed=tuple(values)))
        else:
            preds.append(Predicate(name, lo=spec.get("min"), hi=spec.get("max")))
    return tuple(preds)


@dataclass
class Row:
    slot: str
    variant: str
    source: str
    entry: Callable
    prepare: Optional[Callable]
    domain: Tuple[Predicate, ...]
    graph_safe: bool
    origin: str  # where the row came from, for reports

    def admits(self, live: Dict[str, object]) -> bool:
        return all(p.admits(live) for p in self.domain)


@dataclass
class Choice:
    slot: str
    entry: Callable
    prepare: Optional[Callable]
    origin: str  # "stock" or "<origin>:<variant>"


@dataclass
class Seam:
    """The slot dispatch of one engine: rows by slot, and call counters."""

    rows: Dict[str, List[Row]] = field(default_factory=dict)
    tree: Optional[str] = None
    calls: Dict[str, Dict[str, int]] = field(default_factory=dict)
    count_calls: bool = True
    skipped: Dict[str, List[str]] = field(default_factory=dict)  # slot -> why rows were left out
    # id of a prepared expert state -> (the state, the layer whose raw
    # expert weights it was prepared from): the audit records the layer,
    # not the state, and its judge reads those weights from the model.
    prepared_from: Dict[int, tuple] = field(default_factory=dict)
    _cache: Dict[tuple, Choice] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def resolve(self, slot: str, live: Dict[str, object], graph: bool = False) -> Choice:
        key = (slot, graph, tuple(sorted(live.items())))
        choice = self._cache.get(key)
        if choice is not None:
            return choice
        choice = None
        for row in self.rows.get(slot, ()):
            if graph and not row.graph_safe:
                continue  # a block without graph_safe metadata runs stock inside graphs
            if row.admits(live):
                choice = Choice(slot, row.entry, row.prepare, f"{row.origin}:{row.variant}")
                break
        if choice is None:
            entry, prep = stock.STOCK[slot]
            choice = Choice(slot, entry, prep, "stock")
        with self._lock:
            self._cache[key] = choice
        return choice

    def call(self, slot: str, live: Dict[str, object], *args, graph: bool = False):
        choice = self.resolve(slot, live, graph)
        if self.count_calls:
            per = self.calls.setdefault(slot, {})
            per[choice.origin] = per.get(choice.origin, 0) + 1
        return choice.entry(*args)

    def snapshot(self) -> Dict[str, Dict[str, int]]:
        """A copy of the call counters, for a later delta."""
        with self._lock:
            return {slot: dict(per) for slot, per in self.calls.items()}

    def since(self, before: Dict[str, Dict[str, int]], times: int = 1) -> Dict[str, Dict[str, int]]:
        """The calls made since the snapshot before, per slot and origin,
        each multiplied by times (a captured step replayed times times)."""
        out = {}
        for slot, per in self.snapshot().items():
            was = before.get(slot, {})
            delta = {origin: (n - was.get(origin, 0)) * times for origin, n in per.items() if n > was.get(origin, 0)}
            if delta:
                out[slot] = delta
        return out

    def report(self) -> Dict[str, object]:
        """Per registered slot: contributed rows, stock fallback, or unavailable."""
        out = {}
        for slot in EXECUTABLE:
            rows = self.rows.get(slot, [])
            out[slot] = {"status": "contributed" if rows else "stock",
                         "rows": [f"{r.origin}:{r.variant}" for r in rows]}
            if slot in self.skipped:
                out[slot]["skipped"] = list(self.skipped[slot])
        for slot, why in UNAVAILABLE.items():
            rows = self.rows.get(slot, [])
            out[slot] = {"status": "unavailable", "reason": why, "rows": [f"{r.origin}:{r.variant}" for r in rows]}
        return out


def _import_file(root: str, rel: str, origin: str):
    root = os.path.realpath(root)
    path = os.path.realpath(os.path.join(root, rel))
    if os.path.isabs(rel) or os.path.commonpath([root, path]) != root:
        raise SeamError(f"{origin}: source {rel!r} escapes the tree")
    if not os.path.isfile(path):
        raise SeamError(f"{origin}: source {rel!r} is not a file")
    if root not in sys.path:
        sys.path.insert(0, root)  # namespaced contribution packages live at the tree root
    name = "cacheon_kernel_" + hashlib.sha256(f"{root}\0{rel}".encode()).hexdigest()[:16]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SeamError(f"{origin}: cannot import {rel!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise SeamError(f"{origin}: importing {rel!r} failed: {type(e).__name__}: {e}") from e
    return module


def _read_manifest(root: str) -> dict:
    path = os.path.join(root, "manifest.toml")
    if tomllib is None:
        raise SeamError("reading manifest.toml needs Python 3.11+ (tomllib)")
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise SeamError(f"{path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SeamError(f"{path}: {e}") from None


# cuda_sources rows run from a sealed prebuild artifact (native.py); the
# other keys need machinery the substrate does not have.
_UNSUPPORTED_KEYS = ("setup", "base_kernel", "override_point", "aot_exports", "artifact_resources")


def _load_rows(root: str, doc: dict, origin: str, skipped: Dict[str, List[str]],
               native: Optional[NativeArtifact] = None) -> List[Row]:
    rows = []
    for i, op in enumerate(doc.get("ops") or []):
        where = f"{origin} ops[{i}]"
        for k in ("slot", "source", "entry"):
            if not isinstance(op.get(k), str) or not op[k]:
                raise SeamError(f"{where}: {k} is required")
        bad = [k for k in _UNSUPPORTED_KEYS if op.get(k)]
        if bad:
            raise SeamError(f"{where}: the substrate cannot run rows with {', '.join(bad)}")
        slot = op["slot"]
        cuda = op.get("cuda_sources") or []
        if cuda and native is None:
            raise SeamError(f"{where}: the row declares cuda_sources and this engine was given no sealed prebuild "
                            "artifact (--native-artifact): engines load prebuilt libraries only and never compile")
        metadata = None
        if op.get("metadata"):
            mpath = os.path.join(root, op["metadata"])
            try:
                with open(mpath, encoding="utf-8") as f:
                    metadata = json.load(f)
            except (OSError, ValueError) as e:
                raise SeamError(f"{where}: metadata {op['metadata']!r}: {e}") from None
        domain = parse_domain(op, metadata, where)
        if slot not in EXECUTABLE:
            # Registered but not reachable here: kept for the report only.
            rows.append(Row(slot, op.get("variant", "default"), op["source"], None, None, domain, False, origin))
            continue
        if cuda:
            try:
                native.load(native.bind(root, cuda, where))
            except NativeError as e:
                raise SeamError(str(e)) from None
            except Exception as e:  # the library's own load failed
                raise SeamError(f"{where}: loading the prebuilt library failed: {type(e).__name__}: {e}") from e
        try:
            module = _import_file(root, op["source"], where)
        except SeamError as e:
            missing = e.__cause__
            if isinstance(missing, ModuleNotFoundError) and (missing.name or "").split(".")[0] in GPU_ONLY_MODULES:
                skipped.setdefault(slot, []).append(f"{where}: needs {missing.name}, which this interpreter lacks: the slot runs stock")
                continue
            raise
        entry = getattr(module, op["entry"], None)
        if not callable(entry):
            raise SeamError(f"{where}: entry {op['entry']!r} is not a callable of {op['source']}")
        prepare = None
        if op.get("prepare"):
            prepare = getattr(module, op["prepare"], None)
            if not callable(prepare):
                raise SeamError(f"{where}: prepare {op['prepare']!r} is not a callable of {op['source']}")
        elif stock.STOCK[slot][1] is not None:
            raise SeamError(f"{where}: {slot} needs a prepare callable")
        graph_safe = SLOT_KIND[slot] in GRAPH_SAFE_BY_DEFAULT or bool((metadata or {}).get("graph_safe"))
        rows.append(Row(slot, op.get("variant", "default"), op["source"], entry, prepare, domain, graph_safe, origin))
    return rows


def open_native(directory: Optional[str]) -> Optional[NativeArtifact]:
    """The sealed prebuild artifact at directory (None: none given)."""
    if not directory:
        return None
    try:
        return NativeArtifact(directory)
    except NativeError as e:
        raise SeamError(f"native artifact: {e}") from None


def load_tree(tree: Optional[str], native: Optional[str] = None) -> Seam:
    """The seam of a materialized engine tree; None (or a tree without a
    runtime manifest: the pristine stack) gives the stock engine. native is
    the sealed prebuild artifact directory the tree's cuda_sources rows
    load their libraries from."""
    seam = Seam(tree=tree)
    if tree is None or not os.path.exists(os.path.join(tree, "manifest.toml")):
        return seam
    doc = _read_manifest(tree)
    if doc.get("bundle_id") != MATERIALIZED_BUNDLE_ID:
        raise SeamError(f"{tree}/manifest.toml: bundle_id {doc.get('bundle_id')!r}, expected {MATERIALIZED_BUNDLE_ID!r} "
                        "(materialize a stack with `cacheon stack materialize`; a bundle loads with --bundle)")
    _add(seam, _load_rows(tree, doc, "tree", seam.skipped, open_native(native)))
    return seam


def swap(old: Seam, tree: Optional[str], native: Optional[str] = None) -> Seam:
    """The seam of another engine tree, for a resident engine that swaps
    one tree for another (spec: a hot swap). Everything the old seam
    imported is dropped first: every cacheon_kernel_* module, every module
    loaded from under the old tree, and the old tree's root on sys.path,
    so no code of the old tree survives into the new one. The caller
    recaptures its CUDA graphs and forgets prepared weights."""
    roots = [os.path.realpath(t) for t in (old.tree,) if t]

    def under_root(module) -> bool:
        # A module file, or a (namespace) package's search path, in the
        # tree. Some modules are not what they seem (torch.classes answers
        # every attribute with an object that is not a path list): anything
        # unreadable is not a module of the tree.
        try:
            places = [getattr(module, "__file__", None) or ""]
            path = getattr(module, "__path__", None)
            if isinstance(path, (list, tuple)) or type(path).__name__ == "_NamespacePath":
                places += [str(p) for p in path]
            return any(isinstance(p, str) and p and os.path.realpath(p).startswith(r + os.sep) for p in places for r in roots)
        except Exception:
            return False

    for name, module in list(sys.modules.items()):
        if name.startswith(("cacheon_kernel_", "cacheon_c_")) or under_root(module):
            del sys.modules[name]
    for r in roots:
        while r in sys.path:
            sys.path.remove(r)
    importlib.invalidate_caches()
    return load_tree(tree, native)


def add_bundle(seam: Seam, bundle: str, native: Optional[str] = None) -> None:
    """Development aid: activate a contribution bundle directly, without a
    materialized tree. Its rows join (and for their slots replace) the
    seam's rows."""
    doc = _read_manifest(bundle)
    rows = _load_rows(bundle, doc, f"bundle {os.path.basename(os.path.normpath(bundle))}", seam.skipped, open_native(native))
    for slot in {r.slot for r in rows}:
        seam.rows.pop(slot, None)
    _add(seam, rows)


def _add(seam: Seam, rows: List[Row]) -> None:
    for r in rows:
        seam.rows.setdefault(r.slot, []).append(r)
    seam._cache.clear()
