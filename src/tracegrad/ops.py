"""Segment reductions, as jax.ops: row i of data goes into segment segment_ids[i]; ids outside [0, num_segments) are
dropped (mode 'fill' or 'drop', the default) or clamped in (mode 'clip'). Each is one scatter, so grad, jvp and vmap
go through it. Unlike jax.ops, 64-bit ids are not cut to their low 32 bits first: 2**32 + 1 is out of range, not 1.

>>> import tracegrad.ops
>>> tracegrad.ops.segment_sum(tnp.arange(5.0), tnp.array([0, 0, 1, 2, 2]))
Array([1., 2., 7.], dtype=float32)
"""
from __future__ import annotations

import math
import operator

import numpy as np

from . import numpy as tnp
from .array import Array, to_array
from .errors import ConcretizationTypeError
from .ir import dtypes
from .lax import GatherScatterMode, ScatterDimensionNumbers, scatter_add, scatter_max, scatter_min, scatter_mul

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]

# name -> (scatter, reduction over buckets, identity for a dtype)
_KINDS = {
  "segment_sum": (scatter_add, tnp.sum, lambda d: 0),
  "segment_prod": (scatter_mul, tnp.prod, lambda d: 1),
  "segment_max": (scatter_max, tnp.max, dtypes.min_value),
  "segment_min": (scatter_min, tnp.min, dtypes.max_value),
}


def _count(num_segments, ids: Array, fn: str) -> int:
  if num_segments is None:
    if ids.is_traced:
      raise ConcretizationTypeError(f"{fn}: segment_ids are traced, so num_segments must be given (the output's "
                                    f"length cannot depend on their values)")
    if ids.size == 0: raise ValueError(f"{fn}: segment_ids are empty; pass num_segments")
    return max(int(np.max(np.asarray(ids))) + 1, 0)
  if isinstance(num_segments, Array):
    if num_segments.is_traced:
      raise ConcretizationTypeError(f"{fn}: num_segments must be a concrete integer, got a traced value")
    num_segments = num_segments.item()
  try:
    n = operator.index(num_segments)
  except TypeError:
    raise TypeError(f"{fn}: num_segments must be an integer, got {num_segments!r}") from None
  if n < 0: raise ValueError(f"{fn}: num_segments must be non-negative, got {n}")
  return n


def _segment(fn: str, data, segment_ids, num_segments, bucket_size, mode, out_sharding) -> Array:
  scatter, reduce, identity = _KINDS[fn]
  if out_sharding is not None:
    raise NotImplementedError(f"{fn}: out_sharding is not supported; place the result with device_put or jit's "
                              f"out_shardings")
  for i, a in enumerate((data, segment_ids)):
    if isinstance(a, (list, tuple)):
      raise TypeError(f"{fn} requires ndarray or scalar arguments, got {type(a).__name__} at position {i}; convert it "
                      f"with tracegrad.numpy.asarray first")
  x, ids = to_array(data, fn=fn), to_array(segment_ids, fn=fn)
  if not ids.dtype.is_int: raise TypeError(f"{fn}: segment_ids must be integers, got {ids.dtype}")
  if x.dtype.is_bool and fn in ("segment_sum", "segment_prod"):
    raise TypeError(f"{fn}: data must be numbers, got a bool array; cast it to an integer type")
  try:
    mode = GatherScatterMode.from_any(mode)
  except ValueError:
    raise ValueError(f"{fn}: mode must be 'fill', 'drop', 'clip', 'promise_in_bounds' or None, got {mode!r}") from None
  n = _count(num_segments, ids, fn)
  if ids.dtype.itemsize >= 4 and ids.dtype is not dtypes.int32:   # wide ids: bring them near [0, n) before int32
    ids = tnp.minimum(ids, n) if ids.dtype.is_unsigned else tnp.clip(ids, -1, n)
  ids = ids.astype(dtypes.int32)
  rest = x.shape[1:]
  if n == 0: return tnp.full((0,) + rest, identity(x.dtype), x.dtype)
  try:
    x = tnp.broadcast_to(x, ids.shape + rest)
  except ValueError:
    raise ValueError(f"{fn}: data of shape {x.shape} does not match segment_ids of shape {ids.shape} (data's first "
                     f"axis holds one row per segment id)") from None
  window = tuple(range(ids.ndim, x.ndim))
  if bucket_size is None:
    out = tnp.full((n,) + rest, identity(x.dtype), x.dtype)
    return scatter(out, ids[..., None], x, ScatterDimensionNumbers(window, (0,), (0,)), mode=mode)
  bucket_size = operator.index(bucket_size)
  if bucket_size < 1: raise ValueError(f"{fn}: bucket_size must be a positive integer, got {bucket_size}")
  # consecutive runs of bucket_size rows are reduced in a bucket each, then the buckets are reduced
  lead = ids.shape[0] if ids.ndim else 1
  bucket = (tnp.arange(lead, dtype=dtypes.int32) // bucket_size).reshape(ids.shape[:1] + (1,) * (ids.ndim - 1))
  idx = tnp.stack([tnp.broadcast_to(bucket, ids.shape), ids], -1)
  out = tnp.full((math.ceil(ids.size / bucket_size), n) + rest, identity(x.dtype), x.dtype)
  out = scatter(out, idx, x, ScatterDimensionNumbers(window, (0, 1), (0, 1)), mode=mode)
  return reduce(out, axis=0).astype(x.dtype)


def segment_sum(data, segment_ids, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode=None, out_sharding=None) -> Array:
  """The sums of data's rows over segments: out[s] = sum of data[i] with segment_ids[i] == s (0 where none).

  >>> tracegrad.ops.segment_sum(tnp.array([1, 2, 3]), tnp.array([1, 1, 3]), num_segments=4)
  Array([0, 3, 0, 3], dtype=int32)
  """
  return _segment("segment_sum", data, segment_ids, num_segments, bucket_size, mode, out_sharding)


def segment_prod(data, segment_ids, num_segments: int | None = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False, bucket_size: int | None = None, mode=None, out_sharding=None) -> Array:
  """The products of data's rows over segments (1 where none).

  >>> tracegrad.ops.segment_prod(tnp.array([2.0, 3.0, 4.0]), tnp.array([0, 0, 2]))
  Array([6., 1., 4.], dtype=float32)
  """
  return _segment("segment_prod", data, segment_ids, num_segments, bucket_size, mode, out_sharding)


def segment_max(data, segment_ids, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode=None, out_sharding=None) -> Array:
  """The maxima of data's rows over segments (-inf, the smallest integer or False where none).

  >>> tracegrad.ops.segment_max(tnp.array([2.0, 5.0, 4.0]), tnp.array([0, 0, 2]))
  Array([  5., -inf,   4.], dtype=float32)
  """
  return _segment("segment_max", data, segment_ids, num_segments, bucket_size, mode, out_sharding)


def segment_min(data, segment_ids, num_segments: int | None = None, indices_are_sorted: bool = False,
                unique_indices: bool = False, bucket_size: int | None = None, mode=None, out_sharding=None) -> Array:
  """The minima of data's rows over segments (inf, the largest integer or True where none).

  >>> tracegrad.ops.segment_min(tnp.array([2, 5, 4]), tnp.array([0, 0, 2]))
  Array([         2, 2147483647,          4], dtype=int32)
  """
  return _segment("segment_min", data, segment_ids, num_segments, bucket_size, mode, out_sharding)
