"""Command line of the engine substrate.

  python -m cacheon_substrate identity
  python -m cacheon_substrate slots    [--tree DIR] [--bundle DIR]...
  python -m cacheon_substrate generate --model DIR [--tree DIR] [--device cpu|cuda] [--graph] [--tp N] ...
  python -m cacheon_substrate bench    (--model DIR | --random-config JSON) [--tree DIR] --device cuda ...

Results are one JSON document on stdout; progress goes to stderr.
Exit codes: 0 done, 1 an error (message on stderr), 2 bad usage.
"""

import argparse
import hashlib
import json
import sys

from . import identity


def _model_args(p):
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="model directory: config.json + model.safetensors")
    src.add_argument("--random-config", help="config.json path or inline JSON; weights drawn from --seed")
    p.add_argument("--seed", type=int, default=0, help="seed of random weights")
    p.add_argument("--tree", help="materialized engine tree whose runtime manifest names the active contributions")
    p.add_argument("--bundle", action="append", default=[], help="development: activate a contribution bundle directly")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--dtype", choices=("bfloat16", "float16", "float32"), help="override the config's torch_dtype")
    p.add_argument("--max-len", type=int, default=0, help="KV cache length (default: max_position_embeddings)")
    p.add_argument("--tp", type=int, default=1, help="tensor parallelism (one process per rank)")
    p.add_argument("--allreduce-fusion", action="store_true",
                   help="use collective.ar_residual_rmsnorm at every norm after a sublayer (tp > 1)")
    p.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--rendezvous", help=argparse.SUPPRESS)


def _options(a):
    from .runtime import Options
    return Options(model=a.model, random_config=a.random_config, seed=a.seed, tree=a.tree, bundles=a.bundle,
                   device=a.device, dtype=a.dtype, max_len=a.max_len, tp=a.tp, rank=a.rank or 0,
                   rendezvous=a.rendezvous, allreduce_fusion=a.allreduce_fusion)


def _fan_out(argv, a):
    """Re-run this command once per rank and relay rank 0's output."""
    from .runtime import spawn_ranks
    results = spawn_ranks(argv, a.tp)
    for r, res in enumerate(results):
        if res.returncode != 0:
            sys.stderr.write(res.stderr)
            print(f"cacheon_substrate: rank {r} exited with code {res.returncode}", file=sys.stderr)
            return 1
    sys.stderr.write(results[0].stderr)
    sys.stdout.write(results[0].stdout)
    return 0


