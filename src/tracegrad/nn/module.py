"""Modules: layers as registered pytrees. A Module's array fields are its children and the names in `static` its
metadata, so grad, jit and vmap take a model as they take a dict. Running statistics live in `State` nodes, which
`partition` separates from the trainable parameters and `apply` updates.

>>> lin = tracegrad.nn.Linear(3, 2, key=tracegrad.random.key(0))
>>> [leaf.shape for leaf in tracegrad.tree.leaves(lin)]
[(2, 3), (2,)]
>>> tracegrad.nn.count_params(lin)
8
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Callable

import numpy as np

from .. import tree
from ..lax import stop_gradient

__all__ = ["Module", "State", "Lambda", "partition", "combine", "apply", "count_params", "summary"]


def _flatten(m: Module):
  fields, static = vars(m), type(m).static
  names = tuple(k for k in fields if k not in static)
  return [fields[k] for k in names], (names, tuple((k, fields[k]) for k in static if k in fields)), names


def _unflatten(cls: type, aux, children) -> Module:
  names, statics = aux
  m = object.__new__(cls)
  vars(m).update(statics)
  vars(m).update(zip(names, children))
  return m


class Module:
  """A layer: attributes set in __init__ are array leaves or sub-modules, except those named in `static`
  (hyperparameters such as sizes, strides and activations), which are part of the tree's structure."""
  static: tuple[str, ...] = ()

  def __init_subclass__(cls, **kw):
    super().__init_subclass__(**kw)
    tree.register_pytree_node(cls, _flatten, lambda aux, children: _unflatten(cls, aux, children))

  def __repr__(self) -> str:
    inner = [(k, v) for k, v in vars(self).items() if isinstance(v, Module)]
    lists = [(k, v) for k, v in vars(self).items() if isinstance(v, (list, tuple)) and v and
             all(isinstance(x, Module) for x in v)]
    head = f"{type(self).__name__}({self._describe()}"
    if not inner and not lists: return head + ")"
    lines = [f"  ({k}): {_indent(repr(v))}" for k, v in inner]
    lines += [f"  ({i}): {_indent(repr(x))}" for _, v in lists for i, x in enumerate(v)]
    return head + ("\n" if head.endswith("(") else ",\n") + "\n".join(lines) + "\n)"

  def _describe(self) -> str:
    shown = [f"{k}={v!r}" if not callable(v) else f"{k}={getattr(v, '__name__', repr(v))}"
             for k, v in vars(self).items() if k in type(self).static]
    return ", ".join(shown)


def _indent(s: str) -> str: return s.replace("\n", "\n  ")


class State:
  """Non-trainable arrays a module carries from call to call (BatchNorm's running mean and variance).
  `partition` keeps them out of the parameters the optimizer sees; `apply` returns the model with them updated."""

  def __init__(self, value): self.value = value
  def __repr__(self) -> str: return f"State({self.value!r})"


tree.register_pytree_node(State, lambda s: ((s.value,), None, ("value",)), lambda aux, c: State(c[0]))


class Lambda(Module):
  """A parameterless function as a layer, so Sequential can hold activations: Lambda(tracegrad.nn.relu)."""
  static = ("fn",)

  def __init__(self, fn: Callable): self.fn = fn
  def __call__(self, x, *, key=None, training: bool = False): return self.fn(x)
  def _describe(self) -> str: return getattr(self.fn, "__name__", repr(self.fn))


def _is_state(x) -> bool: return isinstance(x, State)


def partition(model) -> tuple[Any, Any]:
  """(params, state): the model with its State nodes replaced by None, and the model with everything but its
  State nodes replaced by None. `combine(params, state)` rebuilds it.

  >>> params, state = tracegrad.nn.partition(tracegrad.nn.BatchNorm(4))
  >>> len(tracegrad.tree.leaves(params)), len(tracegrad.tree.leaves(state))
  (2, 2)
  """
  params = tree.map(lambda x: None if _is_state(x) else x, model, is_leaf=_is_state)
  state = tree.map(lambda x: x if _is_state(x) else None, model, is_leaf=_is_state)
  return params, state


def combine(params, state):
  """The model `partition` split into (params, state)."""
  return tree.map(lambda p, s: s if p is None else p, params, state, is_leaf=lambda x: x is None)


_collectors: list[dict[int, State]] = []


def record_state(old: State, new_value) -> None:
  """Called by a module computing new state inside `apply`; outside `apply` the new value is dropped."""
  if _collectors: _collectors[-1][id(old)] = State(tree.map(stop_gradient, new_value))


def apply(model, *args, **kwargs) -> tuple[Any, Any]:
  """(model(*args, **kwargs), model with its State updated): how a model with BatchNorm trains.

  >>> bn = tracegrad.nn.BatchNorm(2)
  >>> y, bn = tracegrad.nn.apply(bn, tnp.asarray([[0.0, 1.0], [2.0, 3.0]]), training=True)
  >>> bn.running_mean.value
  Array([0.1, 0.2], dtype=float32)
  """
  updates: dict[int, State] = {}
  with _collecting(updates):
    out = model(*args, **kwargs)
  return out, tree.map(lambda s: updates.get(id(s), s), model, is_leaf=_is_state)


@contextlib.contextmanager
def _collecting(updates: dict):
  _collectors.append(updates)
  try: yield
  finally: _collectors.pop()


def count_params(model) -> int:
  """The number of trainable scalars: the sizes of every array leaf outside State nodes."""
  params, _ = partition(model)
  return sum(math.prod(np.shape(x)) for x in tree.leaves(params))


def summary(model) -> str:
  """A table of the model's leaves (path, shape, dtype, size) and the trainable total."""
  rows = [(".".join(str(p) for p in path), str(tuple(np.shape(x))), str(getattr(x, "dtype", type(x).__name__)),
           math.prod(np.shape(x))) for path, x in tree.leaves_with_raw_path(model)]
  w = [max([len(r[i]) for r in rows] + [len(h)]) for i, h in enumerate(("leaf", "shape", "dtype"))]
  lines = [f"{'leaf':<{w[0]}}  {'shape':<{w[1]}}  {'dtype':<{w[2]}}  size"]
  lines += [f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {n:,}" for a, b, c, n in rows]
  lines.append(f"trainable parameters: {count_params(model):,}")
  return "\n".join(lines)
