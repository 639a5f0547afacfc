"""The catalog's slot contract, and a slot's semantics bound to it.

The target catalog (catalog/targets.hcl) is the only source of a slot's
contract: its kind, call signature, outputs, graph-dynamic inputs, prepare
step, correctness policy, tolerances and catalog shapes. The verify
controller reads the catalog and sends each worker the contract of the
slot it works on; this package keeps only what the catalog cannot state,
the semantics: which inputs a slot generates and how, which outputs it
allocates, and the fp32 truth (``cacheon_reference.slots``).

``bind`` checks that the semantics can honour a contract and returns a
``BoundSlot`` that answers with the contract's values. A contract the
semantics cannot honour (a call argument the generator does not produce,
a correctness mode this package does not implement, shape parameters in
another order) is refused with a ``ContractError`` naming the slot, the
field and both values, never silently patched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .spec import COMPUTE_DTYPES, Correctness

KINDS = ("op", "block", "collective")
MODES = ("allclose", "matched_ratio", "cosine", "topk_overlap")

# Call arguments the validator supplies itself rather than generating.
PREPARED = "prepared"
GROUP = "group"


class ContractError(ValueError):
    """A contract is malformed, or the semantics cannot honour it."""


class UnknownSlot(KeyError):
    """The contract names a slot this package has no semantics for."""

    def __str__(self):
        return str(self.args[0]) if self.args else "unknown slot"


@dataclass(frozen=True)
class Contract:
    """One slot's contract as the catalog states it (decimals as floats)."""

    slot: str
    kind: str
    reference_id: str
    entry: str
    prepare: str  # the catalog's prepare callable; "" when the slot has no prepare step
    call: Tuple[str, ...]
    outputs: Tuple[str, ...]
    dynamic_inputs: Tuple[str, ...]
    correctness: Correctness
    tolerances: Dict[str, Tuple[float, float]]  # dtype -> (atol, rtol)
    kl_threshold: Optional[float]
    shape_params: Tuple[str, ...]
    shape_flags: Tuple[str, ...]
    shapes: Tuple[Tuple[int, ...], ...]

    @staticmethod
    def from_json(obj) -> "Contract":
        """Parse the wire form (see docs/reference/worker-protocol.md)."""
        if not isinstance(obj, dict):
            raise ContractError(f"contract must be a JSON object, got {type(obj).__name__}")
        slot = _str(obj, "slot", "?")
        where = f"contract of {slot}"
        corr = obj.get("correctness")
        if not isinstance(corr, dict):
            raise ContractError(f"{where}: correctness must be an object")
        mode = _str(corr, "mode", slot, "correctness.")
        if mode not in MODES:
            raise ContractError(f"{where}: correctness.mode {mode!r} is not implemented by this validator "
                                f"(it implements {', '.join(MODES)})")
        top_k = corr.get("top_k", 0)
        if not isinstance(top_k, int) or isinstance(top_k, bool):
            raise ContractError(f"{where}: correctness.top_k must be an integer, got {top_k!r}")
        correctness = Correctness(
            mode,
            min_ratio=_decimal(corr, "min_ratio", slot, "correctness."),
            min_cosine=_decimal(corr, "min_cosine", slot, "correctness."),
            max_rel_norm_err=_decimal(corr, "max_rel_norm_err", slot, "correctness."),
            top_k=top_k,
            min_overlap=_decimal(corr, "min_overlap", slot, "correctness."),
        )
        tols = obj.get("tolerances")
        if not isinstance(tols, dict):
            raise ContractError(f"{where}: tolerances must be an object keyed by dtype")
        tolerances = {}
        for dtype, t in tols.items():
            if not isinstance(t, dict):
                raise ContractError(f"{where}: tolerances.{dtype} must be an object")
            tolerances[dtype] = (_decimal(t, "atol", slot, f"tolerances.{dtype}."),
                                 _decimal(t, "rtol", slot, f"tolerances.{dtype}."))
        kl = obj.get("kl_threshold")
        shapes = obj.get("shapes")
        if not isinstance(shapes, list) or not all(isinstance(s, list) for s in shapes):
            raise ContractError(f"{where}: shapes must be a list of lists of integers")
        for s in shapes:
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in s):
                raise ContractError(f"{where}: shape {s} is not a list of integers")
        return Contract(
            slot=slot,
            kind=_str(obj, "kind", slot),
            reference_id=_str(obj, "reference_id", slot),
            entry=_str(obj, "entry", slot),
            prepare=_str(obj, "prepare", slot),
            call=_names(obj, "call", slot),
            outputs=_names(obj, "outputs", slot),
            dynamic_inputs=_names(obj, "graph_dynamic_inputs", slot),
            correctness=correctness,
            tolerances=tolerances,
            kl_threshold=None if kl is None else _decimal(obj, "kl_threshold", slot),
            shape_params=_names(obj, "shape_params", slot),
            shape_flags=_names(obj, "shape_flags", slot),
            shapes=tuple(tuple(s) for s in shapes),
        )


