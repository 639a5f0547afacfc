"""An engine session: one engine process the qualification controller
talks to while it runs, over two pipes it does not share with anything
else (requests on fd 4, frames on fd 5; see docs/reference/engine-session.md).

  python -m cacheon_substrate.session --engine-tree TREE --model MODEL [--device cuda] [--graph]

The first frame is {"ready": true, "protocol": ..., "substrate": ..., "device": ..., "slots": {...}}
once the model is loaded. Each request {"op": "batch", "id": N, "prompts": [[ids], ...],
"max_new_tokens": K} is answered by {"id": N, "tokens": [[ids], ...], "seconds": S}: K tokens per
prompt (the prefill's, then K-1 decode steps) and the seconds the generation took on this
process's clock (the whole request, device-synchronized). The controller times every request on its own clock too and
refuses frames whose seconds disagree with it. A request that fails is answered {"id": N, "error":
"..."}; the end of input ends the session with exit status 0.
"""

import argparse
import json
import os
import sys
import time

import torch

PROTOCOL = "cacheon-engine-session-v1"
REQUEST_FD, FRAME_FD = 4, 5
MAX_REQUEST_BYTES = 64 << 20


def batch(m, engines, req, graph):
    """Runs one batch request; returns (tokens, seconds), the seconds of the
    whole request on this process's clock (a first batch's CUDA graph
    capture and Triton JIT included), device-synchronized."""
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
    g = eng.generate(t, k - 1, use_graph=graph and m.device.type == "cuda")
    tokens = g.tokens.tolist()
    if m.device.type == "cuda":
        torch.cuda.synchronize()
    return tokens, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cacheon_substrate.session", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine-tree", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--max-len", type=int, default=0)
    a = ap.parse_args(argv)
    device = a.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    requests = os.fdopen(REQUEST_FD, "rb", buffering=0)
    frames = os.fdopen(FRAME_FD, "w", buffering=1, encoding="utf-8")

    def send(obj):
        frames.write(json.dumps(obj, separators=(",", ":")) + "\n")
        frames.flush()

    from .identity import substrate_digest
    from .runtime import Options, build

    m = build(Options(model=a.model, tree=a.engine_tree, device=device, max_len=a.max_len))
    send({"ready": True, "protocol": PROTOCOL, "substrate": substrate_digest(), "device": str(m.device),
          "slots": {k: v["status"] for k, v in m.seam.report().items()}})
    engines = {}
    reader = _Lines(requests)
    while True:
        line = reader.next()
        if line is None:
            return 0
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            if req.get("op") != "batch":
                raise ValueError(f"unknown op {req.get('op')!r}")
            tokens, seconds = batch(m, engines, req, a.graph)
            send({"id": rid, "tokens": tokens, "seconds": seconds})
        except Exception as e:  # a bad request is answered, never fatal
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
