"""Tests of the audit mode's recorder (cacheon_substrate.audit).

Run (from kernels/substrate): python3 -m unittest discover -s tests
"""

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
            self.assertEqual(idx["recorded"], {"norm.rmsnorm": 1})

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


if __name__ == "__main__":
    unittest.main()
