"""Statistics of a sample, as jax.scipy.stats: mode, rankdata and sem.

>>> tracegrad.scipy.stats.rankdata(tnp.asarray([30, 10, 20, 10]))
Array([4. , 1.5, 3. , 1.5], dtype=float32)
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ... import lax
from ... import numpy as tnp
from ...array import Array
from ...ir import dtypes
from ...numpy.core import normalize_axis
from .promote import float_dtype

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


class ModeResult(NamedTuple):
  """What mode returns: the most common value and how often it occurs."""
  mode: Array
  count: Array


def _check_nan_policy(fn: str, nan_policy: str) -> None:
  if nan_policy not in _NAN_POLICIES:
    raise ValueError(f"{fn}: illegal nan_policy {nan_policy!r}; expected one of {_NAN_POLICIES}")
  if nan_policy != "propagate":
    raise NotImplementedError(f"{fn}: nan_policy={nan_policy!r} is not supported (its result's shape would depend on "
                              "the data); check for NaN before the call, or use nan_policy='propagate'")


def _runs(s: Array) -> tuple[Array, Array, Array]:
  """For s sorted along its last axis, NaNs last: where each run of equal values starts, and at each position the
  index its run starts at and the index after its run ends."""
  n = s.shape[-1]
  last = s.ndim - 1
  same = s[..., 1:] == s[..., :-1]
  if s.dtype.is_float: same = same | (tnp.isnan(s[..., 1:]) & tnp.isnan(s[..., :-1]))
  edge = tnp.ones(s.shape[:-1] + (1,), bool)
  starts, ends = tnp.concatenate([edge, ~same], axis=-1), tnp.concatenate([~same, edge], axis=-1)
  i = tnp.arange(n)
  first = lax.cummax(tnp.where(starts, i, 0), axis=last)
  stop = lax.cummin(tnp.where(ends, i + 1, n), axis=last, reverse=True)
  return starts, first, stop


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False) -> ModeResult:
  """The most common value along axis (the smallest of those tied; NaNs count as one value) and how often it occurs.

  >>> tracegrad.scipy.stats.mode(tnp.asarray([3, 1, 3, 2, 1, 3]))
  ModeResult(mode=Array(3, dtype=int32), count=Array(3, dtype=int32))
  """
  _check_nan_policy("mode", nan_policy)
  x = tnp.atleast_1d(tnp.asarray(a))
  if axis is None:
    shape = (1,) * x.ndim if keepdims else ()
    x = x.reshape(1, x.size)
  else:
    axis = normalize_axis(axis, x.ndim, "mode")
    shape = x.shape[:axis] + ((1,) if keepdims else ()) + x.shape[axis + 1:]
    x = tnp.moveaxis(x, axis, -1).reshape(math.prod(shape), x.shape[axis])
  if x.shape[-1] == 0:
    return ModeResult(tnp.full(shape, tnp.nan, dtypes.default_float()), tnp.zeros(shape, dtypes.default_float()))
  s = tnp.sort(x, axis=-1)
  _, first, stop = _runs(s)
  count = stop - first
  best = tnp.argmax(count, axis=-1)[:, None]
  value = tnp.take_along_axis(s, best, axis=-1)
  return ModeResult(value.reshape(shape), tnp.max(count, axis=-1).astype(dtypes.default_int()).reshape(shape))


def rankdata(a, method: str = "average", *, axis: int | None = None, nan_policy: str = "propagate") -> Array:
  """The ranks 1..n of the values of a (flattened, or along axis), ties ranked by method: 'average', 'min', 'max',
  'dense' (1, 2, ... over distinct values) or 'ordinal' (by position); all NaN where the values hold a NaN.

  >>> tracegrad.scipy.stats.rankdata(tnp.asarray([30, 10, 20, 10]), "min")
  Array([4., 1., 3., 1.], dtype=float32)
  """
  _check_nan_policy("rankdata", nan_policy)
  if method not in ("average", "min", "max", "dense", "ordinal"):
    raise ValueError(f"rankdata: unknown method {method!r}; use 'average', 'min', 'max', 'dense' or 'ordinal'")
  a = tnp.asarray(a)
  if axis is None:
    a, axis = tnp.ravel(a), 0
  axis = normalize_axis(axis, a.ndim, "rankdata")
  x = tnp.moveaxis(a, axis, -1)
  out = dtypes.default_float()
  if x.shape[-1] == 0: return tnp.moveaxis(tnp.zeros(x.shape, out), -1, axis)
  order = tnp.argsort(x, axis=-1, stable=True)
  where = tnp.argsort(order, axis=-1)
  if method == "ordinal":
    ranks = where + 1
  else:
    starts, first, stop = _runs(tnp.take_along_axis(x, order, axis=-1))
    by_sorted = {"dense": lambda: tnp.cumsum(starts, axis=-1), "min": lambda: first + 1, "max": lambda: stop,
                 "average": lambda: (first + 1 + stop).astype(out) / 2}[method]()
    ranks = tnp.take_along_axis(by_sorted, where, axis=-1)
  ranks = ranks.astype(out)
  if x.dtype.is_float: ranks = tnp.where(tnp.any(tnp.isnan(x), axis=-1, keepdims=True), tnp.nan, ranks)
  return tnp.moveaxis(ranks, -1, axis)


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *, keepdims: bool = False) -> Array:
  """The standard error of the mean along axis (all of a for None): std(ddof) / sqrt(n); nan_policy='omit' leaves out
  the NaNs.

  >>> tracegrad.scipy.stats.sem(tnp.asarray([1.0, 2.0, 3.0, 4.0])).round(4)
  Array(0.6455, dtype=float32)
  """
  b = tnp.asarray(a)
  b = b.astype(float_dtype(b))
  if nan_policy == "propagate":
    n = b.size if axis is None else b.shape[axis]
    return tnp.std(b, axis, ddof=ddof, keepdims=keepdims) / tnp.sqrt(tnp.asarray(n, b.dtype))
  if nan_policy == "omit":
    n = tnp.sum(~tnp.isnan(b), axis, keepdims=keepdims)
    return tnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / tnp.sqrt(n).astype(b.dtype)
  raise ValueError(f"sem: nan_policy {nan_policy!r} is not supported; use 'propagate' or 'omit'")
