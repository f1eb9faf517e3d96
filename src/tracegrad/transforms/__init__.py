"""Transforms: each rewrites a traced Graph with one rule table and inlines the result where it was called."""
from .custom import custom_jvp, custom_vjp
from .grad import grad, value_and_grad, vjp
from .jacobian import hessian, jacfwd, jacrev
from .jit import jit
from .jvp import jvp, linearize
from .remat import checkpoint, remat
from .shard_map import shard_map
from .vmap import vmap

__all__ = ["checkpoint", "custom_jvp", "custom_vjp", "grad", "hessian", "jacfwd", "jacrev", "jit", "jvp", "linearize",
           "remat", "shard_map", "value_and_grad", "vjp", "vmap"]
