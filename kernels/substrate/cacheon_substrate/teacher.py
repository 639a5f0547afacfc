"""A teacher session: the pristine reference engine scoring token
trajectories it did not generate (teacher forcing), over two pipes it does
not share with anything else (requests on fd 4, frames on fd 5; see
docs/reference/teacher-session.md).

  python -m cacheon_substrate.teacher --engine-tree TREE --model MODEL [--device cuda]

The first frame is {"ready": true, "protocol": ..., "substrate": ..., "device": ..., "slots": {...}}
once the model is loaded. Each request scores one trajectory:

  {"op": "score", "id": N, "prompt": [ids], "tokens": [ids]}
      -> {"id": N, "nll": [f, ...], "argmax": [ids]}

The engine runs prompt + tokens[:-1] in one causal pass and, at the position
before each trajectory token t_i, returns the negative log-likelihood of t_i
under its fp32 log-softmax and its own argmax there: one of each per token.
A request that fails is answered {"id": N, "error": "..."}; the end of input
ends the session with exit status 0. Nothing is generated and nothing is
timed: the reference only judges.
"""

import argparse
import json
import math
import os
import sys

import torch

PROTOCOL = "cacheon-teacher-v1"
REQUEST_FD, FRAME_FD = 4, 5
MAX_REQUEST_BYTES = 64 << 20


def _ids(name, v, vocab):
    if not isinstance(v, list) or not v or not all(type(t) is int for t in v):
        raise ValueError(f"{name} must be a non-empty list of token ids")
    if min(v) < 0 or max(v) >= vocab:
        raise ValueError(f"{name}: token ids must lie in [0, {vocab})")
    return v


def score(m, prompt, tokens):
    """(nll, argmax) of each trajectory token under teacher forcing."""
    prompt = _ids("prompt", prompt, m.cfg.vocab_size)
    tokens = _ids("tokens", tokens, m.cfg.vocab_size)
    seq = prompt + tokens[:-1]
    if len(seq) > m.max_len:
        raise ValueError(f"{len(seq)} tokens exceed the cache of {m.max_len}")
    with torch.no_grad():
        logits = m.forward_full(torch.tensor([seq], dtype=torch.long, device=m.device))[0]
        at = logits[len(prompt) - 1:].to(torch.float64)
        logp = torch.log_softmax(at, dim=-1)
        target = torch.tensor(tokens, dtype=torch.long, device=logp.device)
        nll = (-logp.gather(1, target.view(-1, 1)).view(-1)).cpu().tolist()
        argmax = at.argmax(-1).cpu().tolist()
    for x in nll:
        if not math.isfinite(x):
            raise ValueError("the reference produced a non-finite log-likelihood")
    return nll, argmax


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cacheon_substrate.teacher", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine-tree", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
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
    from .session import _Lines

    m = build(Options(model=a.model, tree=a.engine_tree, device=device, max_len=a.max_len))
    send({"ready": True, "protocol": PROTOCOL, "substrate": substrate_digest(), "device": str(m.device),
          "slots": {k: v["status"] for k, v in m.seam.report().items()}})
    reader = _Lines(requests)
    while True:
        line = reader.next()
        if line is None:
            return 0
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            if req.get("op") != "score":
                raise ValueError(f"unknown op {req.get('op')!r}")
            nll, argmax = score(m, req.get("prompt"), req.get("tokens"))
            send({"id": rid, "nll": nll, "argmax": argmax})
        except Exception as e:  # a bad request is answered, never fatal
            send({"id": rid, "error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    sys.exit(main())
