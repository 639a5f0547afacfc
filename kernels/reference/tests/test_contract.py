"""Tests of the catalog contract binding: what a contract changes, and what
the semantics refuse.

Run (from kernels/reference): python3 -m unittest discover -s tests
"""

import copy
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cacheon_reference as ref  # noqa: E402
from cacheon_reference.plan import phase_inputs, phase_seeds, plan_cases  # noqa: E402


def contract(name, **changes):
    """A copy of the default catalog's contract of name with fields replaced
    (dotted keys reach into correctness and tolerances)."""
    c = copy.deepcopy(ref.default_contracts()[name])
    for key, value in changes.items():
        *path, leaf = key.split("__")
        target = c
        for p in path:
            target = target[p]
        target[leaf] = value
    return c


class SemanticsDeclareWhatTheyGenerate(unittest.TestCase):
    """The names a contract is checked against are the ones the generator
    and the allocator actually produce."""

    def test_declared_names(self):
        for name in ref.names():
            slot = ref.get(name)
            sem = slot.semantics
            world = 2 if slot.collective else 1
            p = slot.normalize(slot.params(slot.catalog_shapes[0]))
            with self.subTest(name):
                v = slot.generate(p, torch.float32, 0, 0, world)
                self.assertEqual(sorted(k for k, x in v.items() if isinstance(x, torch.Tensor)), sorted(sem.inputs))
                self.assertEqual(sorted(k for k, x in v.items() if not isinstance(x, torch.Tensor)), sorted(sem.scalars))
                self.assertEqual(sorted(slot.output_specs(p, torch.float32)), sorted(sem.outputs))


class ContractChangesBehaviour(unittest.TestCase):
    """A catalog value reaches the judgement through the contract alone."""

    def test_min_ratio(self):
        e = torch.zeros(100)
        a = e.clone()
        a[:2] = 5.0  # 98% of elements within tolerance
        strict = ref.bind(contract("collective.all_reduce", correctness__min_ratio="0.99"))
        loose = ref.bind(contract("collective.all_reduce", correctness__min_ratio="0.98"))
        atol, rtol = strict.tolerance("float32")
        self.assertFalse(ref.compare(a, e, strict.correctness, atol, rtol).passed)
        self.assertTrue(ref.compare(a, e, loose.correctness, atol, rtol).passed)

    def test_tolerance(self):
        e = torch.ones(8)
        a = e + 1e-3
        default = ref.bind(contract("activation.silu_and_mul"))
        wide = ref.bind(contract("activation.silu_and_mul", tolerances__float32={"atol": "0.01", "rtol": "0"}))
        self.assertEqual(wide.tolerance("float32"), (0.01, 0.0))
        self.assertFalse(ref.compare(a, e, default.correctness, *default.tolerance("float32")).passed)
        self.assertTrue(ref.compare(a, e, wide.correctness, *wide.tolerance("float32")).passed)

    def test_mode(self):
        slot = ref.bind(contract("activation.silu_and_mul", correctness__mode="matched_ratio",
                                 correctness__min_ratio="0.5"))
        self.assertEqual(slot.correctness.describe(), "matched_ratio >= 0.5")

    def test_shapes(self):
        slot = ref.bind(contract("norm.rmsnorm", shapes=[[3, 64], [5, 32]]))
        cases = plan_cases(slot, 0, 1)
        self.assertEqual([c["catalog_params"] for c in cases], [{"T": 3, "H": 64}, {"T": 5, "H": 32}])

    def test_graph_dynamic_inputs(self):
        # With weight dynamic, the repeat call gets a fresh weight too.
        for dynamic, weight_fresh in ((["x"], False), (["x", "weight"], True)):
            with self.subTest(dynamic=dynamic):
                slot = ref.bind(contract("norm.rmsnorm", graph_dynamic_inputs=dynamic))
                p = {"T": 4, "H": 16}
                seeds = dict(phase_seeds(slot, p, torch.float32, 3, 1, False))
                eager = phase_inputs(slot, p, torch.float32, 3, seeds["eager"], 0, 1)
                repeat = phase_inputs(slot, p, torch.float32, 3, seeds["repeat"], 0, 1)
                self.assertFalse(torch.equal(eager["x"], repeat["x"]))
                self.assertEqual(not torch.equal(eager["weight"], repeat["weight"]), weight_fresh)

    def test_call_order(self):
        slot = ref.bind(contract("norm.rmsnorm", call=["out", "x", "weight", "eps"]))
        self.assertEqual(slot.call, ("out", "x", "weight", "eps"))

    def test_prepare_dropped_passes_weights(self):
        # Without a prepare step the weights prepare consumed are call arguments.
        slot = ref.bind(contract("moe.fused_experts", prepare="", call=["x", "topk_ids", "topk_weights", "w13", "w2", "out"]))
        self.assertFalse(slot.prepare)
        self.assertEqual(slot.prepare_args, ())


