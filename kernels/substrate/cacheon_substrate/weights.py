"""Model weights: loading Hugging Face tensor names from safetensors, fusing
and sharding them for tensor parallelism, or drawing random ones."""

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch

from . import safetensors
from .config import ModelConfig


@dataclass
class Layer:
    input_norm: torch.Tensor
    post_norm: torch.Tensor
    wqkv: torch.Tensor  # (local q + k + v rows, H)
    wo: torch.Tensor  # (H, local q heads * D)
    w_gate_up: Optional[torch.Tensor] = None  # dense: (2 * local I, H), gate rows then up rows
    w_down: Optional[torch.Tensor] = None  # dense: (H, local I)
    router: Optional[torch.Tensor] = None  # MoE: (E, H), replicated
    w13: Optional[torch.Tensor] = None  # MoE: (E, 2 * local I, H), w1 (gate) over w3 (up)
    w2: Optional[torch.Tensor] = None  # MoE: (E, H, local I)
    prepared: Dict[str, object] = field(default_factory=dict)  # per seam choice
    index: int = -1  # the layer's position in the model (the audit names a layer's expert weights by it)


@dataclass
class Weights:
    embed: torch.Tensor
    final_norm: torch.Tensor
    lm_head: torch.Tensor
    layers: List[Layer]

    def nbytes_per_decode_step(self) -> int:
        """Bytes a decode step must read: every layer matrix and norm, the
        final norm and the LM head (embedding rows read are negligible)."""
        total = self.final_norm.numel() * self.final_norm.element_size()
        total += self.lm_head.numel() * self.lm_head.element_size()
        for l in self.layers:
            for t in (l.input_norm, l.post_norm, l.wqkv, l.wo, l.w_gate_up, l.w_down, l.router, l.w13, l.w2):
                if t is not None:
                    total += t.numel() * t.element_size()
        return total

    def nparams(self) -> int:
        n = self.embed.numel() + self.final_norm.numel() + self.lm_head.numel()
        for l in self.layers:
            for t in (l.input_norm, l.post_norm, l.wqkv, l.wo, l.w_gate_up, l.w_down, l.router, l.w13, l.w2):
                if t is not None:
                    n += t.numel()
        return n


def hf_names(cfg: ModelConfig) -> List[str]:
    names = ["model.embed_tokens.weight", "model.norm.weight"]
    if not cfg.tie_word_embeddings:
        names.append("lm_head.weight")
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        names += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
        names += [p + f"self_attn.{x}_proj.weight" for x in ("q", "k", "v", "o")]
        if cfg.is_moe:
            names.append(p + "block_sparse_moe.gate.weight")
            for e in range(cfg.num_local_experts):
                names += [p + f"block_sparse_moe.experts.{e}.{w}.weight" for w in ("w1", "w2", "w3")]
        else:
            names += [p + f"mlp.{x}_proj.weight" for x in ("gate", "up", "down")]
    return names


def hf_shapes(cfg: ModelConfig) -> Dict[str, tuple]:
    H, I, V, D = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size, cfg.head_dim
    q, kv = cfg.num_attention_heads * D, cfg.num_key_value_heads * D
    shapes = {}
    for n in hf_names(cfg):
        if n.endswith(("layernorm.weight", "model.norm.weight")):
            shapes[n] = (H,)
        elif n in ("model.embed_tokens.weight", "lm_head.weight"):
            shapes[n] = (V, H)
        elif n.endswith("q_proj.weight"):
            shapes[n] = (q, H)
        elif n.endswith(("k_proj.weight", "v_proj.weight")):
            shapes[n] = (kv, H)
        elif n.endswith("o_proj.weight"):
            shapes[n] = (H, q)
        elif n.endswith(("gate_proj.weight", "up_proj.weight", ".w1.weight", ".w3.weight")):
            shapes[n] = (I, H)
        elif n.endswith(("down_proj.weight", ".w2.weight")):
            shapes[n] = (H, I)
        elif n.endswith("block_sparse_moe.gate.weight"):
            shapes[n] = (cfg.num_local_experts, H)
        else:
            raise AssertionError(n)
    return shapes


def load_hf(model_dir: str, cfg: ModelConfig, device="cpu") -> Dict[str, torch.Tensor]:
    """Every tensor the config needs from model_dir/model.safetensors, with
    its shape checked against the config."""
    path = os.path.join(model_dir, "model.safetensors")
    shapes = hf_shapes(cfg)
    header, _, _ = safetensors.read_header(path)
    missing = [n for n in shapes if n not in header]
    if missing:
        raise safetensors.SafetensorsError(f"{path}: missing {len(missing)} tensors, first {missing[0]!r}")
    for n, s in shapes.items():
        if tuple(header[n]["shape"]) != s:
            raise safetensors.SafetensorsError(f"{path}: {n} has shape {header[n]['shape']}, config says {list(s)}")
    return safetensors.load(path, list(shapes), device=device)


