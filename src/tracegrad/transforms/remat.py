"""checkpoint (remat): a function whose intermediate values are recomputed in the backward pass instead of stored.

>>> f = tracegrad.checkpoint(lambda x: tnp.sin(tnp.sin(x)))
>>> tracegrad.grad(f)(0.0)
Array(1., dtype=float32, weak_type=True)
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from .. import tree as tree_util
from ..array import Array, to_array
from ..ir import Ops, UOp
from ..trace import trace


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | Sequence[int] = ()) -> Callable:
  """fun, with nothing it computes kept for the backward pass (as jax.checkpoint; every value is recomputed).

  A `policy` (one of tracegrad.checkpoint_policies, or any callable) is accepted and not consulted: tracegrad
  recomputes every intermediate value, as jax.checkpoint_policies.nothing_saveable does; the values and derivatives
  are the same under every policy."""
  if policy is not None and not callable(policy):
    raise TypeError(f"checkpoint: policy must be callable (see tracegrad.checkpoint_policies), got {policy!r}")
  static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    name = getattr(fun, "__name__", "function")
    dyn = tuple(a for i, a in enumerate(args) if i not in static)

    def f(*d, **kw):
      it = iter(d)
      return fun(*(args[i] if i in static else next(it) for i in range(len(args))), **kw)

    g, _ = trace(f, dyn, kwargs, fn=f"checkpoint({name})")
    g, free = g.closed()
    leaves = [to_array(x, fn="checkpoint").uop for x in tree_util.leaves((dyn, kwargs))]
    outs = UOp.multi(Ops.REMAT, (*free, *leaves), g)
    return tree_util.unflatten(g.out_tree, [Array(o, w) for o, w in zip(outs, g.out_weak)])

  return wrapped


remat = checkpoint
