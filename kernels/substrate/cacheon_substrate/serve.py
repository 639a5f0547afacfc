"""Serve greedy generation over stdin/stdout, one JSON object per line.

  python -m cacheon_substrate.serve --engine-tree TREE --model MODEL [--device cuda] [--graph]

Each request line is {"id": ..., "prompts": [[token ids], ...], "max_new_tokens": N}
(all prompts of a request have one length; "prompt": [ids] is a batch of
one). Each response line is {"id": ..., "tokens": [[ids], ...]} with the
prefill token followed by N decode tokens per prompt, or {"id": ..., "error":
"..."}. An engine (and its CUDA graph) is kept per batch size. The first
line written is {"ready": true, ...} once the model is loaded.
"""

import argparse
import json
import sys

import torch


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cacheon_substrate.serve", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine-tree", required=True, help="materialized engine tree (its manifest.toml selects the kernels)")
    ap.add_argument("--model", required=True, help="sealed model directory")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--graph", action="store_true", help="replay a captured CUDA graph per decode step")
    ap.add_argument("--max-len", type=int, default=0)
    ap.add_argument("--native-artifact", help="sealed prebuild artifact directory of the tree's cuda_sources rows")
    a = ap.parse_args(argv)
    device = a.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"

    from .identity import substrate_digest
    from .runtime import Options, build
    from .session import generate

    m = build(Options(model=a.model, tree=a.engine_tree, native=a.native_artifact, device=device, max_len=a.max_len))
    engines = {}
    out = sys.stdout
    out.write(json.dumps({"ready": True, "substrate": substrate_digest(), "device": str(m.device),
                          "slots": {k: v["status"] for k, v in m.seam.report().items()}}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            prompts = req.get("prompts") or [req["prompt"]]
            n = int(req.get("max_new_tokens", 16))
            tokens = generate(m, engines, {"prompts": prompts, "max_new_tokens": n + 1}, a.graph)
            resp = {"id": rid, "tokens": tokens}
        except Exception as e:  # a bad request never stops the server
            resp = {"id": rid, "error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(resp) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
