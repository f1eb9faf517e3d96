"""The jax.lax operations the rest of tracegrad.lax is written with, each a few IR nodes: elementwise arithmetic on
operands of one dtype (no promotion, as jax.lax; a Python number takes the other operand's dtype, and a scalar is
broadcast), dtype conversion, broadcasting, reshaping, transposing, slicing, padding and summing.

>>> lax.pad(tnp.array([1, 2, 3]), 0, [(1, 2, 1)])
Array([0, 1, 0, 2, 0, 3, 0, 0], dtype=int32)
"""
from __future__ import annotations

import builtins
import itertools
import math
import operator
from typing import Sequence

import numpy as np
from numpy.exceptions import AxisError

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import fmt

__all__ = ["add", "sub", "mul", "max", "min", "convert_element_type", "broadcast_in_dim", "reshape", "transpose",
           "slice", "pad", "reduce_sum"]


def normalize_axis(axis, ndim: int, fn: str, name: str = "axis") -> int:
  """axis (negative counts from the end) as an index into ndim axes; numpy's AxisError (a ValueError and an
  IndexError) when out of range."""
  if not isinstance(axis, int) and not hasattr(axis, "__index__"):
    raise TypeError(f"{fn}: {name} must be an int, got {type(axis).__name__}")
  axis = int(axis.__index__())
  if not -ndim <= axis < ndim:
    raise AxisError(f"{fn}: {name} {axis} is out of bounds for an array of dimension {ndim}")
  return axis % ndim if ndim else 0


def _ints(v, fn: str, name: str) -> tuple[int, ...]:
  try:
    return tuple(operator.index(e) for e in v)
  except TypeError:
    raise TypeError(f"{fn}: {name} must be a sequence of ints, got {v!r}") from None


def _weak_scalar(v) -> bool: return isinstance(v, (int, float, complex)) and not isinstance(v, (bool, np.generic))


def _like(v, ref: Array, fn: str) -> Array:
  """v as an Array; a Python number takes ref's dtype (a float only an inexact one, a complex only a complex one) and
  stays weak."""
  if _weak_scalar(v) and (ref.dtype.is_complex or not isinstance(v, complex)) and \
      (ref.dtype.is_inexact or not isinstance(v, float)):
    return Array(to_array(v, ref.dtype, fn).uop, True)
  return to_array(v, fn=fn)


def _binary(fn: str, op: Ops, x, y, bool_op: Ops | None) -> Array:
  """op on x and y of one dtype (a Python number takes the other's) and one shape (a scalar is broadcast)."""
  a = None if _weak_scalar(x) and not _weak_scalar(y) else to_array(x, fn=fn)
  b = to_array(y, fn=fn) if a is None else _like(y, a, fn)
  if a is None: a = _like(x, b, fn)
  if a.dtype is not b.dtype:
    raise TypeError(f"{fn}: the operands must have one dtype, got {a.dtype} and {b.dtype}; lax does not promote "
                    f"(convert one with lax.convert_element_type)")
  shape = a.shape if b.shape == () else b.shape
  if a.shape not in ((), shape):
    raise ValueError(f"{fn}: the operands must have one shape (or be scalars), got {fmt(a.shape)} and {fmt(b.shape)}")
  if a.dtype.is_bool and bool_op is None: raise TypeError(f"{fn}: not defined on bool operands")
  return Array(a.uop.broadcast(shape).alu(bool_op if a.dtype.is_bool else op, b.uop.broadcast(shape)),
               a.weak_type and b.weak_type)


def add(x, y) -> Array:
  """x + y elementwise (or, on bools), as jax.lax.add.

  >>> lax.add(tnp.arange(3.0), 1)
  Array([1., 2., 3.], dtype=float32)
  """
  return _binary("add", Ops.ADD, x, y, Ops.OR)


def sub(x, y) -> Array:
  """x - y elementwise, as jax.lax.sub.

  >>> lax.sub(tnp.arange(3), tnp.ones(3, tnp.int32))
  Array([-1,  0,  1], dtype=int32)
  """
  return _binary("sub", Ops.SUB, x, y, None)


def mul(x, y) -> Array:
  """x * y elementwise (and, on bools), as jax.lax.mul.

  >>> lax.mul(tnp.arange(3), 2)
  Array([0, 2, 4], dtype=int32)
  """
  return _binary("mul", Ops.MUL, x, y, Ops.AND)


