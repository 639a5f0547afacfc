"""Tests of reading files a candidate wrote: links, FIFOs and oversized
files are refused unread, without blocking.

Run (from kernels/reference): python3 -m unittest discover -s tests
"""

import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from cacheon_reference import tensorio  # noqa: E402


class ReadRegularTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.good = os.path.join(self.dir, "out.bin")
        tensorio.write_tensor(self.good, torch.arange(4, dtype=torch.float32))

    def test_reads_a_written_tensor(self):
        t = tensorio.read_tensor(self.good, torch.float32, (4,))
        self.assertTrue(torch.equal(t, torch.arange(4, dtype=torch.float32)))

    def test_refuses_links_fifos_and_oversized_files(self):
        link = os.path.join(self.dir, "link.bin")
        os.symlink(self.good, link)
        fifo = os.path.join(self.dir, "fifo.bin")
        os.mkfifo(fifo)
        for path in (link, fifo):
            with self.assertRaises((OSError, ValueError)):
                tensorio.read_tensor(path, torch.float32, (4,))
        with self.assertRaises(ValueError):
            tensorio.read_regular(self.good, 8)
        with self.assertRaises(ValueError):
            tensorio.read_tensor(self.good, torch.float32, (2,))


if __name__ == "__main__":
    unittest.main()
