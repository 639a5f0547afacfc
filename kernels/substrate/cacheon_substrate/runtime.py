"""Assembling an engine: model weights, the seam of an engine tree, devices,
tensor-parallel ranks. Shared by the command line, the benchmark and serve."""

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import List, Optional

import torch

from . import distributed, seam as seam_mod, weights as weights_mod
from .config import DTYPES, ModelConfig
from .model import Model


@dataclass
class Options:
    model: Optional[str] = None  # model directory (config.json + model.safetensors)
    random_config: Optional[str] = None  # config.json path or inline JSON, with random weights
    seed: int = 0  # random weights seed
    tree: Optional[str] = None  # materialized engine tree
    native: Optional[str] = None  # sealed prebuild artifact of the tree's cuda_sources rows
    bundles: List[str] = field(default_factory=list)  # development: contribution bundles
    device: str = "cpu"
    dtype: Optional[str] = None  # override the config's torch_dtype
    max_len: int = 0  # cache length; 0 = max_position_embeddings
    tp: int = 1
    rank: int = 0
    rendezvous: Optional[str] = None
    allreduce_fusion: bool = False


def load_config(o: Options) -> ModelConfig:
    if o.model:
        return ModelConfig.load(o.model)
    if not o.random_config:
        raise ValueError("a model directory or a random config is required")
    text = o.random_config
    if not text.lstrip().startswith("{"):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    return ModelConfig.from_json(json.loads(text), "random config")


def build(o: Options) -> Model:
    """The model of rank o.rank (process group initialized when tp > 1)."""
    cfg = load_config(o)
    if o.dtype:
        cfg = ModelConfig(**dict(cfg.to_json(), torch_dtype=o.dtype))
    cfg.check_tp(o.tp)
    group = None
    if o.tp > 1:
        if not o.rendezvous:
            raise ValueError("tensor parallelism needs a rendezvous file")
        group = distributed.init(o.rank, o.tp, o.rendezvous, o.device)
    device = torch.device("cuda", o.rank if o.tp > 1 else torch.cuda.current_device()) if o.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if o.model:
        hf = weights_mod.load_hf(o.model, cfg, device="cpu")
        hf = {k: v.to(cfg.dtype) for k, v in hf.items()}
    else:
        hf = weights_mod.random_hf(cfg, o.seed, device=device)
    w = weights_mod.build(hf, cfg, o.rank, o.tp, device=device)
    del hf
    seam = seam_mod.load_tree(o.tree, o.native)
    for b in o.bundles:
        seam_mod.add_bundle(seam, b, o.native)
    return Model(cfg, w, seam, device, rank=o.rank, tp=o.tp, group=group,
                 allreduce_fusion=o.allreduce_fusion, max_len=o.max_len or None)


def spawn_ranks(argv: List[str], tp: int, timeout: Optional[float] = None) -> List[subprocess.CompletedProcess]:
    """Run `python -m cacheon_substrate ARGV --rank r --rendezvous F` for every
    rank and wait for all of them; rank 0's stdout is the result."""
    with tempfile.TemporaryDirectory(prefix="cacheon-tp-") as d:
        store = os.path.join(d, "store")
        env = dict(os.environ)
        pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        procs = [subprocess.Popen([sys.executable, "-m", "cacheon_substrate"] + argv +
                                  ["--rank", str(r), "--rendezvous", store],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for r in range(tp)]
        results = []
        try:
            for p in procs:
                out, err = p.communicate(timeout=timeout)
                results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        return results


def dtype_names():
    return sorted(DTYPES)
