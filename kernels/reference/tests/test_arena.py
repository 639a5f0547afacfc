"""Tests of the arena layout: the candidate harness and the reference
compute it apart, from the same inputs and output contract, and must agree
on where every byte of a call lies.

Run (from kernels/reference): python3 -m unittest discover -s tests
"""

import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from cacheon_reference import arena  # noqa: E402
from cacheon_reference.spec import OutputSpec  # noqa: E402


def call():
    inputs = {"x": torch.arange(12, dtype=torch.float32).reshape(3, 4), "eps": 1e-6,
              "w": torch.arange(5, dtype=torch.bfloat16), "idx": torch.arange(6, dtype=torch.int32).reshape(2, 3).t()}
    specs = {"out": OutputSpec((3, 4), torch.float32, row_padding=2), "flag": OutputSpec((3,), torch.bool)}
    return inputs, specs


class LayoutTest(unittest.TestCase):
    def test_regions_are_aligned_disjoint_and_in_argument_order(self):
        inputs, specs = call()
        regions, total = arena.layout(inputs, specs)
        self.assertEqual([(r.kind, r.name) for r in regions],
                         [("input", "x"), ("input", "w"), ("input", "idx"), ("output", "out"), ("output", "flag")])
        end = 0
        for r in regions:
            self.assertEqual(r.offset % arena.ALIGN, 0)
            self.assertGreaterEqual(r.offset, end)
            end = r.offset + r.nbytes
        self.assertGreaterEqual(total, end)
        # The padded output's backing holds every row with its padding.
        out = next(r for r in regions if r.name == "out")
        self.assertEqual(out.span, 3 * (4 + 2))

    def test_what_one_side_writes_the_other_reads(self):
        # The harness writes through views of a mapped file; the reference
        # reads a copy of the file through its own layout.
        inputs, specs = call()
        regions, total = arena.layout(inputs, specs)
        path = os.path.join(tempfile.mkdtemp(), "c0.arena")
        with open(path, "wb") as f:
            f.truncate(total)
        buf = torch.from_file(path, shared=True, size=total, dtype=torch.uint8)
        views = {(r.kind, r.name): arena.view(buf, r) for r in regions}
        for name, t in inputs.items():
            if isinstance(t, torch.Tensor):
                views[("input", name)].copy_(t)
                self.assertEqual(views[("input", name)].stride(), t.stride())
        out = arena.output_view(views[("output", "out")], specs["out"])
        out.copy_(torch.full((3, 4), 7.0))
        del buf, views, out
        with open(path, "rb") as f:
            data = bytearray(f.read())
        copy = torch.frombuffer(data, dtype=torch.uint8)
        again, _ = arena.layout(inputs, specs)
        read = {(r.kind, r.name): arena.view(copy, r) for r in again}
        for name, t in inputs.items():
            if isinstance(t, torch.Tensor):
                self.assertTrue(torch.equal(read[("input", name)], t), name)
        backing = read[("output", "out")]
        self.assertTrue(torch.equal(arena.output_view(backing, specs["out"]), torch.full((3, 4), 7.0)))
        mask = specs["out"].padding_mask("cpu")
        self.assertTrue(bool((backing[mask] == 0).all()), "the padding was written")


if __name__ == "__main__":
    unittest.main()
