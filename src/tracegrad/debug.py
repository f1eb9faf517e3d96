"""Printing and host callbacks from inside transformed functions, as jax.debug.

Eagerly they run at once. Under jit they run each time the compiled program is called, after it returns, in the
order the program recorded them (the values they read are extra outputs of the program); under grad, jvp and
linearize they run once on the primal values and leave the derivatives unchanged. Under vmap they run once per
element, inside scan, fori_loop and while_loop bodies once per step, inside cond and switch for the branch taken
(under vmap too, where JAX runs both). Inside make_jaxpr and eval_shape, whose values are abstract, and a
while_loop's condition, they do not run.

>>> tracegrad.debug.print("x = {}", tnp.arange(3))
x = [0 1 2]
"""
from __future__ import annotations

import builtins
from typing import Callable

import numpy as np

from . import tree
from .array import Array
from .trace import tap


def callback(fn: Callable, *args, ordered: bool = False, **kwargs) -> None:
  """fn(*args, **kwargs) on the concrete values of the arguments' arrays (see the module's note on when it runs).

  >>> tracegrad.jit(lambda x: tracegrad.debug.callback(lambda v: builtins.print(v * 2), x) or x)(tnp.ones(2))
  [2. 2.]
  Array([1., 1.], dtype=float32)
  """
  if not callable(fn): raise TypeError(f"debug.callback: fn must be callable, got {type(fn).__name__} {fn!r}")
  leaves, treedef = tree.flatten((args, kwargs))
  where = [i for i, x in enumerate(leaves) if isinstance(x, Array)]

  def run(arrays: list[Array]) -> None:
    full = list(leaves)
    for i, a in zip(where, arrays): full[i] = a
    a, kw = tree.unflatten(treedef, full)
    fn(*a, **kw)

  tap(run, [leaves[i] for i in where])


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:   # noqa: A001  (as jax.debug.print)
  """Print fmt.format(*args, **kwargs) with the arrays' concrete values (see the module's note on when it runs).

  >>> f = tracegrad.jit(lambda x: (tracegrad.debug.print("y = {y}", y=x * 2), x + 1)[1])
  >>> f(tnp.arange(2.0))
  y = [0. 2.]
  Array([1., 2.], dtype=float32)
  """
  if not isinstance(fmt, str): raise TypeError(f"debug.print: fmt must be a format string, got {type(fmt).__name__}")

  def show(*a, **kw):
    a, kw = tree.map(lambda x: np.asarray(x) if isinstance(x, Array) else x, (a, kw))
    builtins.print(fmt.format(*a, **kw))

  callback(show, *args, **kwargs)
