"""Making and reshaping arrays, as jax.lax: iotas and fills, broadcasting, adding and removing unit axes,
concatenating, stacking, splitting, tiling and reversing. No dtype promotion: concatenate wants one dtype.

>>> lax.broadcasted_iota(tnp.int32, (2, 3), 1)
Array([[0, 1, 2],
       [0, 1, 2]], dtype=int32)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..array import Array, to_array
from ..ir import UOp, dtypes
from ..ir import broadcast_shapes as _broadcast_shapes
from ..ir.shapes import fmt
from .ops import _ints, broadcast_in_dim, normalize_axis, reshape, slice  # noqa: A004

__all__ = ["broadcast", "broadcast_to_rank", "broadcast_shapes", "broadcast_like", "iota", "broadcasted_iota", "full",
           "full_like", "empty", "dtype", "expand_dims", "squeeze", "collapse", "concatenate", "stack", "unstack",
           "split", "tile", "rev"]


def _dtype(d, fn: str):
  return dtypes.canonicalize(dtypes.as_dtype(d, fn))


def broadcast(operand, sizes: Sequence[int]) -> Array:
  """operand with new leading axes of the given sizes, as jax.lax.broadcast.

  >>> lax.broadcast(tnp.arange(2), (3,)).shape
  (3, 2)
  """
  a = to_array(operand, fn="broadcast")
  sizes = _ints(sizes, "broadcast", "sizes")
  return broadcast_in_dim(a, sizes + a.shape, tuple(range(len(sizes), len(sizes) + a.ndim)))


def broadcast_to_rank(x, rank: int) -> Array:
  """x with leading unit axes up to rank, as jax.lax.broadcast_to_rank.

  >>> lax.broadcast_to_rank(tnp.arange(2), 3).shape
  (1, 1, 2)
  """
  a = to_array(x, fn="broadcast_to_rank")
  if rank < a.ndim: raise ValueError(f"broadcast_to_rank: rank {rank} is below the rank of shape {fmt(a.shape)}")
  return broadcast(a, (1,) * (rank - a.ndim))


def broadcast_shapes(*shapes) -> tuple[int, ...]:
  """The shape the given shapes broadcast to (numpy's rules), as jax.lax.broadcast_shapes.

  >>> lax.broadcast_shapes((2, 1), (3,))
  (2, 3)
  """
  return tuple(_broadcast_shapes(*(tuple(s) for s in shapes)))


def broadcast_like(arr, like_arr) -> Array:
  """arr broadcast to like_arr's shape (leading axes added), as jax.lax.broadcast_like.

  >>> lax.broadcast_like(tnp.arange(2), tnp.zeros((3, 2))).shape
  (3, 2)
  """
  a, like = to_array(arr, fn="broadcast_like"), to_array(like_arr, fn="broadcast_like")
  return broadcast_in_dim(a, like.shape, tuple(range(like.ndim - a.ndim, like.ndim)))


def iota(dtype, size: int) -> Array:
  """0, 1, ..., size - 1 in dtype, as jax.lax.iota.

  >>> lax.iota(tnp.float32, 3)
  Array([0., 1., 2.], dtype=float32)
  """
  return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int) -> Array:
  """The index along dimension at each position of shape, in dtype, as jax.lax.broadcasted_iota.

  >>> lax.broadcasted_iota(tnp.int32, (2, 2), 0)
  Array([[0, 0],
         [1, 1]], dtype=int32)
  """
  fn = "broadcasted_iota"
  shape = _ints(shape, fn, "shape")
  d = _dtype(dtype, fn)
  ax = normalize_axis(dimension, len(shape), fn, "dimension")
  return Array(UOp.iota(shape, ax, d) if d.is_int else UOp.iota(shape, ax, dtypes.int32).cast(d))


def full(shape: Sequence[int], fill_value, dtype=None) -> Array:
  """An array of shape filled with fill_value (a scalar), in dtype or fill_value's, as jax.lax.full.

  >>> lax.full((2,), 7, tnp.float32)
  Array([7., 7.], dtype=float32)
  """
  fn = "full"
  shape = _ints(shape, fn, "shape")
  v = to_array(fill_value, None if dtype is None else _dtype(dtype, fn), fn)
  if v.shape != (): raise TypeError(f"{fn}: fill_value must be a scalar, got shape {fmt(v.shape)}")
  return Array(v.uop.broadcast(shape), v.weak_type and dtype is None)


def full_like(x, fill_value, dtype=None, shape=None) -> Array:
  """An array like x (its shape and dtype unless given) filled with fill_value, as jax.lax.full_like.

  >>> lax.full_like(tnp.zeros((2,), tnp.int32), 3)
  Array([3, 3], dtype=int32)
  """
  a = x if hasattr(x, "shape") and hasattr(x, "dtype") else to_array(x, fn="full_like")
  d = _dtype(a.dtype if dtype is None else dtype, "full_like")
  return full(a.shape if shape is None else shape, fill_value, d)


def empty(shape, dtype) -> Array:
  """An array of shape and dtype (zeros), as jax.lax.empty.

  >>> lax.empty((2,), tnp.float32)
  Array([0., 0.], dtype=float32)
  """
  return full(shape, 0, dtype)


def dtype(x):
  """The dtype x has as an array (Python scalars: the default types), as jax.lax.dtype.

  >>> lax.dtype(1.0)
  dtype('float32')
  """
  if isinstance(x, (type, np.dtype, str, dtypes.DType)): return _dtype(x, "dtype").np
  return to_array(x, fn="dtype").dtype.np


def expand_dims(array, dimensions: Sequence[int]) -> Array:
  """array with unit axes inserted at dimensions (of the result), as jax.lax.expand_dims.

  >>> lax.expand_dims(tnp.arange(3), (0, 2)).shape
  (1, 3, 1)
  """
  fn = "expand_dims"
  a = to_array(array, fn=fn)
  n = a.ndim + len(dimensions)
  dims = sorted({normalize_axis(d, n, fn, "dimensions") for d in _ints(dimensions, fn, "dimensions")})
  if len(dims) != len(dimensions): raise ValueError(f"{fn}: repeated dimensions {tuple(dimensions)}")
  shape, it = [], iter(a.shape)
  for i in range(n): shape.append(1 if i in dims else next(it))
  return reshape(a, shape)


def squeeze(array, dimensions: Sequence[int]) -> Array:
  """array without the unit axes at dimensions, as jax.lax.squeeze.

  >>> lax.squeeze(tnp.zeros((1, 3, 1)), (0, 2)).shape
  (3,)
  """
  fn = "squeeze"
  a = to_array(array, fn=fn)
  dims = {normalize_axis(d, a.ndim, fn, "dimensions") for d in _ints(dimensions, fn, "dimensions")}
  if any(a.shape[d] != 1 for d in dims):
    raise ValueError(f"{fn}: dimensions {tuple(dimensions)} must all have size 1 in shape {fmt(a.shape)}")
  return reshape(a, [n for i, n in enumerate(a.shape) if i not in dims])


def collapse(operand, start_dimension: int, stop_dimension: int | None = None) -> Array:
  """operand with axes start_dimension to stop_dimension (exclusive; None: the end) merged into one, as
  jax.lax.collapse.

  >>> lax.collapse(tnp.zeros((2, 3, 4)), 1).shape
  (2, 12)
  """
  a = to_array(operand, fn="collapse")
  lo = start_dimension + a.ndim if start_dimension < 0 else start_dimension
  hi = a.ndim if stop_dimension is None else stop_dimension + a.ndim if stop_dimension < 0 else stop_dimension
  if not 0 <= lo <= hi <= a.ndim:
    raise ValueError(f"collapse: dimensions {start_dimension} to {stop_dimension} do not fit shape {fmt(a.shape)}")
  return reshape(a, a.shape[:lo] + (int(np.prod(a.shape[lo:hi])),) + a.shape[hi:])


def concatenate(operands, dimension: int) -> Array:
  """operands (of one dtype and rank, equal but along dimension) joined along dimension, as jax.lax.concatenate.

  >>> lax.concatenate([tnp.zeros(2), tnp.ones(1)], 0)
  Array([0., 0., 1.], dtype=float32)
  """
  fn = "concatenate"
  arrs = [to_array(o, fn=fn) for o in operands]
  if not arrs: raise ValueError(f"{fn}: needs at least one operand")
  if any(a.dtype is not arrs[0].dtype for a in arrs):
    raise TypeError(f"{fn}: the operands must have one dtype, got {', '.join(str(a.dtype) for a in arrs)}")
  if arrs[0].ndim == 0: raise TypeError(f"{fn}: cannot concatenate scalars")
  ax = normalize_axis(dimension, arrs[0].ndim, fn, "dimension")
  if any(a.ndim != arrs[0].ndim or a.shape[:ax] + a.shape[ax + 1:] != arrs[0].shape[:ax] + arrs[0].shape[ax + 1:]
         for a in arrs):
    raise TypeError(f"{fn}: the operands' shapes must agree except along dimension {ax}, got "
                    f"{', '.join(fmt(a.shape) for a in arrs)}")
  return Array(UOp.concat([a.uop for a in arrs], ax), all(a.weak_type for a in arrs))


def stack(operands, axis: int = 0) -> Array:
  """operands (of one shape and dtype) stacked along a new axis, as jax.lax.stack.

  >>> lax.stack([tnp.zeros(2), tnp.ones(2)], 1).shape
  (2, 2)
  """
  arrs = [to_array(o, fn="stack") for o in operands]
  if not arrs: raise ValueError("stack: needs at least one operand")
  if any(a.shape != arrs[0].shape for a in arrs):
    raise TypeError(f"stack: the operands must have one shape, got {', '.join(fmt(a.shape) for a in arrs)}")
  ax = normalize_axis(axis, arrs[0].ndim + 1, "stack")
  return concatenate([expand_dims(a, (ax,)) for a in arrs], ax)


def unstack(x, axis: int = 0) -> tuple[Array, ...]:
  """The slices of x along axis, as a tuple, as jax.lax.unstack.

  >>> lax.unstack(tnp.arange(4).reshape(2, 2))
  (Array([0, 1], dtype=int32), Array([2, 3], dtype=int32))
  """
  a = to_array(x, fn="unstack")
  ax = normalize_axis(axis, a.ndim, "unstack")
  rest = a.shape[:ax] + a.shape[ax + 1:]
  cut = lambda i: slice(a, [i if j == ax else 0 for j in range(a.ndim)],
                        [i + 1 if j == ax else n for j, n in enumerate(a.shape)])
  return tuple(reshape(cut(i), rest) for i in range(a.shape[ax]))


def split(operand, sizes: Sequence[int], axis: int = 0) -> list[Array]:
  """operand cut along axis into pieces of the given sizes (which sum to its size), as jax.lax.split.

  >>> [p.shape for p in lax.split(tnp.arange(5), (2, 3))]
  [(2,), (3,)]
  """
  fn = "split"
  a = to_array(operand, fn=fn)
  ax = normalize_axis(axis, a.ndim, fn)
  sizes = _ints(sizes, fn, "sizes")
  if sum(sizes) != a.shape[ax] or any(s < 0 for s in sizes):
    raise ValueError(f"{fn}: sizes {sizes} must be non-negative and sum to the size {a.shape[ax]} of axis {ax}")
  out, at = [], 0
  for s in sizes:
    out.append(slice(a, [at if j == ax else 0 for j in range(a.ndim)],
                     [at + s if j == ax else n for j, n in enumerate(a.shape)]))
    at += s
  return out


def tile(operand, reps: Sequence[int]) -> Array:
  """operand repeated reps[i] times along axis i (reps of its rank), as jax.lax.tile.

  >>> lax.tile(tnp.arange(2), (3,))
  Array([0, 1, 0, 1, 0, 1], dtype=int32)
  """
  a = to_array(operand, fn="tile")
  reps = _ints(reps, "tile", "reps")
  if len(reps) != a.ndim: raise ValueError(f"tile: reps {reps} needs one entry per axis of shape {fmt(a.shape)}")
  big = tuple(x for r, n in zip(reps, a.shape) for x in (r, n))
  b = broadcast_in_dim(a, big, tuple(range(1, 2 * a.ndim, 2)))
  return reshape(b, tuple(r * n for r, n in zip(reps, a.shape)))


def rev(operand, dimensions: Sequence[int]) -> Array:
  """operand reversed along dimensions, as jax.lax.rev.

  >>> lax.rev(tnp.arange(3), (0,))
  Array([2, 1, 0], dtype=int32)
  """
  a = to_array(operand, fn="rev")
  dims = tuple(sorted({normalize_axis(d, a.ndim, "rev", "dimensions") for d in _ints(dimensions, "rev", "dimensions")}))
  return Array(a.uop.flip(dims), a.weak_type)