class ContractsTheSemanticsRefuse(unittest.TestCase):
    """Each refusal names the slot, the field and both values."""

    def test_refusals(self):
        cases = [
            ("unknown mode", "activation.silu_and_mul", {"correctness__mode": "kl_divergence"},
             "correctness.mode 'kl_divergence' is not implemented"),
            ("reference id", "activation.silu_and_mul", {"reference_id": "activation.silu_and_mul.reference.v2"},
             "reference_id: the catalog states 'activation.silu_and_mul.reference.v2', this validator implements "
             "'activation.silu_and_mul.reference.v1'"),
            ("renamed argument", "activation.silu_and_mul", {"call": ["inp", "out"], "graph_dynamic_inputs": ["inp"]},
             "call argument 'inp' is not an input this validator generates (it generates x)"),
            ("dropped input", "norm.rmsnorm", {"call": ["x", "out", "eps"]},
             "generated input 'weight' is not passed"),
            ("scalar dynamic", "norm.rmsnorm", {"graph_dynamic_inputs": ["x", "eps"]},
             "graph_dynamic_inputs: 'eps' is a Python scalar"),
            ("shape params reordered", "norm.rmsnorm", {"shape_params": ["H", "T"]},
             "shape_params: the catalog states ['H', 'T'], the generator reads ['T', 'H']"),
            ("outputs", "collective.ar_residual_rmsnorm", {"outputs": ["out_norm"]},
             "outputs: the catalog states ['out_norm'], this validator allocates ['out_norm', 'out_residual']"),
            ("prepare without prepared", "moe.fused_experts",
             {"call": ["x", "topk_ids", "topk_weights", "w13", "w2", "out"]},
             "prepare 'prepare' is named but call does not pass 'prepared'"),
            ("group on an op", "activation.silu_and_mul", {"call": ["x", "out", "group"]},
             "call passes 'group' but kind is 'op'"),
            ("min_ratio out of range", "collective.all_reduce", {"correctness__min_ratio": "1.5"},
             "correctness.min_ratio 1.5 is outside (0, 1]"),
            ("decimal", "collective.all_reduce", {"correctness__min_ratio": 0.99},
             "correctness.min_ratio must be a decimal string"),
        ]
        for name, slot, changes, want in cases:
            with self.subTest(name):
                with self.assertRaises(ref.ContractError) as cm:
                    ref.bind(contract(slot, **changes))
                self.assertIn(want, str(cm.exception))
                self.assertIn(slot, str(cm.exception))

    def test_unknown_slot(self):
        c = contract("activation.silu_and_mul", slot="activation.gelu")
        with self.assertRaisesRegex(ref.UnknownSlot, "no semantics for slot 'activation.gelu'"):
            ref.bind(c)

    def test_tolerance_for_unlisted_dtype(self):
        slot = ref.bind(contract("activation.silu_and_mul", tolerances={"float32": {"atol": "0.1", "rtol": "0.1"}}))
        with self.assertRaisesRegex(ref.ContractError, "no tolerance for dtype 'bfloat16' \\(the catalog lists float32\\)"):
            slot.tolerance("bfloat16")


if __name__ == "__main__":
    unittest.main()
