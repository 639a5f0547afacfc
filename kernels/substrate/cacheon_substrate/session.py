"""An engine session: one engine process the qualification controller
talks to while it runs, over two pipes it does not share with anything
else (requests on fd 4, frames on fd 5; see docs/reference/engine-session.md).

  python -m cacheon_substrate.session --engine-tree TREE --model MODEL [--device cuda] [--graph]

The first frame is {"ready": true, "protocol": ..., "substrate": ..., "device": ..., "slots": {...}}
once the model is loaded. A batch has two phases, each answered and timed on its own, because
only the second is graph-replayed work whose speed a window may score (the eager prefill's speed
is a property of the process, not of the kernels):

  {"op": "batch", "id": N, "prompts": [[ids], ...], "max_new_tokens": K}
      -> {"id": N, "phase": "prefill", "seconds": S}     (graph capture on a first batch, prefill)
  {"op": "decode", "id": N}
      -> {"id": N, "tokens": [[ids], ...], "seconds": S, "calls": {slot: {origin: n}}}
                                                           (K-1 decode steps; K tokens per prompt)
  {"op": "swap", "id": N, "tree": PATH}
      -> {"id": N, "swapped": PATH, "slots": {...}, "seconds": S}

A swap (a resident engine's hot swap) binds another engine tree's seam: one of the trees named
with --swap-tree at start, never another path. Every kernel module of the old tree is dropped,
prepared weights are forgotten and CUDA graphs are captured again by the next batch.

K is at least 2. The seconds are this process's clock around the phase, device-synchronized. The
controller times every phase on its own clock too and refuses frames whose seconds disagree with
it. An audit session (the CACHEON_SLOT_AUDIT_* variables, docs/reference/audit.md) runs eagerly
and records its expected slots' calls; a timed session is never given them. A request that fails is answered {"id": N, "error": "..."}; the end of input ends the session
with exit status 0.
"""

import argparse
import json
import os
import sys
import time

import torch

PROTOCOL = "cacheon-engine-session-v3"
REQUEST_FD, FRAME_FD = 4, 5
MAX_REQUEST_BYTES = 64 << 20


def sync(m):
    if m.device.type == "cuda":
        torch.cuda.synchronize()


def prefill(m, engines, req, graph):
    """The first phase of a batch request; returns (engine, k, seconds)."""
    from .engine import Engine

    t0 = time.perf_counter()
    prompts = req["prompts"]
    k = int(req["max_new_tokens"])
    if k < 1:
        raise ValueError("max_new_tokens must be at least 1")
    if not prompts or len({len(p) for p in prompts}) != 1:
        raise ValueError("a batch needs prompts of one, non-zero length")
    t = torch.tensor(prompts, dtype=torch.long, device=m.device)
    if int(t.min()) < 0 or int(t.max()) >= m.cfg.vocab_size:
        raise ValueError(f"token ids must lie in [0, {m.cfg.vocab_size})")
    eng = engines.get(t.shape[0])
    if eng is None:
        eng = engines[t.shape[0]] = Engine(m, t.shape[0])
    eng.begin(t, k - 1, use_graph=graph)
    sync(m)
    return eng, k, time.perf_counter() - t0


def decode(m, eng, k, graph):
    """The second phase: returns (tokens, seconds, calls by slot and origin)."""
    t0 = time.perf_counter()
    tokens, calls = eng.decode_counted(k - 1, use_graph=graph)
    tokens = tokens.tolist()
    sync(m)
    return tokens, time.perf_counter() - t0, calls


