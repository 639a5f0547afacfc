"""The Cacheon engine substrate: a compact Llama / Mixtral decoder runtime.

Static KV cache, batched prefill and greedy decode, one decode step
captured in a CUDA graph on GPUs (eager on the CPU), tensor parallelism
over torch.distributed. Every registered slot the model reaches is called
through the seam (cacheon_substrate.seam), which dispatches to the
contribution a materialized engine tree's runtime manifest names, or to
the stock implementation when the stack has none.

Identity: the bundle content hash of this package directory
(`cacheon hash kernels/substrate/cacheon_substrate`, or
`python -m cacheon_substrate identity`). See docs/engine/substrate.md.
"""

from .config import ModelConfig
from .engine import Engine, Generation
from .identity import substrate_digest
from .model import Model
from .seam import Seam, SeamError, load_tree

__all__ = ["Engine", "Generation", "Model", "ModelConfig", "Seam", "SeamError", "load_tree", "substrate_digest"]
