"""Slicing at run-time offsets, as jax.lax: dynamic_slice and dynamic_update_slice (start indices clamped so the
window fits, as XLA), their one-axis forms, and slice_in_dim, index_in_dim and index_take. A static start is an
ordinary slice; a traced one is a GATHER (or SCATTER) at an iota plus the clamped start, so grad, vmap and jit all
go through them.

>>> lax.dynamic_slice(tnp.arange(6), (4,), (3,))
Array([3, 4, 5], dtype=int32)
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import fmt
from .ops import _ints, normalize_axis, reshape, slice  # noqa: A004

__all__ = ["dynamic_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim", "dynamic_update_slice",
           "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim", "slice_in_dim", "index_in_dim", "index_take"]

_I32 = dtypes.int32


def _static(v) -> int | None:
  if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)): return int(v)
  if isinstance(v, Array) and not v.is_traced and v.shape == () and v.dtype.is_int: return int(v)
  return None


def _start_list(start_indices, ndim: int, fn: str) -> list:
  """start_indices (a sequence of scalars or a 1-d integer array) as one entry per axis."""
  if isinstance(start_indices, (Array, np.ndarray)):
    a = to_array(start_indices, fn=fn)
    if a.ndim != 1:
      raise TypeError(f"{fn}: start_indices must be a sequence of scalars or a 1-d array, got {a.aval_str()}")
    starts = [Array(a.uop.slice([(i, i + 1, 1)]).reshape(())) for i in range(a.shape[0])]
  else:
    starts = list(start_indices)
  if len(starts) != ndim:
    raise TypeError(f"{fn}: start_indices needs one index per axis of the operand ({ndim}), got {len(starts)}")
  return starts


def _clamped(starts: list, shape, sizes, fn: str, allow_negative: bool = True) -> list:
  """Each start as an int (static) or an int32 scalar UOp, wrapped when negative and clamped into [0, n - size]."""
  out = []
  for s, n, k in zip(starts, shape, sizes):
    v = _static(s)
    if v is not None:
      if v < 0 and allow_negative: v += n
      out.append(int(np.clip(v, 0, n - k)))
      continue
    a = to_array(s, fn=fn)
    if a.shape != () or not a.dtype.is_int:
      raise TypeError(f"{fn}: start indices must be integer scalars, got {a.aval_str()}")
    u = a.uop.cast(_I32) if a.dtype.itemsize <= 4 or not a.dtype.is_unsigned else a.uop.alu(
      Ops.MIN, UOp.const(a.dtype, n)).cast(_I32)
    if allow_negative and not a.dtype.is_unsigned:
      u = u.alu(Ops.CMPLT, UOp.const(_I32, 0)).where(u + UOp.const(_I32, n), u)
    out.append(u.alu(Ops.MAX, UOp.const(_I32, 0)).alu(Ops.MIN, UOp.const(_I32, n - k)))
  return out


def _window_indices(starts: list, sizes) -> UOp:
  """(*sizes, ndim) int32: start + offset along each axis, for a GATHER or SCATTER of the whole window."""
  sizes = tuple(sizes)
  cols = []
  for ax, s in enumerate(starts):
    base = s if isinstance(s, UOp) else UOp.const(_I32, s)
    cols.append((UOp.iota(sizes, ax, _I32) + base.broadcast(sizes)).reshape((*sizes, 1)))
  return UOp.concat(cols, len(sizes)) if cols else UOp.const(_I32, 0, (0,))


def dynamic_slice(operand, start_indices, slice_sizes: Sequence[int], *, allow_negative_indices: bool = True) -> Array:
  """The window of shape slice_sizes starting at start_indices (traced or not; negative ones count from the end, and
  each is clamped so the window fits), as jax.lax.dynamic_slice.

  >>> lax.dynamic_slice(tnp.arange(12).reshape(3, 4), (1, -2), (2, 2))
  Array([[ 6,  7],
         [10, 11]], dtype=int32)
  """
  fn = "dynamic_slice"
  a = to_array(operand, fn=fn)
  sizes = _ints(slice_sizes, fn, "slice_sizes")
  if len(sizes) != a.ndim or any(not 0 <= k <= n for k, n in zip(sizes, a.shape)):
    raise TypeError(f"{fn}: slice_sizes {sizes} must have one size per axis of shape {fmt(a.shape)}, each within it")
  starts = _clamped(_start_list(start_indices, a.ndim, fn), a.shape, sizes, fn, allow_negative_indices)
  if all(isinstance(s, int) for s in starts):
    return slice(a, starts, [s + k for s, k in zip(starts, sizes)])
  if a.ndim == 0: return a
  return Array(a.uop.gather(_window_indices(starts, sizes)), a.weak_type)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices: bool = True) -> Array:
  """operand with update written over the window at start_indices (clamped so update fits), as
  jax.lax.dynamic_update_slice.

  >>> lax.dynamic_update_slice(tnp.zeros(5), tnp.ones(2), (4,))
  Array([0., 0., 0., 1., 1.], dtype=float32)
  """
  fn = "dynamic_update_slice"
  a, u = to_array(operand, fn=fn), to_array(update, fn=fn)
  if u.weak_type and u.dtype is not a.dtype and (a.dtype.is_float or not u.dtype.is_float): u = to_array(u, a.dtype)
  if u.dtype is not a.dtype:
    raise TypeError(f"{fn}: update's dtype {u.dtype} differs from the operand's {a.dtype}")
  if u.ndim != a.ndim or any(k > n for k, n in zip(u.shape, a.shape)):
    raise TypeError(f"{fn}: update of shape {fmt(u.shape)} must have the operand's rank and fit in its shape "
                    f"{fmt(a.shape)}")
  starts = _clamped(_start_list(start_indices, a.ndim, fn), a.shape, u.shape, fn, allow_negative_indices)
  if a.ndim == 0: return Array(u.uop, a.weak_type)
  if all(isinstance(s, int) for s in starts):
    pads = [(s, n - s - k) for s, n, k in zip(starts, a.shape, u.shape)]
    inside = UOp.const(dtypes.bool_, True, u.shape).pad(pads)
    return Array(inside.where(u.uop.pad(pads), a.uop), a.weak_type)
  return Array(a.uop.scatter(_window_indices(starts, u.shape), u.uop, "set"), a.weak_type)


def _in_dim(a: Array, axis: int, fn: str) -> int: return normalize_axis(axis, a.ndim, fn)


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Array:
  """dynamic_slice along one axis, as jax.lax.dynamic_slice_in_dim.

  >>> lax.dynamic_slice_in_dim(tnp.arange(6), 2, 3)
  Array([2, 3, 4], dtype=int32)
  """
  a = to_array(operand, fn="dynamic_slice_in_dim")
  ax = _in_dim(a, axis, "dynamic_slice_in_dim")
  starts = [0] * a.ndim
  starts[ax] = start_index
  sizes = list(a.shape)
  sizes[ax] = operator.index(slice_size)
  return dynamic_slice(a, starts, sizes, allow_negative_indices=allow_negative_indices)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True) -> Array:
  """The entry at index along axis (its axis kept with size 1 unless keepdims=False), as
  jax.lax.dynamic_index_in_dim.

  >>> lax.dynamic_index_in_dim(tnp.arange(6).reshape(2, 3), 1, keepdims=False)
  Array([3, 4, 5], dtype=int32)
  """
  a = to_array(operand, fn="dynamic_index_in_dim")
  ax = _in_dim(a, axis, "dynamic_index_in_dim")
  out = dynamic_slice_in_dim(a, index, 1, ax)
  return out if keepdims else reshape(out, a.shape[:ax] + a.shape[ax + 1:])


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int) -> Array:
  """dynamic_update_slice along one axis (update starts at 0 elsewhere), as jax.lax.dynamic_update_slice_in_dim.

  >>> lax.dynamic_update_slice_in_dim(tnp.zeros(4, tnp.int32), tnp.ones(2, tnp.int32), 1, 0)
  Array([0, 1, 1, 0], dtype=int32)
  """
  a = to_array(operand, fn="dynamic_update_slice_in_dim")
  ax = _in_dim(a, axis, "dynamic_update_slice_in_dim")
  starts = [0] * a.ndim
  starts[ax] = start_index
  return dynamic_update_slice(a, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis: int) -> Array:
  """operand with update (with or without the axis of size 1) written at index along axis, as
  jax.lax.dynamic_update_index_in_dim.

  >>> lax.dynamic_update_index_in_dim(tnp.zeros((2, 2)), tnp.ones(2), 1, 0)
  Array([[0., 0.],
         [1., 1.]], dtype=float32)
  """
  fn = "dynamic_update_index_in_dim"
  a, u = to_array(operand, fn=fn), to_array(update, fn=fn)
  ax = _in_dim(a, axis, fn)
  if u.ndim == a.ndim - 1: u = reshape(u, u.shape[:ax] + (1,) + u.shape[ax:])
  return dynamic_update_slice_in_dim(a, u, index, ax)


def slice_in_dim(operand, start_index: int | None, limit_index: int | None, stride: int = 1, axis: int = 0) -> Array:
  """operand[start:limit:stride] along axis (None means the end; negative indices count from the end), as
  jax.lax.slice_in_dim.

  >>> lax.slice_in_dim(tnp.arange(8), 1, -1, 2)
  Array([1, 3, 5], dtype=int32)
  """
  fn = "slice_in_dim"
  a = to_array(operand, fn=fn)
  ax = _in_dim(a, axis, fn)
  n = a.shape[ax]
  lo = 0 if start_index is None else operator.index(start_index)
  hi = n if limit_index is None else operator.index(limit_index)
  lo, hi = lo + n if lo < 0 else lo, hi + n if hi < 0 else hi
  start, limit, strides = [0] * a.ndim, list(a.shape), [1] * a.ndim
  start[ax], limit[ax], strides[ax] = lo, hi, operator.index(stride)
  return slice(a, start, limit, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True) -> Array:
  """The entry at a static index along axis (negative counts from the end), as jax.lax.index_in_dim.

  >>> lax.index_in_dim(tnp.arange(6).reshape(2, 3), -1, axis=1, keepdims=False)
  Array([2, 5], dtype=int32)
  """
  fn = "index_in_dim"
  a = to_array(operand, fn=fn)
  ax = _in_dim(a, axis, fn)
  i, n = operator.index(index), a.shape[ax]
  if not -n <= i < n: raise IndexError(f"{fn}: index {i} is out of bounds for axis {ax} of size {n}")
  out = slice_in_dim(a, i % n, i % n + 1, 1, ax)
  return out if keepdims else reshape(out, a.shape[:ax] + a.shape[ax + 1:])


def index_take(src, idxs: Sequence, axes: Sequence[int]) -> Array:
  """src at the integer index arrays idxs (one per axis in axes, broadcast together) along those axes, the index
  dimensions first, as jax.lax.index_take.

  >>> lax.index_take(tnp.arange(6).reshape(2, 3), (tnp.array([1, 0]),), (1,))
  Array([[1, 4],
         [0, 3]], dtype=int32)
  """
  fn = "index_take"
  a = to_array(src, fn=fn)
  axes = [normalize_axis(ax, a.ndim, fn, "axes") for ax in _ints(axes, fn, "axes")]
  idx = [to_array(i, fn=fn) for i in idxs]
  if len(idx) != len(axes):
    raise ValueError(f"{fn}: idxs and axes must have one length, got {len(idx)} and {len(axes)}")
  if any(not i.dtype.is_int for i in idx): raise TypeError(f"{fn}: idxs must be integer arrays")
  shape = np.broadcast_shapes(*(i.shape for i in idx)) if idx else ()
  rest = [ax for ax in range(a.ndim) if ax not in axes]
  x = a.uop.permute(axes + rest)
  cols = []
  for i, ax in zip(idx, axes):
    u = i.uop.cast(_I32)
    u = u.alu(Ops.CMPLT, UOp.const(_I32, 0, u.shape)).where(u + UOp.const(_I32, a.shape[ax], u.shape), u)
    cols.append(u.reshape((1,) * (len(shape) - i.ndim) + i.shape).broadcast(shape).reshape((*shape, 1)))
  if not cols: return a
  return Array(x.gather(UOp.concat(cols, len(shape))), a.weak_type)