def generate(m, engines, req, graph):
    """Both phases at once (for serve, which times nothing): the tokens."""
    eng, k, _ = prefill(m, engines, req, graph and m.device.type == "cuda")
    return decode(m, eng, k, graph and m.device.type == "cuda")[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cacheon_substrate.session", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine-tree", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--max-len", type=int, default=0)
    ap.add_argument("--swap-tree", action="append", default=[], help="a tree a swap may bind (repeatable)")
    ap.add_argument("--native-artifact", help="sealed prebuild artifact directory of the tree's cuda_sources rows")
    a = ap.parse_args(argv)
    device = a.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    requests = os.fdopen(REQUEST_FD, "rb", buffering=0)
    frames = os.fdopen(FRAME_FD, "w", buffering=1, encoding="utf-8")

    def send(obj):
        frames.write(json.dumps(obj, separators=(",", ":")) + "\n")
        frames.flush()

    reader = _Lines(requests)
    # Audit mode (docs/reference/audit.md): the sample's seed and rate are
    # the first request line, read here before the engine tree (candidate
    # code) is imported, so they are in no variable of the environment.
    from . import audit
    secret = audit.read_secret(reader.next()) if audit.audited(os.environ) else None

    from .identity import substrate_digest
    from .runtime import Options, build

    m = build(Options(model=a.model, tree=a.engine_tree, native=a.native_artifact, device=device, max_len=a.max_len))
    # Audit mode (docs/reference/audit.md): only the audit session gets
    # the variables; it runs eagerly and never swaps, so every slot call
    # goes through the recorder on the seam it was installed on.
    recorder = audit.from_env(os.environ, secret)
    secret = None
    if recorder is not None:
        if a.graph or a.swap_tree:
            raise audit.AuditError("an audit session runs eagerly on one tree: --graph and --swap-tree are refused")
        recorder.install(m.seam)
    send({"ready": True, "protocol": PROTOCOL, "substrate": substrate_digest(), "device": str(m.device),
          "slots": {k: v["status"] for k, v in m.seam.report().items()}})
    engines = {}
    graph = a.graph and m.device.type == "cuda"
    pending = None  # (id, engine, k) of a prefilled batch awaiting its decode
    while True:
        line = reader.next()
        if line is None:
            if recorder is not None:
                recorder.close()
            return 0
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            op = req.get("op")
            if op == "batch":
                pending = None
                if int(req.get("max_new_tokens", 0)) < 2:
                    raise ValueError("max_new_tokens must be at least 2 (the prefill's token and one decode step)")
                eng, k, seconds = prefill(m, engines, req, graph)
                pending = (rid, eng, k)
                send({"id": rid, "phase": "prefill", "seconds": seconds})
            elif op == "swap":
                pending = None
                t0 = time.perf_counter()
                tree = req.get("tree")
                if tree not in a.swap_tree:
                    raise ValueError(f"swap to {tree!r}, which is not a tree named at start")
                from . import seam as seam_mod
                # A resident engine serves trees without native libraries
                # only: hot-swappable candidates have no cuda_sources, and
                # the controller reads any tree that has them under v8.
                m.swap_seam(seam_mod.swap(m.seam, tree))
                engines.clear()
                sync(m)
                send({"id": rid, "swapped": tree, "slots": {k: v["status"] for k, v in m.seam.report().items()},
                      "seconds": time.perf_counter() - t0})
            elif op == "decode":
                if pending is None or pending[0] != rid:
                    raise ValueError(f"decode of batch {rid!r}, which is not the prefilled one")
                _, eng, k = pending
                pending = None
                tokens, seconds, calls = decode(m, eng, k, graph)
                send({"id": rid, "tokens": tokens, "seconds": seconds, "calls": calls})
            else:
                raise ValueError(f"unknown op {op!r}")
        except Exception as e:  # a bad request is answered, never fatal
            pending = None
            send({"id": rid, "error": f"{type(e).__name__}: {e}"})


class _Lines:
    """Lines of a pipe, each at most MAX_REQUEST_BYTES."""

    def __init__(self, f):
        self.f, self.buf = f, b""

    def next(self):
        while b"\n" not in self.buf:
            chunk = self.f.read(1 << 16)
            if not chunk:
                return None
            self.buf += chunk
            if len(self.buf) > MAX_REQUEST_BYTES:
                raise ValueError("request line too long")
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8")


if __name__ == "__main__":
    sys.exit(main())
