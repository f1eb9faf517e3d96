"""Reductions and cumulative scans, as jax.lax: reduce (with a known monoid, or any function folded over the axis),
reduce_max / min / prod / and / or / xor, argmax and argmin, cumsum / cumprod / cummax / cummin / cumlogsumexp and
associative_scan. Scans take log2(n) steps, each combining every element with the one 2**k before it.

>>> lax.cummax(tnp.array([1, 3, 2, 5]))
Array([1, 3, 3, 5], dtype=int32)
"""
from __future__ import annotations

import math
import operator
from typing import Callable, Sequence

from .. import tree as tree_util
from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from . import elementwise as E
from . import float_math as fm
from .ops import _ints, add, max, min, mul, normalize_axis, reduce_sum  # noqa: A004
from .shapes import concatenate
from .slicing import slice_in_dim

__all__ = ["reduce", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "reduce_xor", "argmax",
           "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp", "associative_scan"]


def _axes(a: Array, axes, fn: str) -> tuple[int, ...]:
  return tuple(sorted({normalize_axis(ax, a.ndim, fn, "axes") for ax in _ints(axes, fn, "axes")}))


def _drop(u: UOp, shape, axes) -> UOp: return u.reshape(tuple(n for i, n in enumerate(shape) if i not in axes))


def _fold(u: UOp, axes, op: Ops) -> UOp:
  """u combined by the elementwise op over axes, halving each axis in turn (for ops without a REDUCE primitive)."""
  for ax in axes:
    while u.shape[ax] > 1:
      n, h = u.shape[ax], u.shape[ax] // 2
      cut = lambda lo, hi: u.slice([(lo, hi, 1) if i == ax else (0, m, 1) for i, m in enumerate(u.shape)])
      head = cut(0, h).alu(op, cut(h, 2 * h))
      u = UOp.concat([head, cut(2 * h, n)], ax) if n % 2 else head
  return u


def _reduce(fn: str, operand, axes, kind: str, body) -> Array:
  a = to_array(operand, fn=fn)
  E.check_kind(fn, a.dtype, kind)
  ax = _axes(a, axes, fn)
  if any(a.shape[i] == 0 for i in ax): raise ValueError(f"{fn}: cannot reduce over an empty axis of shape {a.shape}")
  return Array(_drop(body(a.uop, ax), a.shape, ax), a.weak_type)


def reduce_max(operand, axes: Sequence[int]) -> Array:
  """The maximum over axes (nan if any is nan), as jax.lax.reduce_max.

  >>> lax.reduce_max(tnp.array([[1, 5], [3, 2]]), (1,))
  Array([5, 3], dtype=int32)
  """
  return _reduce("reduce_max", operand, axes, "any", lambda u, ax: u.reduce(Ops.REDUCE_MAX, ax))


def reduce_min(operand, axes: Sequence[int]) -> Array:
  """The minimum over axes (nan if any is nan), as jax.lax.reduce_min.

  >>> lax.reduce_min(tnp.array([[1, 5], [3, 2]]), (1,))
  Array([1, 2], dtype=int32)
  """
  return _reduce("reduce_min", operand, axes, "any", lambda u, ax: u.reduce(Ops.REDUCE_MIN, ax))


def reduce_prod(operand, axes: Sequence[int]) -> Array:
  """The product over axes, as jax.lax.reduce_prod.

  >>> lax.reduce_prod(tnp.array([[1, 5], [3, 2]]), (0,))
  Array([ 3, 10], dtype=int32)
  """
  return _reduce("reduce_prod", operand, axes, "number", lambda u, ax: u.reduce(Ops.REDUCE_PROD, ax))


def reduce_and(operand, axes: Sequence[int]) -> Array:
  """The bitwise (logical, for bool) and over axes, as jax.lax.reduce_and.

  >>> lax.reduce_and(tnp.array([True, False]), (0,))
  Array(False, dtype=bool)
  """
  return _reduce("reduce_and", operand, axes, "int_or_bool", lambda u, ax: _fold(u, ax, Ops.AND))


def reduce_or(operand, axes: Sequence[int]) -> Array:
  """The bitwise (logical, for bool) or over axes, as jax.lax.reduce_or.

  >>> lax.reduce_or(tnp.array([1, 4]), (0,))
  Array(5, dtype=int32)
  """
  return _reduce("reduce_or", operand, axes, "int_or_bool", lambda u, ax: _fold(u, ax, Ops.OR))


def reduce_xor(operand, axes: Sequence[int]) -> Array:
  """The bitwise (logical, for bool) exclusive or over axes, as jax.lax.reduce_xor.

  >>> lax.reduce_xor(tnp.array([1, 5]), (0,))
  Array(4, dtype=int32)
  """
  return _reduce("reduce_xor", operand, axes, "int_or_bool", lambda u, ax: _fold(u, ax, Ops.XOR))


