"""The Slot base class and the generator helpers every slot shares."""

from __future__ import annotations

from typing import Dict, List, Tuple

from .._torch import torch

from ..spec import OutputSpec

# Seed offset between the per-rank streams of a collective: rank r draws its
# sharded tensors from seed + RANK_STRIDE*r; replicated tensors use seed.
RANK_STRIDE = 1_000_003


class Slot:
    """One registered slot's semantics: generator, allocation and truth.

    What the catalog states about a slot (kind, call signature, outputs,
    graph-dynamic inputs, prepare step, correctness policy, tolerances,
    catalog shapes) is not here: it arrives as a contract and is bound to
    these semantics (``cacheon_reference.contract.bind``), which checks that
    the two fit. What stays here is what only code can say: the names the
    generator produces and the outputs it allocates (so a contract can be
    checked against them), the shape parameters the generator reads, the
    inputs a prepare step consumes, and how counts jitter.

    Subclasses set the class attributes and implement generate,
    output_specs, truth and live. Every tensor generate returns is on the
    CPU, drawn from torch.Generator streams seeded from the case seed alone,
    so any process regenerates bit-identical inputs.
    """

    name: str = ""
    reference_id: str = ""  # the catalog reference id whose semantics this implements
    shape_params: Tuple[str, ...] = ()  # the params generate reads, in catalog shape order
    inputs: Tuple[str, ...] = ()  # tensors generate returns
    scalars: Tuple[str, ...] = ()  # Python scalars generate returns (capture-static)
    outputs: Tuple[str, ...] = ("out",)  # outputs output_specs allocates
    prepare_args: Tuple[str, ...] = ()  # inputs a prepare step consumes, when the contract has one
    count_keys: Dict[str, int] = {}  # shape param -> floor under jitter
    # The shape param that is the call's token count (the batch an engine
    # serves), for slots whose calls an engine makes at changing token
    # counts with every other dim fixed; "" when the slot has none. The
    # regrow case of collective slots varies this param alone.
    token_key: str = ""
    # The activation dtypes the slot's live call sites ever see in the
    # engine this validator exports into; empty when any dtype the catalog
    # states a tolerance for is live. A dtype outside is N/A for the slot:
    # verifying it would judge a kernel on a call the engine never makes.
    live_dtypes: Tuple[str, ...] = ()

    def jitter_keys(self, p: Dict[str, int]) -> Dict[str, int]:
        """The count params that jitter for this shape (name -> floor)."""
        return dict(self.count_keys)

    def normalize(self, p: Dict[str, int]) -> Dict[str, int]:
        """Re-establish the slot's shape constraints after jitter."""
        return p

    def generate(self, p: Dict[str, int], dtype: torch.dtype, seed: int, rank: int = 0, world: int = 1) -> Dict[str, object]:
        raise NotImplementedError

    def output_specs(self, p: Dict[str, int], dtype: torch.dtype) -> Dict[str, OutputSpec]:
        raise NotImplementedError

    def truth(self, p: Dict[str, int], ranks: List[Dict[str, object]], dtype: torch.dtype) -> Dict[str, torch.Tensor]:
        """fp32 expected outputs from the inputs of every rank (one entry for
        non-collective slots). Inputs are upcast; the truth never sees the
        candidate."""
        raise NotImplementedError

    def live(self, p: Dict[str, int], world: int) -> Dict[str, object]:
        """The capability fields of a live call with these params."""
        raise NotImplementedError

    def describe(self, p: Dict[str, int]) -> str:
        return " ".join(f"{k}={v}" for k, v in p.items())


class Streams:
    """The two deterministic CPU streams of one (case seed, rank): a replicated
    stream every rank shares and a per-rank stream for sharded tensors."""

    def __init__(self, seed: int, rank: int = 0):
        self.rep = torch.Generator(device="cpu")
        self.rep.manual_seed(_seed63(seed))
        self.own = torch.Generator(device="cpu")
        self.own.manual_seed(_seed63(seed + RANK_STRIDE * rank))


def _seed63(seed: int) -> int:
    # torch seeds are unsigned 64-bit; fold any Python int into range.
    return seed % (1 << 63)


# The generator functions, bound once. The candidate harness binds them
# before it imports candidate code, so a candidate that later rebinds the
# torch attributes does not change the inputs; one that reaches further in
# is caught by the input digests the reference role compares.
_GEN: Dict[str, object] = {}


def bind_generators() -> None:
    if not _GEN:
        _GEN.update(randn=torch.randn, rand=torch.rand, randint=torch.randint, randperm=torch.randperm)


def _gen(name: str):
    if not _GEN:
        bind_generators()
    return _GEN[name]


def normal_f32(g: torch.Generator, *shape) -> torch.Tensor:
    return _gen("randn")(*shape, generator=g, dtype=torch.float32)


def uniform_f32(g: torch.Generator, *shape) -> torch.Tensor:
    return _gen("rand")(*shape, generator=g, dtype=torch.float32)


def permutation(g: torch.Generator, n: int) -> torch.Tensor:
    return _gen("randperm")(n, generator=g)


def index(g: torch.Generator, n: int) -> int:
    """One integer uniform in [0, n)."""
    return int(_gen("randint")(0, n, (1,), generator=g))


def randn(g: torch.Generator, shape, dtype: torch.dtype, scale: float = 1.0) -> torch.Tensor:
    t = _gen("randn")(*shape, generator=g, dtype=torch.float32)
    if scale != 1.0:
        t = t * scale
    return t.to(dtype).contiguous()


def uniform(g: torch.Generator, shape, lo: float, hi: float, dtype: torch.dtype) -> torch.Tensor:
    t = _gen("rand")(*shape, generator=g, dtype=torch.float32) * (hi - lo) + lo
    return t.to(dtype).contiguous()


def seq_lens(g: torch.Generator, batch: int, lo: int, hi: int) -> torch.Tensor:
    """int32 lengths uniform in [lo, hi] with row 0 pinned to hi (the full
    context must always be exercised)."""
    t = _gen("randint")(lo, hi + 1, (batch,), generator=g, dtype=torch.int64)
    t[0] = hi
    return t.to(torch.int32)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def rmsnorm_f32(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.to(torch.float32)
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.to(torch.float32)


def silu_mul_f32(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    g = gate.to(torch.float32)
    return g * torch.sigmoid(g) * up.to(torch.float32)
