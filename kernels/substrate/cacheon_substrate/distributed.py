"""Tensor-parallel process groups: one process per rank, rendezvous through
a file store (no port to choose), gloo on the CPU, NCCL on CUDA."""

import datetime
import os

import torch
import torch.distributed as dist


def init(rank: int, world: int, store_path: str, device: str, timeout_s: float = 300.0):
    backend = "nccl" if device == "cuda" else "gloo"
    if backend == "gloo":
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    else:
        torch.cuda.set_device(rank)
    store = dist.FileStore(store_path, world)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))
    return dist.group.WORLD


def finish() -> None:
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