def _monoid(computation):
  """The reduce_* function a computation with a known identity stands for, by the callable or its name."""
  name = getattr(computation, "__name__", None)
  table = {add: reduce_sum, mul: reduce_prod, max: reduce_max, min: reduce_min, E.bitwise_and: reduce_and,
           E.bitwise_or: reduce_or, E.bitwise_xor: reduce_xor, operator.add: reduce_sum, operator.mul: reduce_prod}
  names = {"add": reduce_sum, "multiply": reduce_prod, "maximum": reduce_max, "minimum": reduce_min}
  hit = next((r for f, r in table.items() if computation is f), None)
  module = getattr(computation, "__module__", "") or ""
  return hit or (names.get(name) if module.startswith("tracegrad.numpy") else None)


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int]):
  """operands (an array or a pytree of them) reduced over dimensions by computation, starting from init_values,
  as jax.lax.reduce. Known monoids (lax.add, lax.max, ...) use the matching reduction; any other computation is
  folded over the reduced axes one element at a time.

  >>> lax.reduce(tnp.arange(6).reshape(2, 3), 0, lax.add, (1,))
  Array([ 3, 12], dtype=int32)
  """
  fn = "reduce"
  xs, tree = tree_util.flatten(operands)
  inits, itree = tree_util.flatten(init_values)
  if tree != itree: raise TypeError(f"{fn}: operands and init_values must have one structure, got {tree} and {itree}")
  xs = [to_array(x, fn=fn) for x in xs]
  if any(x.shape != xs[0].shape for x in xs): raise ValueError(f"{fn}: the operands must have one shape")
  mono = _monoid(computation) if len(xs) == 1 else None
  if mono is not None:
    x = xs[0]
    ax = _axes(x, dimensions, fn)
    if any(x.shape[i] == 0 for i in ax):
      return Array(to_array(inits[0], x.dtype).uop.broadcast(tuple(n for i, n in enumerate(x.shape) if i not in ax)))
    r = mono(x, ax)
    return tree_util.unflatten(tree, [computation(r, to_array(inits[0], x.dtype) if not
                                                 isinstance(inits[0], Array) else inits[0])])
  ax = _axes(xs[0], dimensions, fn)
  keep = tuple(n for i, n in enumerate(xs[0].shape) if i not in ax)
  perm = [i for i in range(xs[0].ndim) if i not in ax] + list(ax)
  count = math.prod(xs[0].shape[i] for i in ax)
  flat = [Array(x.uop.permute(perm).reshape(keep + (count,)), x.weak_type) for x in xs]
  acc = tree_util.unflatten(tree, [Array(to_array(v, x.dtype).uop.broadcast(keep)) for v, x in zip(inits, xs)])
  for j in range(flat[0].shape[-1]):
    item = tree_util.unflatten(tree, [Array(f.uop.slice([(0, n, 1) for n in keep] + [(j, j + 1, 1)]).reshape(keep),
                                            f.weak_type) for f in flat])
    acc = computation(acc, item)
  return acc


def _arg(fn: str, operand, axis: int, index_dtype, op: Ops) -> Array:
  a = to_array(operand, fn=fn)
  ax = normalize_axis(axis, a.ndim, fn)
  it = dtypes.canonicalize(dtypes.as_dtype(index_dtype, fn))
  if not it.is_int: raise TypeError(f"{fn}: index_dtype must be an integer type, got {it}")
  u, n = a.uop, a.shape[ax]
  if n == 0: raise ValueError(f"{fn}: cannot take {fn} over the empty axis {ax} of shape {a.shape}")
  hit = u.alu(Ops.CMPEQ, u.reduce(op, (ax,)).broadcast(u.shape))
  if a.dtype.is_float: hit = hit.alu(Ops.OR, fm.isnan(u))
  r = hit.where(UOp.iota(u.shape, ax, it), UOp.const(it, n, u.shape)).reduce(Ops.REDUCE_MIN, (ax,))
  return Array(_drop(r, u.shape, (ax,)))


def argmax(operand, axis: int, index_dtype) -> Array:
  """The index of the first maximum along axis (of the first nan, if any), as jax.lax.argmax.

  >>> lax.argmax(tnp.array([1, 7, 7, 2]), 0, tnp.int32)
  Array(1, dtype=int32)
  """
  return _arg("argmax", operand, axis, index_dtype, Ops.REDUCE_MAX)


def argmin(operand, axis: int, index_dtype) -> Array:
  """The index of the first minimum along axis (of the first nan, if any), as jax.lax.argmin.

  >>> lax.argmin(tnp.array([3, 1, 1, 2]), 0, tnp.int32)
  Array(1, dtype=int32)
  """
  return _arg("argmin", operand, axis, index_dtype, Ops.REDUCE_MIN)


