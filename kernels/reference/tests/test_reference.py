"""Tests of the validator references: comparators, generators, truths, plans.

Run (from kernels/reference): python3 -m unittest discover -s tests
"""

import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import cacheon_reference as ref  # noqa: E402
from cacheon_reference import tensorio  # noqa: E402
from cacheon_reference.plan import (REGROW, REGROW_PHASES, call_inputs, phase_inputs, phase_seeds, plan_cases,  # noqa: E402
                                    regrow_sequences, sequence_seeds)
from cacheon_reference.spec import Correctness  # noqa: E402

ALLCLOSE = Correctness("allclose")


class CompareTest(unittest.TestCase):
    def test_allclose(self):
        e = torch.tensor([1.0, 2.0, -3.0])
        cases = [
            ("exact", e.clone(), True),
            ("within", e + 0.019, True),  # atol 0.01 + rtol 0.01*|e| >= 0.02 for |e|>=1
            ("outside", e + torch.tensor([0.0, 0.0, 0.5]), False),
            ("nan", torch.tensor([1.0, float("nan"), -3.0]), False),
            ("inf", torch.tensor([1.0, float("inf"), -3.0]), False),
        ]
        for name, a, want in cases:
            with self.subTest(name):
                self.assertEqual(ref.compare(a, e, ALLCLOSE, 0.01, 0.01).passed, want)

    def test_the_fast_path_keeps_the_rule(self):
        """compare takes fewer passes when every element is finite; its
        verdict, score, max abs error and reason must be those of the plain
        rule on every mix of finite, infinite, NaN and overflowing values."""

        def plain(a, e, policy, atol, rtol):
            fa, fe = torch.isfinite(a), torch.isfinite(e)
            diff = (a - e).abs()
            ok = torch.where(fe, (diff <= atol + rtol * e.abs()) & fa, a == e)
            both = fa & fe
            mae = float(diff.masked_fill_(~both, 0.0).max()) if bool(both.any()) else 0.0
            n = ok.numel()
            return float(ok.sum()) / n if n else 1.0, mae

        big = torch.finfo(torch.float32).max
        specials = [float("nan"), float("inf"), float("-inf"), big, -big, 0.0]
        g = torch.Generator().manual_seed(7)
        policies = [ALLCLOSE, Correctness("matched_ratio", min_ratio=0.5)]
        for trial in range(300):
            n = int(torch.randint(0, 40, (1,), generator=g))
            e = torch.randn(n, generator=g)
            a = e + torch.randn(n, generator=g) * 0.02
            for t in (a, e):
                for i in torch.randint(0, max(n, 1), (int(torch.randint(0, 4, (1,), generator=g)),), generator=g).tolist():
                    if i < n:
                        t[i] = specials[int(torch.randint(0, len(specials), (1,), generator=g))]
            for policy in policies:
                with self.subTest(trial=trial, mode=policy.mode):
                    frac, mae = plain(a, e, policy, 0.01, 0.01)
                    c = ref.compare(a, e, policy, 0.01, 0.01)
                    self.assertEqual(c.score, frac)
                    self.assertEqual(c.max_abs_err, mae)
                    want = frac == 1.0 if policy.mode == "allclose" else frac >= policy.min_ratio
                    fe = torch.isfinite(e)
                    if want and bool(fe.any()) and float(e[fe].pow(2).mean().sqrt()) < 0.01:
                        # A truth below atol: its matched elements are held to rtol together.
                        m = (fe & torch.isfinite(a)) & ((a - e).abs() <= 0.01 + 0.01 * e.abs())
                        if float(e[m].norm()) > 0:
                            want = bool(float((a - e)[m].norm()) <= 0.01 * float(e[m].norm()))
                    self.assertEqual(c.passed, want)
                    nonfinite = int((~torch.isfinite(a) & torch.isfinite(e)).sum())
                    self.assertEqual(f"{nonfinite} non-finite where finite expected" in c.reason, bool(nonfinite) and not want)

    def test_a_truth_below_atol_is_held_to_its_scale(self):
        # Elementwise, anything within atol of a truth smaller than atol
        # passes, zeros included; the whole output is held to rtol there.
        g = torch.Generator().manual_seed(3)
        e = torch.randn(64, 64, generator=g) * 0.002
        matched = Correctness("matched_ratio", min_ratio=0.97)
        cases = [
            ("honest rounding", e * (1 + torch.randn(64, 64, generator=g) * 0.004), True, "relative L2 error"),
            ("zeros", torch.zeros_like(e), False, "cannot tell an output from zero"),
            ("half the sum", e * 0.5, False, "relative L2 error 0.5"),
            # A few unmatched elements are the ratio's business: the rest
            # are held to rtol together.
            ("nan where finite", e.masked_fill(torch.eye(64, dtype=torch.bool), float("nan")), None, ""),
        ]
        for name, a, want, reason in cases:
            for policy in (ALLCLOSE, matched):
                with self.subTest(name, mode=policy.mode):
                    c = ref.compare(a, e, policy, 0.02, 0.02)
                    want_here = want if want is not None else policy is matched  # 64 of 4096 NaN: 0.984 matched
                    self.assertEqual(c.passed, want_here, c.reason)
                    self.assertIn(reason, c.reason)
        # A truth at or above atol keeps the elementwise rule alone.
        big = torch.randn(64, 64, generator=g)
        self.assertNotIn("RMS", ref.compare(big + 0.01, big, ALLCLOSE, 0.02, 0.02).reason)

    def test_nan_never_matches_nan(self):
        e = torch.tensor([float("nan"), 1.0])
        a = torch.tensor([float("nan"), 1.0])
        self.assertFalse(ref.compare(a, e, ALLCLOSE, 0.1, 0.1).passed)

    def test_shape_mismatch(self):
        c = ref.compare(torch.zeros(2, 3), torch.zeros(3, 2), ALLCLOSE, 0.1, 0.1)
        self.assertFalse(c.passed)
        self.assertIn("shape", c.reason)

    def test_matched_ratio(self):
        e = torch.zeros(100)
        a = e.clone()
        a[:2] = 5.0
        self.assertTrue(ref.compare(a, e, Correctness("matched_ratio", min_ratio=0.98), 0.01, 0.01).passed)
        a[:3] = 5.0
        c = ref.compare(a, e, Correctness("matched_ratio", min_ratio=0.98), 0.01, 0.01)
        self.assertFalse(c.passed)
        self.assertAlmostEqual(c.score, 0.97)

    def test_cosine(self):
        e = torch.tensor([1.0, 2.0, 3.0])
        pol = Correctness("cosine", min_cosine=0.99, max_rel_norm_err=0.1)
        self.assertTrue(ref.compare(e * 1.05, e, pol, 0, 0).passed)
        self.assertFalse(ref.compare(e * 2.0, e, pol, 0, 0).passed)  # same direction, wrong norm
        self.assertFalse(ref.compare(torch.tensor([3.0, 2.0, 1.0]), e, pol, 0, 0).passed)
        self.assertFalse(ref.compare(torch.tensor([1.0, float("nan"), 3.0]), e, pol, 0, 0).passed)

    def test_topk(self):
        pol = Correctness("topk_overlap", top_k=2, min_overlap=0.75)
        e = torch.tensor([[0.0, 5.0, 4.0, -float("inf")], [9.0, 1.0, 2.0, 3.0]])
        self.assertTrue(ref.compare(e * 3 + 1, e, pol, 0, 0).passed)  # monotone transform keeps top-k
        half = torch.tensor([[0.0, 5.0, -1.0, 4.0], [9.0, 1.0, 2.0, 3.0]])  # row 0 overlap 1/2
        c = ref.compare(half, e, pol, 0, 0)
        self.assertAlmostEqual(c.score, 0.75)
        self.assertTrue(c.passed)
        for bad in (float("nan"), float("inf")):
            a = e.clone()
            a[1, 1] = bad
            self.assertFalse(ref.compare(a, e, pol, 0, 0).passed, bad)

    def test_worst_names_the_output(self):
        res = ref.compare_all({"a": torch.ones(2), "b": torch.zeros(2)}, {"a": torch.ones(2), "b": torch.ones(2)},
                              ALLCLOSE, 0.01, 0.01)
        w = ref.worst(res)
        self.assertFalse(w.passed)
        self.assertTrue(w.reason.startswith("b: "))

    def test_tolerances(self):
        # The default catalog's standard set, which every slot uses.
        self.assertEqual(ref.tolerance("bfloat16"), (0.02, 0.02))
        self.assertEqual(ref.tolerance("float16"), (0.01, 0.01))
        self.assertEqual(ref.tolerance("float32"), (1e-5, 1e-5))
        # A dtype the catalog states no tolerance for has none.
        with self.assertRaisesRegex(ref.ContractError, "no tolerance for dtype 'float8_e4m3'"):
            ref.tolerance("float8_e4m3")


