"""Set operations on 1-d arrays: isin, union1d, intersect1d, setdiff1d, setxor1d (size= and fill_value= give a
fixed-length result under jit, as in JAX)."""
from __future__ import annotations

import numpy as np

from ..array import Array, to_array
from ..ir import dtypes
from ._support import arr, concrete, static_int
from .core import promote
from .creation import arange, full, zeros
from .elementwise import isnan, logical_and, logical_not, where
from .reductions import any as _any, all as _all, sum as _sum, min as _min
from .shape import concatenate, ravel
from .sorting import argsort, nonzero, searchsorted, sort

__all__ = ["isin", "union1d", "intersect1d", "setdiff1d", "setxor1d"]


def _in1d(x: Array, t: Array, invert: bool) -> Array:
  (x, t), _, _ = promote("isin", ravel(x), ravel(t))
  if x.size == 0 or t.size == 0: return full(x.shape, invert, dtypes.bool_)
  eq = x[:, None] == t[None, :]
  return _all(logical_not(eq), -1) if invert else _any(eq, -1)


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *, method="auto") -> Array:
  """Whether each element of `element` is in test_elements (elementwise, element's shape).

  >>> tnp.isin(tnp.array([1, 2, 3]), tnp.array([3, 1]))
  Array([ True, False,  True], dtype=bool)
  """
  if method not in ("auto", "compare_all", "binary_search", "sort"):
    raise ValueError(f"isin: method={method!r} is not implemented; options are 'compare_all', 'binary_search', "
                     f"'sort', and 'auto'")
  x = arr(element, "isin")
  return _in1d(x, arr(test_elements, "isin"), invert).reshape(x.shape)


def _runs(x: Array):
  """x sorted (stable, NaN last), the sorting permutation, and a mask of the first element of each run of equals."""
  perm = argsort(x, stable=True)
  s = x[perm]
  if s.size == 0: return s, perm, zeros((0,), dtypes.bool_)
  ne = s[1:] != s[:-1]
  if s.dtype.is_float: ne = logical_and(ne, logical_not(logical_and(isnan(s[1:]), isnan(s[:-1]))))
  return s, perm, concatenate([full((1,), True, dtypes.bool_), ne])


def _pick(fn: str, vals: Array, keep: Array, size, fill_value, default_fill):
  """vals[keep] (concrete keep), or with size= its first `size` entries padded with the fill value, and the
  positions picked (padded with vals.size)."""
  if size is None:
    concrete(keep, fn, "the set's membership mask", "pass size=... (and fill_value=...) for a fixed-size result")
    pos = nonzero(keep)[0] if keep.size else zeros((0,), dtypes.default_int())
    return (vals[pos] if vals.size else vals), pos
  size = static_int(size, fn, "size")
  n = _sum(keep)
  pos = nonzero(keep, size=size, fill_value=vals.size)[0] if keep.size else full((size,), 0, dtypes.default_int())
  got = vals.at[pos].get(mode="fill", fill_value=0) if vals.size else zeros((size,), vals.dtype)
  valid = arange(size) < n
  if fill_value is None:
    fill = default_fill(got, valid)
  else:
    fill = to_array(fill_value, vals.dtype, fn=fn)
  return where(valid, got, fill), where(valid, pos, vals.size)


def _min_of_valid(got: Array, valid: Array) -> Array:
  """JAX's default fill for intersect1d and setxor1d: the smallest value found (0 when none was)."""
  if got.size == 0: return zeros((), got.dtype)
  return _min(where(valid, got, got.max()))


def _first(got: Array, valid: Array) -> Array:
  return got[0] if got.size else zeros((), got.dtype)


def _1d(fn: str, *xs):
  arrs, _, _ = promote(fn, *(ravel(arr(x, fn)) for x in xs))
  return arrs


def union1d(ar1, ar2, *, size: int | None = None, fill_value=None) -> Array:
  """The sorted distinct values found in either array.

  >>> tnp.union1d(tnp.array([3, 1, 3]), tnp.array([2, 1]))
  Array([1, 2, 3], dtype=int32)
  """
  x = concatenate(_1d("union1d", ar1, ar2))
  if size is not None and x.size == 0 and fill_value is None:
    raise ValueError("union1d: for zero-sized input with nonzero size argument, fill_value must be specified")
  s, _, first = _runs(x)
  return _pick("union1d", s, first, size, fill_value, _first)[0]


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *, size: int | None = None,
                fill_value=None):
  """The sorted distinct values found in both arrays (with return_indices, where each first occurs in each).

  >>> tnp.intersect1d(tnp.array([1, 3, 4, 3]), tnp.array([3, 1, 2, 1]))
  Array([1, 3], dtype=int32)
  """
  x, y = _1d("intersect1d", ar1, ar2)
  s, perm, first = _runs(x)
  keep = logical_and(first, _in1d(s, y, False)) if s.size else first
  vals, pos = _pick("intersect1d", s, keep, size, fill_value, _min_of_valid)
  if not return_indices: return vals
  i1 = perm.at[pos].get(mode="fill", fill_value=x.size) if perm.size else pos
  s2, perm2, _ = _runs(y)
  j = searchsorted(s2, vals) if s2.size else zeros(vals.shape, dtypes.default_int())
  i2 = perm2.at[j].get(mode="fill", fill_value=y.size) if perm2.size else j
  if size is not None:
    valid = arange(size) < _sum(keep)
    i1, i2 = where(valid, i1, x.size), where(valid, i2, y.size)
  return vals, i1, i2


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None, fill_value=None) -> Array:
  """The sorted distinct values of ar1 that are not in ar2.

  >>> tnp.setdiff1d(tnp.array([4, 1, 2, 4]), tnp.array([2, 5]))
  Array([1, 4], dtype=int32)
  """
  x, y = _1d("setdiff1d", ar1, ar2)
  s, _, first = _runs(x)
  keep = logical_and(first, _in1d(s, y, True)) if s.size else first
  return _pick("setdiff1d", s, keep, size, 0 if fill_value is None else fill_value, None)[0]


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size: int | None = None, fill_value=None) -> Array:
  """The sorted distinct values found in exactly one of the arrays.

  >>> tnp.setxor1d(tnp.array([1, 2, 3]), tnp.array([2, 3, 4]))
  Array([1, 4], dtype=int32)
  """
  x, y = _1d("setxor1d", ar1, ar2)
  s1, _, f1 = _runs(x)
  s2, _, f2 = _runs(y)
  k1 = logical_and(f1, _in1d(s1, y, True)) if s1.size else f1
  k2 = logical_and(f2, _in1d(s2, x, True)) if s2.size else f2
  both, keep = concatenate([s1, s2]), concatenate([k1, k2])
  if both.size == 0: return _pick("setxor1d", both, keep, size, fill_value, _min_of_valid)[0]
  d = both.dtype
  pad = float("nan") if d.is_float else (True if d.is_bool else np.iinfo(d.np).max)
  s = sort(where(keep, both, to_array(pad, d, fn="setxor1d")))
  order_keep = sort(logical_not(keep))
  return _pick("setxor1d", s, logical_not(order_keep), size, fill_value, _min_of_valid)[0]
