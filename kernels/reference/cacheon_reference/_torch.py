"""torch, imported on first use.

Planning (shapes, jitter, capability fields) needs no tensors, and a worker
that only plans should not pay for importing torch. Every module of this
package reaches torch through this name; the first attribute access imports
it.
"""

import importlib


class _Deferred:
    __slots__ = ()

    def __getattr__(self, name):
        return getattr(importlib.import_module("torch"), name)


torch = _Deferred()
