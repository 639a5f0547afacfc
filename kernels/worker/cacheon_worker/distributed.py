"""torch.distributed set-up for collective slots: one process per rank,
rendezvous through a file store in a controller-made directory (no ports
to pick, nothing listening beyond the backend's own sockets)."""

import datetime
import os

import torch
import torch.distributed as dist


def init(rendezvous_dir: str, rank: int, world: int, device: str, timeout_s: float):
    backend = "nccl" if device == "cuda" else "gloo"
    if backend == "gloo":
        # Rank processes share one host; keep gloo on the loopback device.
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    store = dist.FileStore(os.path.join(rendezvous_dir, "store"), world)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=max(30.0, timeout_s)))
    return dist.group.WORLD


def finish():
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