class RegistryTest(unittest.TestCase):
    def test_eleven_slots(self):
        self.assertEqual(len(ref.REGISTRY), 11)
        kinds = {n: ref.get(n).kind for n in ref.names()}
        self.assertEqual(kinds["activation.silu_and_mul"], "op")
        self.assertEqual(kinds["norm.rmsnorm"], "op")
        self.assertEqual(sum(k == "collective" for k in kinds.values()), 4)
        with self.assertRaises(KeyError):
            ref.get("activation.gelu")

    def test_catalog_shape_counts(self):
        counts = {n: len(ref.get(n).catalog_shapes) for n in ref.names()}
        self.assertEqual(counts["attention.msa_prefill_block_score"], 11)
        self.assertEqual(counts["moe.fused_experts_reduce"], 3)
        self.assertEqual(counts["norm.rmsnorm"], 6)


def _inputs(slot, p, seed, world):
    return [slot.generate(p, torch.float32, seed, r, world) for r in range(world)]


class GeneratorTest(unittest.TestCase):
    def test_deterministic_and_seed_sensitive(self):
        for name in ref.names():
            slot = ref.get(name)
            world = 2 if slot.collective else 1
            p = slot.normalize(slot.params(slot.catalog_shapes[0]))
            with self.subTest(name):
                a = _inputs(slot, p, 5, world)
                b = _inputs(slot, p, 5, world)
                c = _inputs(slot, p, 6, world)
                self.assertEqual(tensorio.digests(a[0]), tensorio.digests(b[0]))
                for n in slot.dynamic_inputs:
                    self.assertFalse(torch.equal(a[0][n], c[0][n]), n)

    def test_collective_streams(self):
        slot = ref.get("collective.ar_residual_rmsnorm")
        p = slot.params(slot.catalog_shapes[0])
        r0, r1 = _inputs(slot, p, 3, 2)
        self.assertFalse(torch.equal(r0["x"], r1["x"]))  # sharded per rank
        self.assertTrue(torch.equal(r0["residual"], r1["residual"]))  # replicated
        self.assertTrue(torch.equal(r0["weight"], r1["weight"]))

    def test_seq_lens_pin_the_full_context(self):
        slot = ref.get("attention.decode")
        p = slot.params(slot.catalog_shapes[1])
        lens = slot.generate(p, torch.float32, 0)["seq_lens"]
        self.assertEqual(lens.dtype, torch.int32)
        self.assertEqual(int(lens[0]), p["ctx"])
        self.assertTrue(bool(((lens >= 1) & (lens <= p["ctx"])).all()))

    def test_routing(self):
        slot = ref.get("moe.fused_experts")
        p = slot.params(slot.catalog_shapes[1])
        v = slot.generate(p, torch.bfloat16, 0)
        ids, w = v["topk_ids"], v["topk_weights"]
        self.assertEqual((ids.dtype, w.dtype), (torch.int32, torch.float32))
        for row in ids.tolist():
            self.assertEqual(len(set(row)), len(row))  # distinct experts per token
        self.assertTrue(bool(((w >= 0.25) & (w < 0.75)).all()))