def _emit(obj):
    json.dump(obj, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


def cmd_identity(a, argv):
    _emit({"substrate": "cacheon-substrate", "content_hash": identity.substrate_digest(),
           "computed_as": "cacheon hash kernels/substrate/cacheon_substrate"})
    return 0


def cmd_slots(a, argv):
    from . import seam
    s = seam.load_tree(a.tree)
    for b in a.bundle:
        seam.add_bundle(s, b)
    _emit({"tree": a.tree, "slots": s.report()})
    return 0


def cmd_generate(a, argv):
    if a.tp > 1 and a.rank is None:
        return _fan_out(argv, a)
    import torch
    from . import distributed
    from .engine import Engine, prompts
    from .runtime import build
    m = build(_options(a))
    eng = Engine(m, a.batch)
    p = prompts(a.batch, a.prompt_len, m.cfg.vocab_size, a.prompt_seed, m.device)
    g = eng.generate(p, a.new, use_graph=a.graph)
    out = {"substrate": identity.substrate_digest(), "tree": a.tree, "device": str(m.device), "dtype": str(m.dtype),
           "tp": m.tp, "batch": a.batch, "prompt_len": a.prompt_len, "new_tokens": a.new, "graph": a.graph,
           "tokens_sha256": hashlib.sha256(g.tokens.numpy().tobytes()).hexdigest(), "tokens": g.tokens.tolist(),
           "prefill_ms": g.prefill_ms, "decode_ms": g.decode_ms, "decode_tok_s": g.decode_tokens_per_s,
           "slots": m.seam.report(), "slot_calls": m.seam.calls}
    if a.logits:
        seq = torch.cat([p, g.tokens[:, :-1].to(p.device)], dim=1)
        out["teacher_forced_logits_sha256"] = hashlib.sha256(
            m.forward_full(seq).cpu().numpy().tobytes()).hexdigest()
    if m.tp > 1:
        distributed.finish()
    if m.rank == 0:
        _emit(out)
    return 0


def cmd_bench(a, argv):
    if a.tp > 1 and a.rank is None:
        return _fan_out(argv, a)
    from . import bench, distributed, seam
    from .model import Model
    from .runtime import build
    m = build(_options(a))
    rows = []
    if a.compare_tree:
        # The stock arm and the tree's arm share the weights and the process.
        arms = {"stock": m, "tree": Model(m.cfg, m.w, seam.load_tree(a.compare_tree), m.device, dtype=m.dtype,
                                          rank=m.rank, tp=m.tp, group=m.group, allreduce_fusion=a.allreduce_fusion,
                                          max_len=a.max_len or None)}
        for b in a.batch:
            print(f"bench: batch {b}, graph {a.graph}, arms stock/tree", file=sys.stderr, flush=True)
            rows.append(bench.compare(arms, b, a.prompt_len, a.new, a.graph, a.rounds, a.iters, a.warmup, a.prompt_seed))
        if a.also_eager:
            for b in a.batch:
                rows.append(bench.compare(arms, b, a.prompt_len, a.new, False, 1, 2, 1, a.prompt_seed))
    else:
        for b in a.batch:
            print(f"bench: batch {b}, graph {a.graph}", file=sys.stderr, flush=True)
            rows.append(bench.run(m, b, a.prompt_len, a.new, a.graph, a.iters, a.warmup, a.prompt_seed))
    if m.tp > 1:
        distributed.finish()
    if m.rank == 0:
        info = {"substrate": identity.substrate_digest(), "tree": a.tree, "compare_tree": a.compare_tree,
                "bundles": a.bundle, "device": str(m.device),
                "dtype": str(m.dtype), "tp": m.tp, "config": m.cfg.to_json(), "params": m.w.nparams(),
                "slots": m.seam.report(), "results": rows, "hbm_peak_bytes_per_s": bench.HBM_PEAK_BYTES_PER_S}
        if m.device.type == "cuda":
            import torch
            info["device_name"] = torch.cuda.get_device_name(m.device)
            info["torch"] = torch.__version__
        _emit(info)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="python -m cacheon_substrate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("identity", help="print the substrate's content hash")
    sp = sub.add_parser("slots", help="which slots run a contribution, stock, or are unavailable")
    sp.add_argument("--tree")
    sp.add_argument("--bundle", action="append", default=[])
    gp = sub.add_parser("generate", help="greedy generation on deterministic random prompts")
    _model_args(gp)
    gp.add_argument("--batch", type=int, default=2)
    gp.add_argument("--prompt-len", type=int, default=8)
    gp.add_argument("--new", type=int, default=8, help="decode steps after the prefill token")
    gp.add_argument("--prompt-seed", type=int, default=1234)
    gp.add_argument("--graph", action="store_true", help="replay one captured CUDA graph per decode step")
    gp.add_argument("--logits", action="store_true", help="also hash teacher-forced logits of the generated sequence")
    bp = sub.add_parser("bench", help="decode throughput and its fraction of the HBM roofline")
    _model_args(bp)
    bp.add_argument("--batch", type=int, nargs="+", default=[1, 32])
    bp.add_argument("--prompt-len", type=int, default=128)
    bp.add_argument("--new", type=int, default=128)
    bp.add_argument("--iters", type=int, default=10)
    bp.add_argument("--warmup", type=int, default=2)
    bp.add_argument("--prompt-seed", type=int, default=1234)
    bp.add_argument("--graph", action="store_true")
    bp.add_argument("--compare-tree", help="measure a stock arm and this tree's arm, interleaved in one process")
    bp.add_argument("--rounds", type=int, default=3, help="interleaved rounds with --compare-tree")
    bp.add_argument("--also-eager", action="store_true", help="with --compare-tree, also one eager round per batch")
    a = ap.parse_args(argv)
    handlers = {"identity": cmd_identity, "slots": cmd_slots, "generate": cmd_generate, "bench": cmd_bench}
    try:
        return handlers[a.cmd](a, argv)
    except Exception as e:  # one line for people; the traceback on request
        if "--debug" in argv or __import__("os").environ.get("CACHEON_DEBUG"):
            raise
        print(f"cacheon_substrate {a.cmd}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