def _str(obj, key, slot, prefix=""):
    v = obj.get(key)
    if not isinstance(v, str):
        raise ContractError(f"contract of {slot}: {prefix}{key} must be a string, got {v!r}")
    return v


def _names(obj, key, slot):
    v = obj.get(key)
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ContractError(f"contract of {slot}: {key} must be a list of strings, got {v!r}")
    return tuple(v)


def _decimal(obj, key, slot, prefix=""):
    # Catalog decimals travel as strings ("0.00001") so they stay exact on
    # the wire; float() of such a string is the nearest double.
    v = obj.get(key)
    if not isinstance(v, str):
        raise ContractError(f"contract of {slot}: {prefix}{key} must be a decimal string, got {v!r}")
    try:
        return float(v)
    except ValueError:
        raise ContractError(f"contract of {slot}: {prefix}{key} {v!r} is not a decimal") from None


class BoundSlot:
    """A slot's semantics bound to its catalog contract.

    Contract values (kind, call, outputs, dynamic inputs, correctness,
    tolerances, catalog shapes) come from the contract; generation,
    allocation and the truth are the semantics'. Planning, the candidate
    harness and the reference judge all work on a BoundSlot.
    """

    def __init__(self, semantics, contract: Contract):
        self.semantics = semantics
        self.contract = contract

    # -- contract values --------------------------------------------------
    @property
    def name(self) -> str:
        return self.contract.slot

    @property
    def kind(self) -> str:
        return self.contract.kind

    @property
    def collective(self) -> bool:
        return self.contract.kind == "collective"

    @property
    def call(self) -> Tuple[str, ...]:
        return self.contract.call

    @property
    def outputs(self) -> Tuple[str, ...]:
        return self.contract.outputs

    @property
    def dynamic_inputs(self) -> Tuple[str, ...]:
        return self.contract.dynamic_inputs

    @property
    def correctness(self) -> Correctness:
        return self.contract.correctness

    @property
    def kl_threshold(self) -> Optional[float]:
        return self.contract.kl_threshold

    @property
    def catalog_shapes(self) -> Tuple[Tuple[int, ...], ...]:
        return self.contract.shapes

    @property
    def shape_params(self) -> Tuple[str, ...]:
        return self.contract.shape_params

    @property
    def prepare(self) -> bool:
        """Whether the slot has a prepare step (the catalog names one)."""
        return bool(self.contract.prepare)

    @property
    def prepare_args(self) -> Tuple[str, ...]:
        """The generated inputs prepare consumes; empty without a prepare step."""
        return self.semantics.prepare_args if self.prepare else ()

    @property
    def live_dtypes(self) -> Tuple[str, ...]:
        """The dtypes the slot's live call sites see; empty: any the catalog
        states a tolerance for. The controller reports any other N/A."""
        return tuple(self.semantics.live_dtypes)

    def tolerance(self, dtype_name: str) -> Tuple[float, float]:
        """(atol, rtol) the catalog states for dtype_name."""
        try:
            return self.contract.tolerances[dtype_name]
        except KeyError:
            raise ContractError(f"contract of {self.name}: no tolerance for dtype {dtype_name!r} "
                                f"(the catalog lists {', '.join(sorted(self.contract.tolerances)) or 'none'})") from None

    # -- semantics ----------------------------------------------------------
    def params(self, shape) -> Dict[str, int]:
        if len(shape) != len(self.shape_params):
            raise ValueError(f"{self.name}: shape {tuple(shape)} does not match params {self.shape_params}")
        return dict(zip(self.shape_params, (int(v) for v in shape)))

    def jitter_keys(self, p):
        return self.semantics.jitter_keys(p)

    def normalize(self, p):
        return self.semantics.normalize(p)

    def generate(self, p, dtype, seed, rank=0, world=1):
        return self.semantics.generate(p, dtype, seed, rank, world)

    def output_specs(self, p, dtype):
        return self.semantics.output_specs(p, dtype)

    def truth(self, p, ranks, dtype):
        return self.semantics.truth(p, ranks, dtype)

    def live(self, p, world):
        return self.semantics.live(p, world)

    def describe(self, p) -> str:
        return self.semantics.describe(p)

    def __getattr__(self, name):
        # Slot-specific helpers of the semantics (a prefill slot's dims, a
        # scorer's block count). The semantics hold no contract values, so
        # nothing the catalog states can be read past the contract here.
        if name.startswith("__") or name == "semantics":
            raise AttributeError(name)
        return getattr(self.semantics, name)

    def describe_contract(self) -> Dict[str, object]:
        """The bound contract as plain JSON (for plans and listings)."""
        c = self.contract
        k = c.correctness
        return {
            "slot": c.slot,
            "kind": c.kind,
            "reference_id": c.reference_id,
            "entry": c.entry,
            "prepare": c.prepare or None,
            "prepare_args": list(self.prepare_args),
            "call": list(c.call),
            "outputs": list(c.outputs),
            "graph_dynamic_inputs": list(c.dynamic_inputs),
            "correctness": {"mode": k.mode, "min_ratio": k.min_ratio, "min_cosine": k.min_cosine,
                            "max_rel_norm_err": k.max_rel_norm_err, "top_k": k.top_k, "min_overlap": k.min_overlap},
            "tolerances": {d: list(t) for d, t in sorted(c.tolerances.items())},
            "kl_threshold": c.kl_threshold,
            "shape_params": list(c.shape_params),
            "catalog_shapes": [list(s) for s in c.shapes],
        }