class TruthTest(unittest.TestCase):
    """Each truth against an independent, slower formulation."""

    def _truth(self, name, shape, world=1, seed=0, dtype=torch.float32):
        slot = ref.get(name)
        p = slot.normalize(slot.params(shape))
        ranks = [slot.generate(p, dtype, seed, r, world) for r in range(world)]
        return slot, p, ranks, slot.truth(p, ranks, dtype)

    def assertClose(self, a, b, tol=1e-4):
        self.assertTrue(torch.allclose(a.double(), b.double(), atol=tol, rtol=tol),
                        f"max diff {(a.double() - b.double()).abs().max()}")

    def test_silu(self):
        _, p, r, t = self._truth("activation.silu_and_mul", (7, 64))
        x = r[0]["x"].double()
        self.assertClose(t["out"], F.silu(x[:, :64]) * x[:, 64:])

    def test_rmsnorm(self):
        _, p, r, t = self._truth("norm.rmsnorm", (5, 96))
        x, w = r[0]["x"].double(), r[0]["weight"].double()
        want = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
        self.assertClose(t["out"], want)

    def test_sdpa_loops(self):
        _, p, r, t = self._truth("attention.sdpa", (6, 4, 2, 8))
        q, k, v = (r[0][n].double() for n in ("q", "k", "v"))
        out = torch.zeros_like(q)
        for h in range(4):
            kh = h // 2
            for i in range(6):
                s = torch.tensor([float(q[i, h] @ k[j, kh]) / math.sqrt(8) for j in range(i + 1)], dtype=torch.float64)
                pr = torch.softmax(s, 0)
                out[i, h] = sum(pr[j] * v[j, kh] for j in range(i + 1))
        self.assertClose(t["out"], out)

    def test_decode_masks_past_seq_len(self):
        slot, p, r, t = self._truth("attention.decode", (3, 4, 1, 8, 9))
        sdpa = ref.get("attention.sdpa")
        for b in range(3):
            n = int(r[0]["seq_lens"][b])
            row = {"q": r[0]["q"][b:b + 1], "k": r[0]["k"][b, :n], "v": r[0]["v"][b, :n],
                   "sm_scale": r[0]["sm_scale"], "causal": True}
            # One query at the end of n keys sees all of them.
            want = sdpa.truth({}, [row], torch.float32)["out"][0]
            self.assertClose(t["out"][b], want)

    def test_msa_block_score(self):
        slot, p, r, t = self._truth("attention.msa_block_score", (2, 3, 16, 96, 8))
        q, k, lens = r[0]["q"].double().sum(1), r[0]["index_k"].double()[:, :, 0], r[0]["seq_lens"]
        nb = t["block_scores"].shape[1]
        self.assertEqual(nb, max(12, -(-p["ctx"] // 8)))
        for b in range(2):
            for blk in range(nb):
                vals = [float(q[b] @ k[b, n]) for n in range(blk * 8, blk * 8 + 8) if n < int(lens[b])]
                want = max(vals) if vals else float("-inf")
                got = float(t["block_scores"][b, blk])
                if vals:
                    self.assertAlmostEqual(got, want, places=3)
                else:
                    self.assertEqual(got, float("-inf"))

    def test_msa_prefill_causality(self):
        slot = ref.get("attention.msa_prefill_block_score")
        p = slot.params((512, 12, 64, 64, 1))
        r = slot.generate(p, torch.bfloat16, 0)
        t = slot.truth(p, [r], torch.bfloat16)["block_scores"]
        prefix, S, nb = slot.dims(p)
        self.assertEqual(tuple(t.shape), (512, nb))
        # Row 0 sees keys up to prefix: every later block is -inf.
        first_hidden = (prefix + 1 + 63) // 64 if (prefix + 1) % 64 else (prefix + 1) // 64
        self.assertTrue(bool((t[0, first_hidden:] == float("-inf")).all()))
        # A kernel that ignores causality loses the probe.
        q, k = r["q"].float(), r["index_k"].float()
        full = (q @ k.t()) * r["scale"]
        pad = torch.full((512, nb * 64), float("-inf"))
        pad[:, :S] = full
        noncausal = pad.view(512, nb, 64).amax(-1)
        pol = slot.correctness
        self.assertFalse(ref.compare(noncausal, t, pol, 0, 0).passed)
        self.assertTrue(ref.compare(t * 2 + 1, t, pol, 0, 0).passed)  # monotone perturbation passes

    def test_msa_prefill_output_is_row_padded(self):
        slot = ref.get("attention.msa_prefill_block_score")
        p = slot.params(slot.catalog_shapes[0])
        spec = slot.output_specs(p, torch.bfloat16)["block_scores"]
        view, backing = spec.allocate("cpu")
        self.assertEqual(view.dtype, torch.float32)
        self.assertEqual(view.stride(), (view.shape[1] + 7, 1))
        self.assertEqual(int(spec.padding_mask("cpu").sum()), 7 * view.shape[0])
        self.assertEqual(backing.numel(), view.shape[0] * (view.shape[1] + 7))

    def test_moe_dense_loop(self):
        _, p, r, t = self._truth("moe.fused_experts", (5, 4, 16, 8, 2))
        v = r[0]
        want = torch.zeros(5, 16, dtype=torch.float64)
        for i in range(5):
            for j in range(2):
                e = int(v["topk_ids"][i, j])
                h = v["w13"][e].double() @ v["x"][i].double()
                a = F.silu(h[:8]) * h[8:]
                want[i] += float(v["topk_weights"][i, j]) * (v["w2"][e].double() @ a)
        self.assertClose(t["out"], want)

    def test_moe_reduce_sums_rank_experts(self):
        slot, p, r, t = self._truth("moe.fused_experts_reduce", (4, 8, 32, 16, 2), world=2)
        plain = ref.get("moe.fused_experts")
        parts = [plain.truth(p, [x], torch.float32)["out"] for x in r]
        self.assertClose(t["out"], parts[0] + parts[1])
        self.assertTrue(torch.equal(r[0]["x"], r[1]["x"]))
        self.assertFalse(torch.equal(r[0]["w13"], r[1]["w13"]))

    def test_ar_residual_rmsnorm(self):
        _, p, r, t = self._truth("collective.ar_residual_rmsnorm", (3, 32), world=3)
        res = r[0]["x"] + r[1]["x"] + r[2]["x"] + r[0]["residual"]
        self.assertClose(t["out_residual"], res)
        norm = ref.get("norm.rmsnorm").truth({}, [{"x": res, "weight": r[0]["weight"], "eps": 1e-6}], torch.float32)
        self.assertClose(t["out_norm"], norm["out"])

    def test_moe_finalize(self):
        _, p, r, t = self._truth("collective.moe_finalize_ar_rmsnorm", (5, 8, 3, 16), world=2)
        acc = torch.zeros(5, 16, dtype=torch.float64)
        for rk in r:
            for tok in range(5):
                for k in range(3):
                    row = int(rk["row_map"][tok + k * 8])
                    acc[tok] += float(rk["scales"][tok, k]) * rk["gemm_out"][row].double()
        self.assertClose(t["out_residual"], acc + r[0]["residual"].double())


class MoEFinalizeDomainTest(unittest.TestCase):
    """collective.moe_finalize_ar_rmsnorm as upstream plans it: the
    expert-token count grows to the token count, and only bfloat16 is a
    live dtype."""

    def test_expert_tokens_grow_to_the_token_count(self):
        fin = ref.get("collective.moe_finalize_ar_rmsnorm")
        cases = [
            # (T, T_exp) drawn -> T_exp planned; T is never clipped.
            ((84, 64), 84),
            ((301, 256), 301),
            ((64, 64), 64),
            ((8, 16), 16),
            ((1, 256), 256),
        ]
        for (t, t_exp), want in cases:
            with self.subTest(T=t, T_exp=t_exp):
                p = fin.normalize({"T": t, "T_exp": t_exp, "K": 5, "H": 6144})
                self.assertEqual((p["T"], p["T_exp"]), (t, want))

    def test_grown_cases_generate_and_judge(self):
        """A grown case is a valid call: gemm_out has T_exp*K rows and the
        truth trims to T."""
        slot = ref.get("collective.moe_finalize_ar_rmsnorm")
        p = slot.normalize(slot.params((12, 8, 3, 16)))
        r = [slot.generate(p, torch.bfloat16, 0, rank, 2) for rank in range(2)]
        t = slot.truth(p, r, torch.bfloat16)
        self.assertEqual((p["T"], p["T_exp"]), (12, 12))
        self.assertEqual(tuple(r[0]["gemm_out"].shape), (12 * 3, 16))
        self.assertEqual(tuple(t["out_norm"].shape), (12, 16))

    def test_only_bfloat16_is_live(self):
        self.assertEqual(ref.get("collective.moe_finalize_ar_rmsnorm").live_dtypes, ("bfloat16",))
        self.assertEqual(ref.get("collective.ar_residual_rmsnorm").live_dtypes, ())

    def test_an_unknown_live_dtype_is_a_contract_problem(self):
        from cacheon_reference.contract import check
        slot = ref.get("collective.moe_finalize_ar_rmsnorm")

        class Misdeclared(type(slot.semantics)):
            live_dtypes = ("float8",)

        self.assertEqual(check(slot.semantics, slot.contract), [])
        self.assertTrue(any("live_dtypes" in p for p in check(Misdeclared(), slot.contract)))

    def test_the_plan_role_reports_live_dtypes(self):
        try:
            from cacheon_worker import plan as plan_role
        except ImportError:
            self.skipTest("cacheon_worker is not importable (run with PYTHONPATH=.:../worker)")
        names = ("collective.moe_finalize_ar_rmsnorm", "collective.ar_residual_rmsnorm")
        contracts = [ref.default_contracts()[n] for n in names]
        out = plan_role.run({"seed": 3, "world_size": 2, "device": "cpu", "contracts": contracts}, lambda *a: None)
        self.assertEqual(out["slots"][names[0]]["live_dtypes"], ["bfloat16"])
        self.assertEqual(out["slots"][names[1]]["live_dtypes"], [])
        for c in out["slots"][names[0]]["cases"]:
            self.assertEqual(c["live"]["exp_tokens"], max(c["params"]["T"], c["catalog_params"]["T_exp"]))


class PlanTest(unittest.TestCase):
    def test_jitter_is_seeded(self):
        slot = ref.get("activation.silu_and_mul")
        a, b, c = plan_cases(slot, 7, 1), plan_cases(slot, 7, 1), plan_cases(slot, 8, 1)
        self.assertEqual([x["params"] for x in a], [x["params"] for x in b])
        self.assertNotEqual([x["params"] for x in a], [x["params"] for x in c])
        self.assertEqual([x["seed"] for x in a], [7 + i for i in range(len(slot.catalog_shapes))])
        for x in a:
            self.assertEqual(x["params"]["d"], x["catalog_params"]["d"])  # only counts jitter
            self.assertGreaterEqual(x["params"]["T"], 1)

    def test_causal_probe_keeps_q_len(self):
        slot = ref.get("attention.msa_prefill_block_score")
        for seed in range(5):
            for c in plan_cases(slot, seed, 1):
                if c["params"]["causal_probe"]:
                    self.assertEqual(c["params"]["q_len"], c["catalog_params"]["q_len"])
                self.assertGreaterEqual(c["params"]["prefix_blocks"], 12)

    def test_constraints_survive_jitter(self):
        fin = ref.get("collective.moe_finalize_ar_rmsnorm")
        for seed in range(10):
            for c in plan_cases(fin, seed, 2):
                self.assertLessEqual(c["params"]["T"], c["params"]["T_exp"])
                # T_exp grows to T; it never shrinks below the catalog's.
                self.assertEqual(c["params"]["T_exp"], max(c["catalog_params"]["T_exp"], c["params"]["T"]))
        dec = ref.get("attention.decode")
        for seed in range(10):
            for c in plan_cases(dec, seed, 1):
                self.assertGreaterEqual(c["params"]["B"], 2)

    def test_phase_seeds_are_fresh(self):
        slot = ref.get("attention.decode")
        p = slot.params(slot.catalog_shapes[0])
        phases = phase_seeds(slot, p, torch.bfloat16, 11, 1, graph=True)
        self.assertEqual([n for n, _ in phases], ["eager", "repeat", "nudged", "replay0", "replay1", "replay2"])
        prev = None
        for (n1, s1), (n2, s2) in zip(phases, phases[1:]):
            a = call_inputs(slot, p, torch.bfloat16, 11, n1, s1, 0, 1)
            b = call_inputs(slot, p, torch.bfloat16, 11, n2, s2, 0, 1)
            for n in slot.dynamic_inputs:
                if n2 == "nudged" and not b[n].dtype.is_floating_point:
                    continue  # the nudge changes floating-point inputs only
                self.assertFalse(torch.equal(a[n], b[n]), (n1, n2, n))
            prev = b
        self.assertEqual(prev["sm_scale"], 1 / math.sqrt(64))

    def test_the_nudged_call_changes_one_element(self):
        """The nudged call is the repeat's inputs with exactly one element
        of each floating-point dynamic input changed, the same on both
        sides that compute it: a fingerprint of a few values misses it."""
        for name in ("norm.rmsnorm", "activation.silu_and_mul", "attention.decode"):
            slot = ref.get(name)
            p = slot.params(slot.catalog_shapes[0])
            seeds = dict(phase_seeds(slot, p, torch.float32, 5, 1, graph=False))
            rep = call_inputs(slot, p, torch.float32, 5, "repeat", seeds["repeat"], 0, 1)
            nud = call_inputs(slot, p, torch.float32, 5, "nudged", seeds["nudged"], 0, 1)
            again = call_inputs(slot, p, torch.float32, 5, "nudged", seeds["nudged"], 0, 1)
            for n in slot.dynamic_inputs:
                with self.subTest(slot=name, input=n):
                    self.assertTrue(torch.equal(nud[n], again[n]))
                    changed = int((rep[n] != nud[n]).sum())
                    self.assertEqual(changed, 1 if rep[n].dtype.is_floating_point else 0)


COLLECTIVES = ("collective.all_reduce", "collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm",
               "moe.fused_experts_reduce")


class RegrowTest(unittest.TestCase):
    def test_every_collective_slot_has_one(self):
        for name in ref.names():
            slot = ref.get(name)
            seqs = regrow_sequences(slot, plan_cases(slot, 0, 2), 0, 2)
            self.assertEqual(bool(seqs), slot.collective, name)
        self.assertEqual({n for n in ref.names() if ref.get(n).collective}, set(COLLECTIVES))

    def test_big_small_big_with_only_the_token_count_changing(self):
        for name in COLLECTIVES:
            slot = ref.get(name)
            key = slot.token_key
            for seed in range(4):
                cases = plan_cases(slot, seed, 2)
                first = regrow_sequences(slot, cases, seed, 2)[0]
                self.assertEqual((first["index"], first["seed"], first["name"]), (len(cases), seed + len(cases), REGROW))
                for steps, params in ((first["steps"], "params"), (first["catalog_steps"], "catalog_params")):
                    big, small, again = (s["params"] for s in steps)
                    self.assertEqual([s["phase"] for s in steps], list(REGROW_PHASES))
                    # big is the planned case with the most tokens, small
                    # the jitter floor: one token.
                    self.assertEqual(big[key], max(c[params][key] for c in cases), name)
                    self.assertEqual(small[key], slot.count_keys[key], name)
                    self.assertEqual(again, big)
                    self.assertEqual({k: v for k, v in small.items() if k != key},
                                     {k: v for k, v in big.items() if k != key}, name)
                    self.assertEqual(steps[1]["live"], slot.live(small, 2))

    def test_preference_order(self):
        slot = ref.get("collective.ar_residual_rmsnorm")
        seqs = regrow_sequences(slot, plan_cases(slot, 3, 2), 3, 2)
        order = [(-s["steps"][0]["params"]["M"], s["steps"][1]["params"]["M"]) for s in seqs]
        self.assertEqual(order, sorted(order))
        self.assertEqual(len(order), len(set(order)))
        for s in seqs:
            self.assertLess(s["steps"][1]["params"]["M"], s["steps"][0]["params"]["M"])

    def test_big_again_sees_fresh_inputs(self):
        for name in COLLECTIVES:
            slot = ref.get(name)
            seq = regrow_sequences(slot, plan_cases(slot, 0, 2), 0, 2)[0]
            steps = [(s["phase"], s["params"]) for s in seq["steps"]]
            calls = sequence_seeds(slot, steps, torch.float32, seq["seed"], 2)
            self.assertEqual([(p, q) for p, _, q in calls], steps)
            self.assertEqual(calls, sequence_seeds(slot, steps, torch.float32, seq["seed"], 2))
            (_, s0, big), _, (_, s2, _) = calls
            self.assertEqual(s0, seq["seed"])
            for r in range(2):
                a = phase_inputs(slot, big, torch.float32, seq["seed"], s0, r, 2)
                b = phase_inputs(slot, big, torch.float32, seq["seed"], s2, r, 2)
                for n in slot.dynamic_inputs:
                    self.assertFalse(torch.equal(a[n], b[n]), f"{name} rank {r} {n}")

    def test_prepared_weights_do_not_depend_on_the_token_count(self):
        # The candidate harness prepares once and reuses the state across
        # the steps when the prepare inputs are bit-identical, as an engine
        # prepares a weight once whatever the batch.
        slot = ref.get("moe.fused_experts_reduce")
        seq = regrow_sequences(slot, plan_cases(slot, 0, 2), 0, 2)[0]
        steps = [(s["phase"], s["params"]) for s in seq["steps"]]
        calls = sequence_seeds(slot, steps, torch.float32, seq["seed"], 2)
        for r in range(2):
            first = tensorio.digests({n: phase_inputs(slot, calls[0][2], torch.float32, seq["seed"], calls[0][1], r, 2)[n]
                                      for n in slot.prepare_args})
            for _, s, p in calls[1:]:
                now = phase_inputs(slot, p, torch.float32, seq["seed"], s, r, 2)
                self.assertEqual(tensorio.digests({n: now[n] for n in slot.prepare_args}), first)

    def test_case_round_trip(self):
        c = ref.Case(index=3, params={"M": 9, "H": 4096}, seed=3, name=REGROW,
                     steps=(("big", {"M": 9, "H": 4096}), ("small", {"M": 1, "H": 4096}), ("big_again", {"M": 9, "H": 4096})))
        self.assertEqual(ref.Case.from_json(c.to_json()), c)
        plain = ref.Case(index=0, params={"M": 2, "H": 8}, seed=0)
        self.assertEqual(plain.to_json(), {"index": 0, "params": {"M": 2, "H": 8}, "seed": 0})


class TensorIOTest(unittest.TestCase):
    def test_round_trip_and_size_check(self):
        import tempfile
        d = tempfile.mkdtemp()
        for dt in (torch.bfloat16, torch.float16, torch.float32, torch.int32):
            t = (torch.arange(12).reshape(3, 4) * 3 - 5).to(dt)
            path = os.path.join(d, "t.bin")
            tensorio.write_tensor(path, t)
            self.assertTrue(torch.equal(tensorio.read_tensor(path, dt, (3, 4)), t))
            with self.assertRaises(ValueError):
                tensorio.read_tensor(path, dt, (4, 4))

    def test_poison(self):
        f = torch.zeros(4)
        tensorio.poison(f)
        self.assertTrue(bool(torch.isnan(f).all()))
        i = torch.zeros(3, dtype=torch.int32)
        tensorio.poison(i, 2)
        self.assertEqual(i.tolist(), [2**31 - 1 - 2] * 3)
        b = torch.zeros(4, dtype=torch.bool)
        tensorio.poison(b, 1)
        self.assertEqual(b.tolist(), [False, True, False, True])

    def test_digest_covers_shape_and_dtype(self):
        t = torch.zeros(6)
        self.assertNotEqual(tensorio.digest(t), tensorio.digest(t.view(2, 3)))
        self.assertNotEqual(tensorio.digest(t), tensorio.digest(torch.zeros(6, dtype=torch.int32)))  # same bytes


if __name__ == "__main__":
    unittest.main()
