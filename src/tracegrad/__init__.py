"""tracegrad: a functional, JAX-style array library.

>>> import tracegrad, tracegrad.numpy as tnp
>>> print(tracegrad.make_graph(lambda x: tnp.sin(x) + 1.0)(tnp.ones(3)))
"""
from . import tree
from .array import Array
from .config import config
from .devices import TracedValueError
from .run import default_backend, device_put, devices, local_devices
from .distributed import process_count, process_index
from .trace import ShapeDtypeStruct, eval_shape, make_graph
from . import numpy  # noqa: F401  (installs Array's methods)
from . import lax
from . import random
from . import checkpoints, distributed, nn, optim, scipy, sharding  # noqa: E401
from .transforms import (checkpoint, custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev, jit, jvp, linearize, remat,
                         shard_map, value_and_grad, vjp, vmap)

__version__ = "0.1.0"
__all__ = ["Array", "ShapeDtypeStruct", "TracedValueError", "checkpoint", "checkpoints", "config", "custom_jvp", "custom_vjp",
           "default_backend", "device_put", "devices", "distributed", "local_devices", "process_count", "process_index", "eval_shape", "grad", "hessian", "jacfwd", "jacrev", "jit",
           "jvp", "lax", "linearize", "make_graph", "numpy", "nn", "optim", "random", "remat", "scipy", "shard_map",
           "sharding", "tree", "value_and_grad", "vjp", "vmap"]
