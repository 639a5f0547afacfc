"""Validator-owned references for the registered slots.

For each of the 11 slots: deterministic input generators at the catalog
shapes, the validator's output allocation, the fp32 truth, and the
correctness policy with its tolerances. Nothing here imports candidate
code; the verify worker and the engine substrate's tests use it.
"""

from .compare import Comparison, compare, compare_all, worst
from .plan import phase_inputs, phase_seeds, plan_cases
from .slots import REGISTRY, get, names
from .spec import COMPUTE_DTYPES, Case, Correctness, OutputSpec, dtype_of, tolerance

__all__ = [
    "COMPUTE_DTYPES", "Case", "Comparison", "Correctness", "OutputSpec", "REGISTRY",
    "compare", "compare_all", "dtype_of", "get", "names", "phase_inputs", "phase_seeds",
    "plan_cases", "tolerance", "worst",
]
