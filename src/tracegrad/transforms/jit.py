"""jit: trace once per argument signature and reuse the Graph.

Until the compiled CPU backend lands, a jitted function's Graph runs on the reference device; inside another trace
it is inlined, so jit composes with every other transform.

>>> f = tracegrad.jit(lambda x: x * 2)
>>> f(tnp.arange(3))
Array([0, 2, 4], dtype=int32)
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

from .. import tree as tree_util
from ..array import Array, to_array
from ..run import concrete
from ..trace import trace


def _nums(x) -> tuple[int, ...]: return (x,) if isinstance(x, int) else tuple(x)


def jit(fun: Callable, static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        donate_argnums: int | Sequence[int] = (), **_options) -> Callable:
  """fun, traced once for each signature (tree structure, shapes, dtypes, static arguments) and run as a graph."""
  static = _nums(static_argnums)
  names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
  cache: dict = {}
  name = getattr(fun, "__name__", "function")

  @functools.wraps(fun)
  def jitted(*args, **kwargs):
    n = len(args)
    idx = sorted({i % n for i in static if -n <= i < n})
    if any(not -n <= i < n for i in static):
      raise ValueError(f"jit({name}): static_argnums {static} is out of range for {n} positional arguments")
    statics = tuple((i, args[i]) for i in idx) + tuple((k, kwargs[k]) for k in names if k in kwargs)
    for where, v in statics:
      try:
        hash(v)
      except TypeError:
        raise TypeError(f"jit({name}): static argument {where!r} is a {type(v).__name__}, which is not hashable; "
                        f"pass a tuple (or another hashable value), or make it a traced argument") from None
    dyn = tuple(a for i, a in enumerate(args) if i not in idx)
    dkw = {k: v for k, v in kwargs.items() if k not in names}
    leaves, tree = tree_util.flatten((dyn, dkw))
    arrs = [to_array(x, fn=f"jit({name})") for x in leaves]
    key = (tree, tuple((a.shape, a.dtype, a.weak_type) for a in arrs), statics)
    g = cache.get(key)
    if g is None:
      def f(*d, **kw):
        it = iter(d)
        full = [args[i] if i in idx else next(it) for i in range(n)]
        return fun(*full, **kw, **{k: v for k, v in kwargs.items() if k in names})

      g, _ = trace(f, dyn, dkw, fn=f"jit({name})")
      if not g.closed()[1]: cache[key] = g  # a graph that closes over another trace's values is not reusable
    outs = concrete(g(*[a.uop for a in arrs]))
    return tree_util.unflatten(g.out_tree, [Array(o, w) for o, w in zip(outs, g.out_weak)])

  jitted.clear_cache = cache.clear
  return jitted