def _logaddexp_body(a: UOp, b: UOp) -> UOp:
  m = a.alu(Ops.MAX, b)
  d = fm.sub(a, b)
  r = fm.add(m, fm.log1p(fm.exp(-fm.fabs(d))))
  return fm.sel(fm.isnan(d), fm.add(a, b), r)


_logaddexp = fm.smooth(_logaddexp_body, lambda a, b, y: (fm.exp(fm.sub(a, y)), fm.exp(fm.sub(b, y))), "logaddexp")


def _scan(fn: str, operand, axis: int, reverse: bool, kind: str, combine, identity) -> Array:
  a = to_array(operand, fn=fn)
  E.check_kind(fn, a.dtype, kind)
  ax = normalize_axis(axis, a.ndim, fn)
  u = a.uop.flip((ax,)) if reverse else a.uop
  n, k = u.shape[ax], 1
  while k < n:
    front = UOp.const(u.dtype, identity(u.dtype), tuple(k if i == ax else m for i, m in enumerate(u.shape)))
    shifted = UOp.concat([front, u.slice([(0, m - k if i == ax else m, 1) for i, m in enumerate(u.shape)])], ax)
    u = combine(shifted, u)
    k *= 2
  return Array(u.flip((ax,)) if reverse else u, a.weak_type)


def cumsum(operand, axis: int = 0, reverse: bool = False) -> Array:
  """The running sum along axis (from the end when reverse), as jax.lax.cumsum.

  >>> lax.cumsum(tnp.array([1, 2, 3]), reverse=True)
  Array([6, 5, 3], dtype=int32)
  """
  return _scan("cumsum", operand, axis, reverse, "number", lambda s, u: s + u, lambda d: 0)


def cumprod(operand, axis: int = 0, reverse: bool = False) -> Array:
  """The running product along axis, as jax.lax.cumprod.

  >>> lax.cumprod(tnp.array([1, 2, 3]))
  Array([1, 2, 6], dtype=int32)
  """
  return _scan("cumprod", operand, axis, reverse, "number", lambda s, u: s * u, lambda d: 1)


def cummax(operand, axis: int = 0, reverse: bool = False) -> Array:
  """The running maximum along axis, as jax.lax.cummax.

  >>> lax.cummax(tnp.array([1, 3, 2]), reverse=True)
  Array([3, 3, 2], dtype=int32)
  """
  return _scan("cummax", operand, axis, reverse, "number", lambda s, u: u.alu(Ops.MAX, s), dtypes.min_value)


def cummin(operand, axis: int = 0, reverse: bool = False) -> Array:
  """The running minimum along axis, as jax.lax.cummin.

  >>> lax.cummin(tnp.array([3, 1, 2]))
  Array([3, 1, 1], dtype=int32)
  """
  return _scan("cummin", operand, axis, reverse, "number", lambda s, u: u.alu(Ops.MIN, s), dtypes.max_value)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False) -> Array:
  """The running log(sum(exp(x))) along axis, without overflow, as jax.lax.cumlogsumexp.

  >>> lax.cumlogsumexp(tnp.zeros(2))
  Array([0.       , 0.6931472], dtype=float32)
  """
  return _scan("cumlogsumexp", operand, axis, reverse, "float", _logaddexp, lambda d: float("-inf"))


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
  """The running fn-combination of elems (a pytree of arrays with one length along axis) for an associative fn, as
  jax.lax.associative_scan; log2(n) steps, each applying fn to every element and the one 2**k before it.

  >>> lax.associative_scan(lax.add, tnp.arange(1, 5))
  Array([ 1,  3,  6, 10], dtype=int32)
  """
  leaves, tree = tree_util.flatten(elems)
  xs = [to_array(x, fn="associative_scan") for x in leaves]
  if not xs: return elems
  ax = normalize_axis(axis, xs[0].ndim, "associative_scan")
  n = xs[0].shape[ax]
  if any(x.shape[ax] != n for x in xs):
    raise ValueError(f"associative_scan: every leaf of elems needs one length along axis {ax}, got "
                     f"{[x.shape[ax] for x in xs]}")
  if reverse: xs = [Array(x.uop.flip((ax,)), x.weak_type) for x in xs]
  k = 1
  while k < n:
    early = tree_util.unflatten(tree, [slice_in_dim(x, 0, n - k, axis=ax) for x in xs])
    late = tree_util.unflatten(tree, [slice_in_dim(x, k, n, axis=ax) for x in xs])
    done = tree_util.flatten(fn(early, late))[0]
    xs = [concatenate([slice_in_dim(x, 0, k, axis=ax), to_array(d)], ax) for x, d in zip(xs, done)]
    k *= 2
  if reverse: xs = [Array(x.uop.flip((ax,)), x.weak_type) for x in xs]
  return tree_util.unflatten(tree, xs)
