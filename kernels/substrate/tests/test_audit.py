"""Tests of the audit mode's recorder (cacheon_substrate.audit).

Run (from kernels/substrate): python3 -m unittest discover -s tests
"""

import hashlib
import json
import os
import struct
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from cacheon_substrate import audit, seam as seam_mod  # noqa: E402

SEED = "0123456789abcdef0123456789abcdef"
OUTPUTS = {"norm.rmsnorm": (2,)}


def read_record(path):
    """(header, body) of one record file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def tensor_of(body, span):
    return torch.frombuffer(bytearray(body[span[0]:span[1]]), dtype=torch.float32)


class FromEnvTest(unittest.TestCase):
    def test_no_audit_without_its_directory(self):
        self.assertIsNone(audit.from_env({}))

    def test_refuses_partial_or_malformed_settings(self):
        base = {audit.ENV_DIR: "/nonexistent", audit.ENV_SLOTS: "norm.rmsnorm", audit.ENV_OUTPUTS: "norm.rmsnorm=2"}
        no_outputs = dict(base)
        del no_outputs[audit.ENV_OUTPUTS]
        secret = (SEED, audit.PPM, 1 << 30)
        for env, why in [({audit.ENV_SLOTS: "norm.rmsnorm"}, "without"),
                         (dict(base, **{audit.ENV_SLOTS: ""}), "no slot"), (no_outputs, "outputs to poison"),
                         (dict(base, **{audit.ENV_OUTPUTS: "norm.rmsnorm"}), "malformed"),
                         (dict(base, **{audit.ENV_OUTPUTS: "norm.rmsnorm=x"}), "not an integer"),
                         (dict(base, **{audit.ENV_OUTPUTS: "activation.silu_and_mul=1"}), "no output positions")]:
            with self.assertRaisesRegex(audit.AuditError, why):
                audit.from_env(env, secret)
        with self.assertRaisesRegex(audit.AuditError, "audit secret"):
            audit.from_env(base)

    def test_the_sample_is_never_in_the_environment(self):
        # The environment is the candidate's to read: a seed or rate there
        # would tell a kernel which calls are recorded.
        base = {audit.ENV_DIR: "/nonexistent", audit.ENV_SLOTS: "norm.rmsnorm", audit.ENV_OUTPUTS: "norm.rmsnorm=2"}
        for extra in ({audit.ENV_SEED: SEED}, {audit.ENV_RATE: "1000000"}):
            with self.assertRaisesRegex(audit.AuditError, "in the environment"):
                audit.from_env(dict(base, **extra), (SEED, audit.PPM, 1 << 30))

    def test_reads_the_secret_line(self):
        line = '{"audit_seed": "%s", "audit_rate_ppm": 250000, "audit_budget_bytes": 4096}' % SEED
        self.assertEqual(audit.read_secret(line), (SEED, 250000, 4096))
        for line, why in [(None, "closed"), ("x", "not JSON"), ("[]", "object"),
                          ('{"audit_seed": "%s", "audit_rate_ppm": 0, "audit_budget_bytes": 1}' % SEED, "outside"),
                          ('{"audit_seed": "%s", "audit_rate_ppm": "9", "audit_budget_bytes": 1}' % SEED, "integer"),
                          ('{"audit_seed": "ABC", "audit_rate_ppm": 9, "audit_budget_bytes": 1}', "hex"),
                          ('{"audit_seed": "%s", "audit_rate_ppm": 9}' % SEED, "audit_budget_bytes"),
                          ('{"audit_seed": "%s", "audit_rate_ppm": 9, "audit_budget_bytes": 0}' % SEED, "audit_budget_bytes")]:
            with self.assertRaisesRegex(audit.AuditError, why):
                audit.read_secret(line)


class ScheduleTest(unittest.TestCase):
    def test_every_call_at_full_rate(self):
        self.assertTrue(all(audit.sampled(SEED, "norm.rmsnorm", i, audit.PPM) for i in range(100)))

    def test_rate_is_roughly_honoured_and_seeded(self):
        a = [audit.sampled(SEED, "norm.rmsnorm", i, 250_000) for i in range(4000)]
        b = [audit.sampled("f" * 32, "norm.rmsnorm", i, 250_000) for i in range(4000)]
        self.assertTrue(800 < sum(a) < 1200, sum(a))
        self.assertNotEqual(a, b)


class RecorderTest(unittest.TestCase):
    def test_records_pre_call_inputs_and_outputs(self):
        with tempfile.TemporaryDirectory() as d:
            s = seam_mod.Seam()

            def mutating(x, weight, out, eps):
                out.copy_(x * 2)
                x.zero_()

            s.rows["norm.rmsnorm"] = [seam_mod.Row("norm.rmsnorm", "default", "k.py", mutating, None, (), True, "tree")]
            rec = audit.Recorder(d, audit.PPM, SEED, ["norm.rmsnorm"], OUTPUTS).install(s)
            x, w, out = torch.ones(2, 3), torch.ones(3), torch.empty(2, 3)
            s.call("norm.rmsnorm", {}, x, w, out, 1e-6)
            s.call("activation.silu_and_mul", {}, torch.ones(2, 4), torch.empty(2, 2))  # not expected: not recorded
            rec.close()
            self.assertEqual(sorted(os.listdir(d)), ["index.json", "norm.rmsnorm.0000000.rec"])
            with open(os.path.join(d, "norm.rmsnorm.0000000.rec"), "rb") as f:
                data = f.read()
            (n,) = struct.unpack("<Q", data[:8])
            head = json.loads(data[8:8 + n])
            body = data[8 + n:]
            self.assertEqual((head["slot"], head["call"], head["origin"]), ("norm.rmsnorm", 0, "tree:default"))
            xe = head["args"][0]
            pre = torch.frombuffer(bytearray(body[xe["pre"][0]:xe["pre"][1]]), dtype=torch.float32)
            post = torch.frombuffer(bytearray(body[xe["post"][0]:xe["post"][1]]), dtype=torch.float32)
            self.assertTrue(bool((pre == 1).all()) and bool((post == 0).all()))
            self.assertEqual(head["args"][3], {"kind": "scalar", "value": 1e-6})
            with open(os.path.join(d, "index.json")) as f:
                idx = json.load(f)
            self.assertEqual(idx["calls"], {"norm.rmsnorm": 1})
            self.assertEqual(idx["kept"], {"norm.rmsnorm": [0]})
            self.assertEqual(idx["capacity"], {"norm.rmsnorm": audit.MAX_KEPT})
            self.assertEqual((idx["budget_bytes"], idx["overflow"]), (1 << 30, {}))

    def test_a_prepared_expert_state_is_recorded_as_its_layer(self):
        # The model registers each prepared state with the layer whose
        # experts it came from; the record names that layer (the judge
        # reads its experts from the model) and holds none of the state's
        # bytes, whatever layout the candidate's prepare chose.
        with tempfile.TemporaryDirectory() as d:
            s = seam_mod.Seam()

            def experts(x, ids, weights, prepared, out):
                out.copy_(x)

            s.rows["moe.fused_experts"] = [seam_mod.Row("moe.fused_experts", "default", "k.py", experts, None, (), True, "tree")]
            rec = audit.Recorder(d, audit.PPM, SEED, ["moe.fused_experts"], {"moe.fused_experts": (4,)}).install(s)
            state = (torch.ones(4, 8, 3), torch.ones(4, 3, 4))  # a candidate's transposed layout
            s.prepared_from[id(state)] = (state, 1)
            x, ids, w, out = torch.ones(2, 3), torch.zeros(2, 2, dtype=torch.int32), torch.full((2, 2), 0.5), torch.empty(2, 3)
            s.call("moe.fused_experts", {}, x, ids, w, state, out)
            # A tuple of tensors the model did not register is recorded as one.
            s.call("moe.fused_experts", {}, x, ids, w, (torch.ones(1),), out)
            rec.close()
            head, body = read_record(os.path.join(d, "moe.fused_experts.0000000.rec"))
            self.assertEqual(head["args"][3], {"kind": "expert_weights", "layer": 1})
            sizes = sum(e["post"][1] - e["pre"][0] for e in head["args"] if e["kind"] == "tensor")
            self.assertLess(len(body), 4 * 8 * 3 * 4, "the prepared state's bytes are in the record")
            self.assertGreater(sizes, 0)
            head, _ = read_record(os.path.join(d, "moe.fused_experts.0000001.rec"))
            self.assertEqual(head["args"][3]["kind"], "tuple")

    def test_an_unwritten_output_is_the_poison_not_a_stale_answer(self):
        """The cheat of a stale buffer (integrity class 4): the output
        tensor already holds the right answer (an allocator handed back
        the buffer of an identical earlier call) and the kernel writes
        nothing. The recorder poisons every output before every call, so
        the record shows the output unwritten, and an unsampled call is
        poisoned as well (a kernel cannot tell the two apart)."""
        with tempfile.TemporaryDirectory() as d:
            s = seam_mod.Seam()
            s.rows["norm.rmsnorm"] = [seam_mod.Row("norm.rmsnorm", "default", "k.py", lambda x, w, out, eps: None, None, (), True, "tree")]
            rec = audit.Recorder(d, audit.PPM, SEED, ["norm.rmsnorm"], OUTPUTS).install(s)
            x, w = torch.randn(2, 3), torch.ones(3)
            answer = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            out = answer.clone()  # the stale buffer that holds the answer
            s.call("norm.rmsnorm", {}, x, w, out, 1e-6)
            rec.close()
            head, body = read_record(os.path.join(d, "norm.rmsnorm.0000000.rec"))
            self.assertTrue(bool(torch.isnan(tensor_of(body, head["args"][2]["post"])).all()))
            self.assertTrue(bool((tensor_of(body, head["args"][0]["post"]) == x.reshape(-1)).all()))
        with tempfile.TemporaryDirectory() as d:
            s = seam_mod.Seam()
            s.rows["norm.rmsnorm"] = [seam_mod.Row("norm.rmsnorm", "default", "k.py", lambda x, w, out, eps: None, None, (), True, "tree")]
            rate = 1
            call = next(i for i in range(1000) if not audit.sampled(SEED, "norm.rmsnorm", i, rate))
            audit.Recorder(d, rate, SEED, ["norm.rmsnorm"], OUTPUTS).install(s)
            for _ in range(call + 1):
                out = answer.clone()
                s.call("norm.rmsnorm", {}, x, w, out, 1e-6)
            self.assertTrue(bool(torch.isnan(out).all()), "an unsampled call's output was not poisoned")

    def test_an_output_aliasing_an_input_is_not_poisoned(self):
        with tempfile.TemporaryDirectory() as d:
            s = seam_mod.Seam()
            seen = []
            s.rows["norm.rmsnorm"] = [seam_mod.Row("norm.rmsnorm", "default", "k.py", lambda x, w, out, eps: seen.append(x.clone()),
                                                   None, (), True, "tree")]
            audit.Recorder(d, audit.PPM, SEED, ["norm.rmsnorm"], OUTPUTS).install(s)
            x = torch.ones(2, 3)
            s.call("norm.rmsnorm", {}, x, torch.ones(3), x, 1e-6)
            self.assertTrue(bool((seen[0] == 1).all()))

    def test_refuses_captured_calls(self):
        with tempfile.TemporaryDirectory() as d:
            s = seam_mod.Seam()
            audit.Recorder(d, audit.PPM, SEED, ["norm.rmsnorm"], OUTPUTS).install(s)
            with self.assertRaises(audit.AuditError):
                s.call("norm.rmsnorm", {}, torch.ones(1, 2), torch.ones(2), torch.empty(1, 2), 1e-6, graph=True)


def expected_kept(seed, slot, calls, capacity):
    """The reservoir of docs/reference/audit.md ("The budget"), written
    out again from the text: the first call kept; the m-th later call kept
    while m <= capacity - 1, else in place of position
    SHA-256(domain NUL seed NUL slot NUL call)[:8] mod m when that is below
    capacity - 1."""
    room, res = capacity - 1, []
    for m, c in enumerate(calls[1:], 1):
        if m <= room:
            res.append(c)
            continue
        h = hashlib.sha256(f"cacheon.qualification.audit-reservoir.v1\0{seed}\0{slot}\0{c}".encode()).digest()
        x = int.from_bytes(h[:8], "big") % m
        if x < room:
            res[x] = c
    return sorted(calls[:1] + res)


def honest(x, w, out, eps):
    out.copy_(x * w)


def run_calls(d, n, budget, seed=SEED, rate=audit.PPM):
    """A recorder over n honest norm.rmsnorm calls, closed; its index."""
    s = seam_mod.Seam()
    s.rows["norm.rmsnorm"] = [seam_mod.Row("norm.rmsnorm", "default", "k.py", honest, None, (), True, "tree")]
    rec = audit.Recorder(d, rate, seed, ["norm.rmsnorm"], OUTPUTS, budget=budget).install(s)
    x, w = torch.ones(4, 8), torch.ones(8)
    for _ in range(n):
        s.call("norm.rmsnorm", {}, x, w, torch.empty(4, 8), 1e-6)
    rec.close()
    with open(os.path.join(d, "index.json")) as f:
        return json.load(f)


class BudgetTest(unittest.TestCase):
    """The budget holds a uniform sample of the calls, not the first ones."""

    def record_size(self):
        with tempfile.TemporaryDirectory() as d:
            run_calls(d, 1, 1 << 30)
            return os.path.getsize(os.path.join(d, "norm.rmsnorm.0000000.rec"))

    def test_a_small_budget_keeps_the_reservoir(self):
        size = self.record_size()
        with tempfile.TemporaryDirectory() as d:
            idx = run_calls(d, 200, 10 * (size + audit.HEADER_SLACK) + size // 2)
            self.assertEqual(idx["capacity"], {"norm.rmsnorm": 10})
            kept = idx["kept"]["norm.rmsnorm"]
            self.assertEqual(kept, expected_kept(SEED, "norm.rmsnorm", list(range(200)), 10))
            self.assertEqual(len(kept), 10)
            self.assertEqual(kept[0], 0)
            self.assertGreater(kept[-1], 100, "the sample is the first calls, not the whole run")
            self.assertEqual(idx["overflow"], {})
            self.assertEqual(sorted(os.listdir(d)), sorted(["index.json"] + [audit.record_name("norm.rmsnorm", c) for c in kept]))
            for c in kept:
                head, _ = read_record(os.path.join(d, audit.record_name("norm.rmsnorm", c)))
                self.assertEqual(head["call"], c)

    def test_the_sample_follows_the_rate_then_the_reservoir(self):
        size = self.record_size()
        with tempfile.TemporaryDirectory() as d:
            idx = run_calls(d, 300, 8 * (size + audit.HEADER_SLACK), rate=500_000)
            calls = [i for i in range(300) if audit.sampled(SEED, "norm.rmsnorm", i, 500_000)]
            self.assertEqual(idx["kept"]["norm.rmsnorm"], expected_kept(SEED, "norm.rmsnorm", calls, 8))

    def test_the_sample_is_uniform_over_seeds(self):
        # Each call after the first is kept with probability
        # (capacity - 1) / (calls - 1) whatever its place: over 64 seeds,
        # the calls of the first and of the second half are kept about
        # equally often (expected 195 and 189 of 384; a sample of the first
        # calls would give 384 and 0).
        size = self.record_size()
        halves = [0, 0]
        with tempfile.TemporaryDirectory() as root:
            for k in range(64):
                d = os.path.join(root, str(k))
                idx = run_calls(d, 60, 7 * (size + audit.HEADER_SLACK), seed=hashlib.sha256(bytes([k])).hexdigest()[:32])
                for c in idx["kept"]["norm.rmsnorm"][1:]:
                    halves[c > 30] += 1
        self.assertEqual(sum(halves), 64 * 6)
        self.assertTrue(all(130 < h < 260 for h in halves), halves)

    def test_a_record_over_the_share_stops_the_slot(self):
        size = self.record_size()
        with tempfile.TemporaryDirectory() as d:
            idx = run_calls(d, 5, size - 1)
            self.assertEqual(idx["overflow"], {"norm.rmsnorm": {"call": 0, "record_bytes": size, "kept_bytes": size, "limit": size - 1}})
            self.assertEqual((idx["capacity"], idx["kept"], idx["calls"]),
                             ({"norm.rmsnorm": 0}, {"norm.rmsnorm": []}, {"norm.rmsnorm": 5}))
            self.assertEqual(os.listdir(d), ["index.json"])

    def test_a_later_larger_call_stops_the_slot_where_it_was(self):
        # Capacity is counted from the first record; a later call whose
        # record is larger can bring the kept records over the share. The
        # slot stops recording there and keeps what it had: a sample of
        # the calls before, which the judge can still recompute.
        size = self.record_size()
        with tempfile.TemporaryDirectory() as d:
            s = seam_mod.Seam()
            s.rows["norm.rmsnorm"] = [seam_mod.Row("norm.rmsnorm", "default", "k.py", honest, None, (), True, "tree")]
            budget = 4 * (size + audit.HEADER_SLACK)
            rec = audit.Recorder(d, audit.PPM, SEED, ["norm.rmsnorm"], OUTPUTS, budget=budget).install(s)
            for rows in (4, 4, 64, 4):
                s.call("norm.rmsnorm", {}, torch.ones(rows, 8), torch.ones(8), torch.empty(rows, 8), 1e-6)
            rec.close()
            with open(os.path.join(d, "index.json")) as f:
                idx = json.load(f)
            ov = idx["overflow"]["norm.rmsnorm"]
            self.assertEqual((ov["call"], ov["limit"]), (2, budget))
            self.assertGreater(ov["kept_bytes"], budget)
            self.assertEqual((idx["kept"], idx["calls"]), ({"norm.rmsnorm": [0, 1]}, {"norm.rmsnorm": 4}))
            self.assertEqual(sorted(os.listdir(d)), ["index.json", "norm.rmsnorm.0000000.rec", "norm.rmsnorm.0000001.rec"])


if __name__ == "__main__":
    unittest.main()