def random_hf(cfg: ModelConfig, seed: int, device="cpu", std: float = 0.02) -> Dict[str, torch.Tensor]:
    """Random weights by Hugging Face name: one generator on device, fp32 draws
    in name order cast to the model dtype; matrices N(0, std), norm weights
    1 + N(0, std). Small embeddings keep the model un-peaked, so kernel bugs
    stay visible in the logits."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    out = {}
    for n, s in hf_shapes(cfg).items():
        t = torch.randn(*s, generator=g, device=device, dtype=torch.float32) * std
        if len(s) == 1:
            t += 1.0
        out[n] = t.to(cfg.dtype)
    return out


def _rows(t: torch.Tensor, rank: int, tp: int) -> torch.Tensor:
    n = t.shape[0] // tp
    return t[rank * n:(rank + 1) * n]


def _cols(t: torch.Tensor, rank: int, tp: int) -> torch.Tensor:
    n = t.shape[-1] // tp
    return t[..., rank * n:(rank + 1) * n]


def expert_names(cfg: ModelConfig, layer: int) -> List[str]:
    """The Hugging Face names of one layer's expert matrices."""
    pre = f"model.layers.{layer}.block_sparse_moe.experts."
    return [f"{pre}{j}.{w}.weight" for j in range(cfg.num_local_experts) for w in ("w1", "w2", "w3")]


def stack_experts(hf: Dict[str, torch.Tensor], cfg: ModelConfig, layer: int, rank: int = 0, tp: int = 1):
    """One layer's experts as the MoE slot takes them: w13 (E, 2 * local I,
    H), w1 (gate) over w3 (up), and w2 (E, H, local I). The audit's judge
    stacks a recorded call's experts with this too."""
    pre = f"model.layers.{layer}.block_sparse_moe.experts."
    e = cfg.num_local_experts
    w1 = torch.stack([_rows(hf[f"{pre}{j}.w1.weight"], rank, tp) for j in range(e)])
    w3 = torch.stack([_rows(hf[f"{pre}{j}.w3.weight"], rank, tp) for j in range(e)])
    w2 = torch.stack([_cols(hf[f"{pre}{j}.w2.weight"], rank, tp) for j in range(e)])
    return torch.cat([w1, w3], 1), w2


def build(hf: Dict[str, torch.Tensor], cfg: ModelConfig, rank: int = 0, tp: int = 1, device=None) -> Weights:
    """Fuse (q|k|v, gate|up, w1|w3) and shard Megatron-style: column-parallel
    projections split their output rows, row-parallel ones (o, down, w2)
    their input columns; embeddings, norms, router and LM head replicate."""
    cfg.check_tp(tp)

    def dev(t):
        t = t.contiguous()
        return t if device is None else t.to(device)

    layers = []
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        q = _rows(hf[p + "self_attn.q_proj.weight"], rank, tp)
        k = _rows(hf[p + "self_attn.k_proj.weight"], rank, tp)
        v = _rows(hf[p + "self_attn.v_proj.weight"], rank, tp)
        layer = Layer(input_norm=dev(hf[p + "input_layernorm.weight"]), post_norm=dev(hf[p + "post_attention_layernorm.weight"]),
                      wqkv=dev(torch.cat([q, k, v], 0)), wo=dev(_cols(hf[p + "self_attn.o_proj.weight"], rank, tp)), index=i)
        if cfg.is_moe:
            w13, w2 = stack_experts(hf, cfg, i, rank, tp)
            layer.w13, layer.w2 = dev(w13), dev(w2)
            layer.router = dev(hf[p + "block_sparse_moe.gate.weight"])
        else:
            gate = _rows(hf[p + "mlp.gate_proj.weight"], rank, tp)
            up = _rows(hf[p + "mlp.up_proj.weight"], rank, tp)
            layer.w_gate_up = dev(torch.cat([gate, up], 0))
            layer.w_down = dev(_cols(hf[p + "mlp.down_proj.weight"], rank, tp))
        layers.append(layer)
    embed = hf["model.embed_tokens.weight"]
    head = embed if cfg.tie_word_embeddings else hf["lm_head.weight"]
    return Weights(embed=dev(embed), final_norm=dev(hf["model.norm.weight"]), lm_head=dev(head), layers=layers)
