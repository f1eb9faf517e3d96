"""tracegrad: a functional, JAX-style array library.

>>> import tracegrad, tracegrad.numpy as tnp
>>> print(tracegrad.make_graph(lambda x: tnp.sin(x) + 1.0)(tnp.ones(3)))
"""
import os as _os
import sys

from . import errors, tree, tree_util
from .array import Array, device_put
from .config import config
from .devices import TracedValueError
from .run import default_backend, devices, local_devices
from .parallel import distributed, sharding
from .parallel.distributed import process_count, process_index
from .parallel.sharding import NamedSharding
from .device_api import device_count, local_device_count, make_mesh
from .trace import ShapeDtypeStruct, eval_shape, make_graph, make_jaxpr
from . import numpy  # noqa: F401  (installs Array's methods)
from . import lax
from . import random
from . import checkpoints, nn, optim, scipy  # noqa: E401
from . import image
from . import test_util
from . import debug
from . import dtypes, ops  # noqa: E401
from .transforms import (checkpoint, custom_jvp, custom_vjp, grad, hessian, jacfwd, jacrev, jit, jvp, linearize, remat,
                         shard_map, value_and_grad, vjp, vmap)

from .api import (block_until_ready, checkpoint_policies, clear_caches, copy_to_host_async, custom_gradient,
                  default_device, default_matmul_precision, device_get, disable_jit, effects_barrier, enable_x64,
                  ensure_compile_time_eval, explain_cache_misses, float0, host_count, host_id, host_ids,
                  linear_transpose, log_compiles, make_array_from_callback, make_array_from_process_local_data,
                  make_array_from_single_device_arrays, named_call, named_scope, numpy_dtype_promotion,
                  numpy_rank_promotion, print_environment_info, process_indices, pure_callback, threefry_partitionable,
                  transfer_guard, transfer_guard_device_to_device, transfer_guard_device_to_host,
                  transfer_guard_host_to_device, typeof)
from .devices import Device
from .parallel.sharding import P, Shard

jacobian = jacrev

if _os.environ.get("TRACEGRAD_VIZ"):   # TRACEGRAD_VIZ=<port>: record and serve the VIZ page from the start
  from . import viz as _viz
  try:
    _viz.serve(int(_os.environ["TRACEGRAD_VIZ"]))
  except ValueError:
    raise ValueError(f"TRACEGRAD_VIZ must be a port number (0 for a free one), got {_os.environ['TRACEGRAD_VIZ']!r}") \
      from None

# tracegrad.sharding and tracegrad.distributed, as jax.sharding and jax.distributed, live in parallel/
sys.modules[__name__ + ".sharding"], sys.modules[__name__ + ".distributed"] = sharding, distributed

__version__ = "0.1.0"
__all__ = ["Array", "block_until_ready", "checkpoint", "checkpoint_policies", "checkpoints", "clear_caches", "config",
           "copy_to_host_async", "custom_gradient", "custom_jvp", "custom_vjp", "debug", "default_backend",
           "default_device", "default_matmul_precision", "Device", "device_count", "device_get", "device_put",
           "devices", "disable_jit", "distributed", "dtypes", "effects_barrier", "enable_x64",
           "ensure_compile_time_eval", "errors", "eval_shape", "explain_cache_misses", "float0", "grad", "hessian",
           "host_count", "host_id", "host_ids", "image", "jacfwd", "jacobian", "jacrev", "jit", "jvp", "lax",
           "linear_transpose", "linearize", "local_device_count", "local_devices", "log_compiles",
           "make_array_from_callback",
           "make_array_from_process_local_data", "make_array_from_single_device_arrays", "make_graph", "make_jaxpr",
           "make_mesh", "named_call", "named_scope", "NamedSharding", "nn", "numpy", "numpy_dtype_promotion",
           "numpy_rank_promotion", "ops", "optim", "P", "print_environment_info", "process_count", "process_index",
           "process_indices", "pure_callback", "random", "remat", "scipy", "ShapeDtypeStruct", "Shard", "shard_map",
           "sharding", "test_util", "threefry_partitionable", "TracedValueError", "transfer_guard",
           "transfer_guard_device_to_device", "transfer_guard_device_to_host", "transfer_guard_host_to_device",
           "tree", "tree_util", "typeof", "value_and_grad", "vjp", "vmap"]
