"""Static-batch greedy generation: prefill, then decode steps that can be
captured once in a CUDA graph and replayed.

The KV cache, the current tokens and positions, the step counter and the
token history are preallocated device tensors, so one decode step has fixed
addresses and no host synchronization: exactly what a CUDA graph needs.
The graph is captured after warm-up steps on a side stream (Triton kernels
JIT-compile there, never during capture).
"""

import time
from dataclasses import dataclass
from typing import Dict, Optional

import torch

from .model import Model


@dataclass
class Generation:
    tokens: torch.Tensor  # (B, new + 1) on the CPU: the prefill token, then one per decode step
    prefill_ms: float
    decode_ms: float
    decode_steps: int

    @property
    def decode_tokens_per_s(self) -> float:
        return self.tokens.shape[0] * self.decode_steps / (self.decode_ms / 1e3) if self.decode_ms > 0 else 0.0


class Engine:
    def __init__(self, model: Model, batch: int):
        self.m = model
        self.batch = batch
        dev = model.device
        self.k_cache, self.v_cache = model.new_cache(batch)
        self.tok = torch.zeros(batch, dtype=torch.long, device=dev)
        self.pos = torch.zeros(batch, dtype=torch.long, device=dev)
        self.step_idx = torch.zeros(1, dtype=torch.long, device=dev)
        self.history = torch.zeros(batch, model.max_len + 1, dtype=torch.long, device=dev)
        self.graph: Optional[torch.cuda.CUDAGraph] = None
        # The slot calls of the one decode step the graph holds, by slot
        # and origin: what every replay runs (a row left out of graphs
        # shows here as stock).
        self.graph_calls: Dict[str, Dict[str, int]] = {}
        self.cuda = dev.type == "cuda"

    def prefill(self, prompts: torch.Tensor) -> None:
        if prompts.shape[0] != self.batch:
            raise ValueError(f"{prompts.shape[0]} prompts for an engine of batch {self.batch}")
        logits = self.m.prefill(prompts, self.k_cache, self.v_cache)
        nxt = logits.argmax(-1)
        self.history[:, 0] = nxt
        self.tok.copy_(nxt)
        self.pos.fill_(prompts.shape[1])
        self.step_idx.fill_(1)

    def step(self) -> None:
        logits = self.m.decode(self.tok, self.pos, self.k_cache, self.v_cache)
        nxt = logits.argmax(-1)
        self.history.index_copy_(1, self.step_idx, nxt.view(-1, 1))
        self.tok.copy_(nxt)
        self.pos.add_(1)
        self.step_idx.add_(1)

    def capture(self, prompts: torch.Tensor, warmup: int = 3) -> None:
        """Capture one decode step. The prompts give the warm-up a valid
        state; generate() prefills again before replaying."""
        if not self.cuda:
            raise RuntimeError("CUDA graphs need a CUDA device")
        if prompts.shape[1] + warmup + 1 > self.m.max_len:
            raise ValueError("prompt too long to warm up within the cache")
        self.prefill(prompts)
        self.m.graph_mode = True
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(warmup):
                    self.step()
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            before = self.m.seam.snapshot()
            with torch.cuda.graph(g):
                self.step()
            self.graph_calls = self.m.seam.since(before)
            torch.cuda.synchronize()
        finally:
            self.m.graph_mode = False
        self.graph = g

    def begin(self, prompts: torch.Tensor, new_tokens: int, use_graph: bool = False) -> None:
        """The first phase of a generation: capture the decode graph if it
        is not yet (a first batch's work), then prefill. Eager work only;
        a session times it apart from the decode that follows."""
        if prompts.shape[1] + new_tokens > self.m.max_len:
            raise ValueError(f"{prompts.shape[1]} + {new_tokens} tokens exceed the cache of {self.m.max_len}")
        if use_graph and self.graph is None:
            self.capture(prompts)
        self.prefill(prompts)

    def decode(self, new_tokens: int, use_graph: bool = False) -> torch.Tensor:
        """The second phase: new_tokens decode steps (graph replays when
        use_graph), returning every generated token on the CPU."""
        return self.decode_counted(new_tokens, use_graph)[0]

    def decode_counted(self, new_tokens: int, use_graph: bool = False):
        """decode, and the slot calls its steps ran by slot and origin:
        counted as they are made when eager, the captured step's calls
        times the replays when graph-replayed."""
        before = self.m.seam.snapshot()
        for _ in range(new_tokens):
            if use_graph:
                self.graph.replay()
            else:
                self.step()
        calls = ({slot: {o: n * new_tokens for o, n in per.items()} for slot, per in self.graph_calls.items()}
                 if use_graph else self.m.seam.since(before))
        return self.history[:, :new_tokens + 1].cpu(), calls

    def generate(self, prompts: torch.Tensor, new_tokens: int, use_graph: bool = False) -> Generation:
        if self.cuda:
            if use_graph and self.graph is None:
                self.capture(prompts)
            e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            e0.record()
            self.begin(prompts, new_tokens, use_graph)
            e1.record()
            tokens = self.decode(new_tokens, use_graph)
            e2.record()
            torch.cuda.synchronize()
            pre, dec = e0.elapsed_time(e1), e1.elapsed_time(e2)
        else:
            t0 = time.perf_counter()
            self.begin(prompts, new_tokens, use_graph)
            t1 = time.perf_counter()
            tokens = self.decode(new_tokens, use_graph)
            t2 = time.perf_counter()
            pre, dec = (t1 - t0) * 1e3, (t2 - t1) * 1e3
        return Generation(tokens, pre, dec, new_tokens)


def prompts(batch: int, length: int, vocab: int, seed: int, device) -> torch.Tensor:
    """Deterministic random prompts (drawn on the CPU, so every device and
    process gets the same tokens)."""
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return torch.randint(0, vocab, (batch, length), generator=g).to(device)