def max(x, y) -> Array:  # noqa: A001
  """The elementwise maximum, nan if either is nan, as jax.lax.max.

  >>> lax.max(tnp.array([1.0, tnp.nan]), 2.0)
  Array([ 2., nan], dtype=float32)
  """
  return _binary("max", Ops.MAX, x, y, Ops.OR)


def min(x, y) -> Array:  # noqa: A001
  """The elementwise minimum, nan if either is nan, as jax.lax.min.

  >>> lax.min(tnp.arange(3), 1)
  Array([0, 1, 1], dtype=int32)
  """
  return _binary("min", Ops.MIN, x, y, Ops.AND)


def convert_element_type(operand, new_dtype) -> Array:
  """operand's values converted to new_dtype (floats to integers truncate), as jax.lax.convert_element_type.

  >>> lax.convert_element_type(tnp.array([1.7, -1.7]), tnp.int32)
  Array([ 1, -1], dtype=int32)
  """
  fn = "convert_element_type"
  return Array(to_array(operand, fn=fn).uop.cast(dtypes.canonicalize(dtypes.as_dtype(new_dtype, fn))))


def broadcast_in_dim(operand, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Array:
  """operand broadcast to shape, its axis i becoming axis broadcast_dimensions[i] (strictly increasing; of size 1
  or the target's), as jax.lax.broadcast_in_dim.

  >>> lax.broadcast_in_dim(tnp.arange(2), (2, 3), (0,))
  Array([[0, 0, 0],
         [1, 1, 1]], dtype=int32)
  """
  fn = "broadcast_in_dim"
  a = to_array(operand, fn=fn)
  shape, dims = _ints(shape, fn, "shape"), _ints(broadcast_dimensions, fn, "broadcast_dimensions")
  if (len(dims) != a.ndim or any(not 0 <= d < len(shape) for d in dims) or list(dims) != sorted(set(dims))
      or any(n not in (1, shape[d]) for n, d in zip(a.shape, dims))):
    raise ValueError(f"{fn}: cannot put the axes of shape {fmt(a.shape)} at dimensions {dims} of shape {fmt(shape)}")
  kept = [1] * len(shape)
  for n, d in zip(a.shape, dims): kept[d] = n
  return Array(a.uop.reshape(tuple(kept)).broadcast(shape), a.weak_type)


def reshape(operand, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None) -> Array:
  """operand's elements in row-major order (after transposing by dimensions, if given) in shape new_sizes, as
  jax.lax.reshape.

  >>> lax.reshape(tnp.arange(6), (2, 3))
  Array([[0, 1, 2],
         [3, 4, 5]], dtype=int32)
  """
  a = to_array(operand, fn="reshape") if dimensions is None else transpose(operand, dimensions)
  shape = _ints(new_sizes, "reshape", "new_sizes")
  if any(n < 0 for n in shape) or math.prod(shape) != a.size:
    raise ValueError(f"reshape: cannot reshape an array of shape {fmt(a.shape)} into shape {fmt(shape)}")
  return Array(a.uop.reshape(shape), a.weak_type)


def transpose(operand, permutation: Sequence[int]) -> Array:
  """operand with axis permutation[i] as its axis i, as jax.lax.transpose.

  >>> lax.transpose(tnp.ones((2, 3, 4)), (2, 0, 1)).shape
  (4, 2, 3)
  """
  a = to_array(operand, fn="transpose")
  perm = _ints(permutation, "transpose", "permutation")
  if sorted(perm) != list(range(a.ndim)):
    raise ValueError(f"transpose: {perm} is not a permutation of the axes of an array of shape {fmt(a.shape)}")
  return Array(a.uop.permute(perm), a.weak_type)


def slice(operand, start_indices: Sequence[int], limit_indices: Sequence[int],  # noqa: A001
          strides: Sequence[int] | None = None) -> Array:
  """operand[start:limit:stride] along every axis, as jax.lax.slice.

  >>> lax.slice(tnp.arange(10), (1,), (8,), (3,))
  Array([1, 4, 7], dtype=int32)
  """
  a = to_array(operand, fn="slice")
  start, limit = _ints(start_indices, "slice", "start_indices"), _ints(limit_indices, "slice", "limit_indices")
  step = (1,) * a.ndim if strides is None else _ints(strides, "slice", "strides")
  if (not len(start) == len(limit) == len(step) == a.ndim
      or any(not 0 <= s <= e <= n or k < 1 for s, e, k, n in zip(start, limit, step, a.shape))):
    raise ValueError(f"slice: start_indices {start}, limit_indices {limit} and strides {step} do not fit shape "
                     f"{fmt(a.shape)} (0 <= start <= limit <= size and stride >= 1 on each axis)")
  return Array(a.uop.slice(zip(start, limit, step)), a.weak_type)


def _zero(v: Array) -> bool:
  if v.is_traced: return False
  x = np.asarray(v).astype(np.float64)
  return bool(x == 0 and not np.signbit(x))


def pad_constant(u: UOp, pads, values=None) -> UOp:
  """u padded by one (low, high) pair of widths per axis, with one (low, high) pair of scalar constants per axis
  (values None: zeros)."""
  if values is None: return u.pad(pads)
  for ax, ((lo, hi), ends) in enumerate(zip(pads, values)):
    block = lambda c, k: c.reshape((1,) * u.ndim).broadcast(u.shape[:ax] + (k,) + u.shape[ax + 1:])
    u = UOp.concat(([block(ends[0], lo)] if lo else []) + [u] + ([block(ends[1], hi)] if hi else []), ax)
  return u


def pad(operand, padding_value, padding_config: Sequence[Sequence[int]]) -> Array:
  """operand with interior copies of padding_value between neighbours and low and high ones at the ends, one
  (low, high, interior) triple per axis (negative low or high crop), as jax.lax.pad.

  >>> lax.pad(tnp.arange(1.0, 5.0), -1.0, [(-1, 1, 0)])
  Array([ 2.,  3.,  4., -1.], dtype=float32)
  """
  a = to_array(operand, fn="pad")
  v = _like(padding_value, a, "pad")
  if v.shape != (): raise ValueError(f"pad: padding_value must be a scalar, got shape {fmt(v.shape)}")
  if v.dtype is not a.dtype:
    raise TypeError(f"pad: padding_value's dtype {v.dtype} differs from the operand's {a.dtype}")
  config = [_ints(c, "pad", "padding_config") for c in padding_config]
  if len(config) != a.ndim or any(len(c) != 3 or c[2] < 0 for c in config):
    raise ValueError(f"pad: padding_config needs one (low, high, interior >= 0) triple per axis of shape "
                     f"{fmt(a.shape)}, got {padding_config!r}")
  if any(n + lo + hi + builtins.max(n - 1, 0) * i < 0 for n, (lo, hi, i) in zip(a.shape, config)):
    raise ValueError(f"pad: padding_config {padding_config!r} crops more than shape {fmt(a.shape)} holds")
  u, value = a.uop, None if _zero(v) else v.uop
  fill = lambda u, pads: pad_constant(u, pads, None if value is None else [(value, value)] * len(pads))
  if any(i for _, _, i in config):  # each axis gets a unit axis after it, padded to interior + 1, then merged
    u = u.reshape(tuple(itertools.chain.from_iterable((n, 1) for n in a.shape)))
    u = fill(u, [p for _, _, i in config for p in ((0, 0), (0, i))])
    u = u.reshape(tuple(n * (i + 1) for n, (_, _, i) in zip(a.shape, config)))
    u = u.slice([(0, builtins.max(0, (n - 1) * (i + 1) + 1), 1) for n, (_, _, i) in zip(a.shape, config)])
  u = fill(u, [(builtins.max(lo, 0), builtins.max(hi, 0)) for lo, hi, _ in config])
  crop = [(builtins.max(-lo, 0), n - builtins.max(-hi, 0), 1) for n, (lo, hi, _) in zip(u.shape, config)]
  return Array(u.slice(crop), a.weak_type)


def reduce_sum(operand, axes: Sequence[int]) -> Array:
  """The sum over axes, which are removed, in operand's dtype (or, on bools; float16 and bfloat16 add in float32),
  as jax.lax.reduce_sum.

  >>> lax.reduce_sum(tnp.ones((2, 3)), (1,))
  Array([3., 3.], dtype=float32)
  """
  a = to_array(operand, fn="reduce_sum")
  axes = tuple(sorted({normalize_axis(ax, a.ndim, "reduce_sum", "axes") for ax in _ints(axes, "reduce_sum", "axes")}))
  u, d = a.uop, a.dtype
  wide = dtypes.float32 if d in (dtypes.float16, dtypes.bfloat16) else d
  r = u.reduce(Ops.REDUCE_MAX, axes) if d.is_bool else u.cast(wide).reduce(Ops.REDUCE_SUM, axes).cast(d)
  return Array(r.reshape(tuple(n for i, n in enumerate(u.shape) if i not in axes)), a.weak_type)