def bind(semantics, contract: Contract) -> BoundSlot:
    """Bind semantics to contract after checking the semantics can honour it."""
    problems = check(semantics, contract)
    if problems:
        raise ContractError(f"slot {contract.slot}: the validator cannot verify this contract: " + "; ".join(problems))
    return BoundSlot(semantics, contract)


def check(semantics, c: Contract):
    """Every way the semantics cannot honour contract c, as readable lines
    naming the field and both values (empty when they fit)."""
    problems = []
    if c.slot != semantics.name:
        problems.append(f"slot {c.slot!r} bound to the semantics of {semantics.name!r}")
    if c.reference_id != semantics.reference_id:
        problems.append(f"reference_id: the catalog states {c.reference_id!r}, this validator implements "
                        f"{semantics.reference_id!r}")
    if c.kind not in KINDS:
        problems.append(f"kind {c.kind!r} is not one of {', '.join(KINDS)}")
    if c.shape_params != tuple(semantics.shape_params):
        problems.append(f"shape_params: the catalog states {list(c.shape_params)}, the generator reads "
                        f"{list(semantics.shape_params)}")
    if not c.shapes:
        problems.append("shapes: the catalog lists no shape")
    for d in getattr(semantics, "live_dtypes", ()):
        if d not in COMPUTE_DTYPES:
            problems.append(f"live_dtypes: {d!r} is not one of {', '.join(COMPUTE_DTYPES)}")
    for s in c.shapes:
        if len(s) != len(c.shape_params):
            problems.append(f"shapes: {list(s)} has {len(s)} values for {len(c.shape_params)} shape parameters")
            break
    tensors, scalars = tuple(semantics.inputs), tuple(semantics.scalars)
    generated = tensors + scalars
    prepared = PREPARED in c.call
    if prepared and not c.prepare:
        problems.append(f"call passes {PREPARED!r} but the catalog names no prepare callable")
    if c.prepare and not prepared:
        problems.append(f"prepare {c.prepare!r} is named but call does not pass {PREPARED!r}")
    if prepared and not semantics.prepare_args:
        problems.append(f"call passes {PREPARED!r} but this validator has no prepare inputs for the slot")
    if (GROUP in c.call) != (c.kind == "collective"):
        problems.append(f"call {'passes' if GROUP in c.call else 'lacks'} {GROUP!r} but kind is {c.kind!r} "
                        f"(collective slots, and only they, get the process group)")
    if set(c.outputs) != set(semantics.outputs):
        problems.append(f"outputs: the catalog states {list(c.outputs)}, this validator allocates "
                        f"{list(semantics.outputs)}")
    for arg in c.call:
        if arg in (PREPARED, GROUP) or arg in c.outputs or arg in generated:
            continue
        problems.append(f"call argument {arg!r} is not an input this validator generates "
                        f"(it generates {', '.join(generated)})")
    passed = set(c.call) | (set(semantics.prepare_args) if prepared else set())
    for name in generated:
        if name not in passed:
            problems.append(f"generated input {name!r} is not passed: not in call {list(c.call)}"
                            + (f" nor consumed by prepare" if prepared else ""))
    for name in c.dynamic_inputs:
        if name in scalars:
            problems.append(f"graph_dynamic_inputs: {name!r} is a Python scalar, which a CUDA graph captures as a constant")
        elif name not in tensors:
            problems.append(f"graph_dynamic_inputs: {name!r} is not a tensor input this validator generates "
                            f"(it generates {', '.join(tensors)})")
    if prepared:
        for name in c.dynamic_inputs:
            if name in semantics.prepare_args:
                problems.append(f"graph_dynamic_inputs: {name!r} is consumed by prepare, so it cannot change between calls")
    k = c.correctness
    if k.mode == "matched_ratio" and not 0.0 < k.min_ratio <= 1.0:
        problems.append(f"correctness.min_ratio {k.min_ratio:g} is outside (0, 1]")
    if k.mode == "topk_overlap" and (k.top_k < 1 or not 0.0 < k.min_overlap <= 1.0):
        problems.append(f"correctness: top_k {k.top_k} and min_overlap {k.min_overlap:g} need top_k >= 1 and 0 < min_overlap <= 1")
    if k.mode == "cosine" and not 0.0 < k.min_cosine <= 1.0:
        problems.append(f"correctness.min_cosine {k.min_cosine:g} is outside (0, 1]")
    for dtype, (atol, rtol) in sorted(c.tolerances.items()):
        if not (atol >= 0.0 and rtol >= 0.0):
            problems.append(f"tolerances.{dtype}: atol {atol:g} and rtol {rtol:g} must not be negative")
    return problems
