"""A Llama / Mixtral decoder whose slot call sites all go through the seam.

Residual-stream form: each sublayer leaves a pending output (a per-rank
partial sum under tensor parallelism); the next norm consumes it together
with the residual, which is where the collective slots sit:

  tp == 1:  x = x + out;               h = rmsnorm(x)
  tp  > 1:  all_reduce(out) + add + rmsnorm            (fusion off)
            ar_residual_rmsnorm(out, x, w) -> (h, x)   (fusion on)

The substrate allocates every slot output; implementations only fill them.
"""

import math
from typing import Dict, Optional

import torch
import torch.nn.functional as F

from .config import ModelConfig
from .seam import Seam
from .weights import Weights


def _dtype_name(dtype):
    return {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}[dtype]


def architecture(device: torch.device) -> str:
    if device.type != "cuda":
        return "cpu"
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm{major}{minor}"


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Model:
    def __init__(self, cfg: ModelConfig, weights: Weights, seam: Seam, device, dtype=None,
                 rank: int = 0, tp: int = 1, group=None, allreduce_fusion: bool = False, max_len: Optional[int] = None):
        self.cfg, self.w, self.seam = cfg, weights, seam
        self.device = torch.device(device)
        self.dtype = dtype or cfg.dtype
        self.rank, self.tp, self.group = rank, tp, group
        self.fusion = allreduce_fusion and tp > 1
        self.hq = cfg.num_attention_heads // tp
        self.hkv = cfg.num_key_value_heads // tp
        self.d = cfg.head_dim
        self.inter = cfg.intermediate_size // tp
        self.eps = cfg.rms_norm_eps
        self.scale = 1.0 / math.sqrt(self.d)
        self.max_len = max_len or cfg.max_position_embeddings
        inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, self.d, 2, device=self.device, dtype=torch.float32) / self.d))
        freqs = torch.outer(torch.arange(self.max_len, device=self.device, dtype=torch.float32), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos, self.sin = emb.cos().to(self.dtype), emb.sin().to(self.dtype)
        self.graph_mode = False  # set while a CUDA graph is being captured
        self.context = {"dtype": _dtype_name(self.dtype), "architecture": architecture(self.device), "quant": "dense"}

    # -- seam plumbing ------------------------------------------------------

    def swap_seam(self, seam: Seam) -> None:
        """Bind another seam (a hot swap): prepared expert weights belong
        to the old implementations and are dropped; captured graphs are
        the caller's to drop."""
        self.seam = seam
        for layer in self.w.layers:
            layer.prepared.clear()

    def live(self, **fields) -> Dict[str, object]:
        live = dict(self.context)
        live["graph_mode"] = "cuda_graph" if self.graph_mode else "eager"
        if self.tp > 1:
            live["tp_size"] = live["world_size"] = self.tp
        live.update(fields)
        return live

    def slot(self, name, live, *args):
        return self.seam.call(name, live, *args, graph=self.graph_mode)

    def rmsnorm(self, x, weight):
        out = torch.empty_like(x)
        T, H = x.shape
        self.slot("norm.rmsnorm", self.live(num_tokens=T, hidden_dim=H, last_dim=H), x, weight, out, self.eps)
        return out

    def add_norm(self, pending, reduced, x, weight):
        """Consume a sublayer output into the residual x and normalize:
        returns (new residual, normed). pending is None at the first layer;
        reduced says pending is already summed across ranks."""
        if pending is None:
            return x, self.rmsnorm(x, weight)
        T, H = x.shape
        if self.tp == 1 or reduced:
            x = x + pending
            return x, self.rmsnorm(x, weight)
        if self.fusion:
            out_norm, out_res = torch.empty_like(x), torch.empty_like(x)
            self.slot("collective.ar_residual_rmsnorm", self.live(num_tokens=T, hidden_dim=H, last_dim=H),
                      pending, x, weight, self.eps, out_norm, out_res, self.group)
            return out_res, out_norm
        summed = torch.empty_like(pending)
        self.slot("collective.all_reduce", self.live(num_tokens=T, hidden_dim=H, last_dim=H), pending, summed, self.group)
        x = x + summed
        return x, self.rmsnorm(x, weight)

    # -- sublayers ----------------------------------------------------------

    def qkv(self, layer, h, cos, sin):
        """Projected and rotated q (N, Hq, D), k and v (N, Hkv, D)."""
        n = h.shape[0]
        qkv = h @ layer.wqkv.t()
        q, k, v = qkv.split([self.hq * self.d, self.hkv * self.d, self.hkv * self.d], dim=-1)
        q = q.reshape(n, self.hq, self.d)
        k = k.reshape(n, self.hkv, self.d)
        q = (q * cos + rotate_half(q) * sin).contiguous()
        k = (k * cos + rotate_half(k) * sin).contiguous()
        return q, k, v.reshape(n, self.hkv, self.d).contiguous()

    def mlp(self, layer, h):
        """(pending output, reduced?)"""
        if self.cfg.is_moe:
            return self.moe(layer, h)
        T = h.shape[0]
        gate_up = h @ layer.w_gate_up.t()
        act = torch.empty(T, self.inter, dtype=h.dtype, device=h.device)
        self.slot("activation.silu_and_mul", self.live(num_tokens=T, last_dim=2 * self.inter, intermediate_dim=self.inter),
                  gate_up, act)
        return act @ layer.w_down.t(), False

    def moe(self, layer, h):
        T, H = h.shape
        E, K = self.cfg.num_local_experts, self.cfg.num_experts_per_tok
        probs = torch.softmax((h @ layer.router.t()).to(torch.float32), dim=-1)
        topk_w, topk_ids = torch.topk(probs, K, dim=-1)
        topk_w = (topk_w / topk_w.sum(-1, keepdim=True)).contiguous()
        topk_ids = topk_ids.to(torch.int32).contiguous()
        out = torch.empty_like(h)
        live = self.live(num_tokens=T, num_experts=E, hidden_dim=H, intermediate_dim=self.inter, top_k=K, last_dim=H)
        # Composition rule reduce-first: the reducing form runs when the
        # stack has a row for it that admits the call; else the plain form
        # and the reduce happens at the next norm.
        if self.tp > 1:
            choice = self.seam.resolve("moe.fused_experts_reduce", live, self.graph_mode)
            if choice.origin != "stock":
                prepared = self._prepared(layer, choice)
                self.slot("moe.fused_experts_reduce", live, h, topk_ids, topk_w, prepared, out, self.group)
                return out, True
        choice = self.seam.resolve("moe.fused_experts", live, self.graph_mode)
        prepared = self._prepared(layer, choice)
        self.slot("moe.fused_experts", live, h, topk_ids, topk_w, prepared, out)
        return out, False

    def _prepared(self, layer, choice):
        """Prepared expert weights, once per implementation (a contribution's
        prepare may lay them out its own way)."""
        key = f"{choice.slot}:{choice.origin}"
        if key not in layer.prepared:
            state = choice.prepare(layer.w13, layer.w2)
            layer.prepared[key] = state
            self.seam.prepared_from[id(state)] = (state, layer.index)
        return layer.prepared[key]

    # -- passes ---------------------------------------------------------------

    def prefill(self, tokens, k_cache, v_cache, all_positions: bool = False):
        """Run prompts (B, P) from position 0, fill the caches' first P
        positions, and return the last position's logits (B, V) in fp32, or
        with all_positions every position's (B, P, V) (teacher forcing)."""
        B, P = tokens.shape
        if P > self.max_len:
            raise ValueError(f"prompt of {P} tokens exceeds the cache ({self.max_len})")
        x = F.embedding(tokens.reshape(-1), self.w.embed)
        cos = self.cos[:P].repeat(B, 1).unsqueeze(1)
        sin = self.sin[:P].repeat(B, 1).unsqueeze(1)
        attn_live = self.live(num_tokens=P, q_len=P, kv_len=P, num_q_heads=self.hq, num_kv_heads=self.hkv,
                              head_dim=self.d, last_dim=self.d, phase="prefill")
        pending, reduced = None, False
        for i, layer in enumerate(self.w.layers):
            x, h = self.add_norm(pending, reduced, x, layer.input_norm)
            q, k, v = self.qkv(layer, h, cos, sin)
            q, k, v = (t.view(B, P, t.shape[1], self.d) for t in (q, k, v))
            k_cache[i][:, :P] = k
            v_cache[i][:, :P] = v
            o = torch.empty(B, P, self.hq, self.d, dtype=x.dtype, device=x.device)
            for b in range(B):
                self.slot("attention.sdpa", attn_live, q[b], k[b], v[b], o[b], self.scale, True)
            pending, reduced = o.view(B * P, self.hq * self.d) @ layer.wo.t(), False
            x, h = self.add_norm(pending, reduced, x, layer.post_norm)
            pending, reduced = self.mlp(layer, h)
        x, h = self.add_norm(pending, reduced, x, self.w.final_norm)
        if all_positions:
            return (h @ self.w.lm_head.t()).to(torch.float32).view(B, P, -1)
        last = torch.arange(B, device=x.device) * P + (P - 1)
        return (h[last] @ self.w.lm_head.t()).to(torch.float32)

    def decode(self, tok, pos, k_cache, v_cache):
        """One step for B sequences: tok (B,) at positions pos (B,) (both on
        device); appends to the caches and returns logits (B, V) in fp32.
        No host synchronization: the step can be captured in a CUDA graph."""
        B = tok.shape[0]
        S = k_cache[0].shape[1]
        x = F.embedding(tok, self.w.embed)
        cos = self.cos[pos].unsqueeze(1)
        sin = self.sin[pos].unsqueeze(1)
        rows = torch.arange(B, device=tok.device)
        seq_lens = (pos + 1).to(torch.int32)
        attn_live = self.live(batch_size=B, num_tokens=B, kv_len=S, num_q_heads=self.hq, num_kv_heads=self.hkv,
                              head_dim=self.d, last_dim=self.d, phase="decode")
        pending, reduced = None, False
        for i, layer in enumerate(self.w.layers):
            x, h = self.add_norm(pending, reduced, x, layer.input_norm)
            q, k, v = self.qkv(layer, h, cos, sin)
            k_cache[i].index_put_((rows, pos), k)
            v_cache[i].index_put_((rows, pos), v)
            o = torch.empty(B, self.hq, self.d, dtype=x.dtype, device=x.device)
            self.slot("attention.decode", attn_live, q, k_cache[i], v_cache[i], seq_lens, self.scale, o)
            pending, reduced = o.view(B, self.hq * self.d) @ layer.wo.t(), False
            x, h = self.add_norm(pending, reduced, x, layer.post_norm)
            pending, reduced = self.mlp(layer, h)
        x, h = self.add_norm(pending, reduced, x, self.w.final_norm)
        return (h @ self.w.lm_head.t()).to(torch.float32)

    def new_cache(self, batch: int):
        shape = (batch, self.max_len, self.hkv, self.d)
        k = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in self.w.layers]
        v = [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in self.w.layers]
        return k, v

    def forward_full(self, tokens):
        """Logits (B, P, V) of every position of tokens (teacher forcing)."""
        kc, vc = self.new_cache(tokens.shape[0])
        return self.prefill(tokens, kc, vc, all_positions=True)
