"""Sorting, searching and counting (as numpy groups them): sort, argsort, searchsorted, unique, nonzero, argwhere,
flatnonzero.

There is no sort primitive. sort and argsort are bitonic sorting networks (lax.sorting.network: one scan whose step
reads each entry's partner and compares with MIN/MAX or CMPLT/WHERE): the sorted axis is moved last and padded to
a power of two with sentinels that sort after everything, then log2(n)(log2(n)+1)/2 compare-exchange steps run over
all pairs at once. Values follow numpy: NaN sorts to the end. argsort compares (key, index) pairs lexicographically
(packed into one int64 where the key has at most 32 bits), so it is stable: equal keys keep their order; sorted
floats are gathered in that order, so gradients reach them.
Complex values sort as numpy's, by the real parts, then the imaginary ones, with those holding a nan last:
R + Rj < R + nanj < nan + Rj < nan + nanj.
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..lax.reductions import cumsum
from ..lax.sorting import _by_keys, cut, min_max, network, packed, padded, sort_key, take_last, unpacked_index
from .core import arraylike as _arr, normalize_axis, promote
from .indexing import take

__all__ = ["sort", "argsort", "sort_complex", "searchsorted", "unique", "unique_all", "unique_counts", "unique_inverse",
           "unique_values", "nonzero", "argwhere", "flatnonzero"]

_I32 = dtypes.int32


def _const(v, shape=(), dt=_I32) -> UOp: return UOp.const(dt, v, shape)


def _pairs(a, b):
  """Lexicographic compare-exchange of (key, index) pairs."""
  (ka, ia), (kb, ib) = a, b
  swap = kb.alu(Ops.CMPLT, ka).alu(Ops.OR, kb.alu(Ops.CMPEQ, ka).alu(Ops.AND, ib.alu(Ops.CMPLT, ia)))
  return [swap.where(kb, ka), swap.where(ib, ia)], [swap.where(ka, kb), swap.where(ia, ib)]


def _to_last(x: Array, axis, fn: str) -> tuple[UOp, list[int] | None]:
  """x's UOp with `axis` moved last (flattened for axis=None), and the permutation that undoes it."""
  if axis is None: return x.uop.reshape((x.size,)), None
  ax = normalize_axis(axis, x.ndim, fn)
  perm = [i for i in range(x.ndim) if i != ax] + [ax]
  inv = [perm.index(i) for i in range(x.ndim)]
  return x.uop.permute(perm), inv


def _from_last(u: UOp, inv) -> UOp: return u if inv is None else u.permute(inv)


def _key(u: UOp) -> tuple[UOp, UOp | None]:
  """A key that sorts like u with NaN replaced by +inf, and u's NaN mask (floats) or None."""
  if u.dtype.is_bool: return u.cast(dtypes.uint8), None
  if not u.dtype.is_float: return u, None
  nan = u.alu(Ops.CMPNE, u)
  return nan.where(UOp.const(u.dtype, float("inf"), u.shape), u), nan


def _complex_keys(u: UOp) -> list[UOp]:
  """Keys (class, real, imag) that order complex values as numpy: the class is 0 for R + Rj, 1 for R + nanj, 2 for
  nan + Rj and 3 for nan + nanj, and a nan part reads as 0 (it ties within its class)."""
  r, i = u.alu(Ops.REAL), u.alu(Ops.IMAG)
  rn, inn = r.alu(Ops.CMPNE, r), i.alu(Ops.CMPNE, i)
  cls = rn.cast(_I32).alu(Ops.MUL, _const(2, u.shape)).alu(Ops.ADD, inn.cast(_I32))
  return [cls, rn.where(UOp.const(r.dtype, 0, r.shape), r), inn.where(UOp.const(i.dtype, 0, i.shape), i)]


def _complex_sorted(u: UOp) -> tuple[UOp, UOp]:
  """u (complex) sorted along its last axis, stable, and the indices that sort it."""
  n = u.shape[-1]
  m = _pow2(n)
  cls, r, i = _complex_keys(u)
  idx = UOp.iota(u.shape, u.ndim - 1, _I32)
  xs = [padded(cls, m, 4), padded(r, m, 0), padded(i, m, 0), padded(idx, m, 2 * m)]
  order = cut(network(xs, _by_keys(3))[3], n)
  return take_last(u, order), order


def _complex_lt(a: UOp, b: UOp) -> UOp:
  """a < b in numpy's order of complex values (see _complex_keys)."""
  less, tie = None, None
  for ka, kb in zip(_complex_keys(a), _complex_keys(b)):
    step = ka.alu(Ops.CMPLT, kb)
    step = step if tie is None else tie.alu(Ops.AND, step)
    less = step if less is None else less.alu(Ops.OR, step)
    same = ka.alu(Ops.CMPEQ, kb)
    tie = same if tie is None else tie.alu(Ops.AND, same)
  return less


def _pow2(n: int) -> int: return 1 << max(n - 1, 0).bit_length()


def sort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True, descending: bool = False) -> Array:
  """The values of `a` sorted along `axis` (flattened for axis=None); NaN last (first when descending).

  >>> tnp.sort(tnp.array([3.0, tnp.nan, 1.0, 2.0]))
  Array([ 1.,  2.,  3., nan], dtype=float32)
  """
  if order is not None: raise TypeError("sort: the 'order' argument is not supported (no structured dtypes)")
  x = _arr(a, "sort")
  if x.ndim == 0 and axis is not None: normalize_axis(axis, 0, "sort")
  u, inv = _to_last(x, axis, "sort")
  n = u.shape[-1]
  if n <= 1: return Array(_from_last(u, inv), x.weak_type)
  if u.dtype.is_complex:
    k = _complex_sorted(u)[0]
    return Array(_from_last(k.flip((k.ndim - 1,)) if descending else k, inv), x.weak_type)
  if u.dtype.is_float:  # in the order of the stable argsort (NaN last), so that gradients reach the entries
    k = take_last(u, _argsort_last(u))
  else:
    k = _key(u)[0]
    k = cut(network([padded(k, _pow2(n), dtypes.max_value(k.dtype))], min_max)[0], n)
  if u.dtype.is_bool: k = k.cast(dtypes.bool_)
  if descending: k = k.flip((k.ndim - 1,))
  return Array(_from_last(k, inv), x.weak_type)


def _argsort_last(u: UOp) -> UOp:
  """Stable ascending argsort (int32) of u's last axis."""
  if u.dtype.is_complex: return _complex_sorted(u)[1]
  n = u.shape[-1]
  m = _pow2(n)
  i = UOp.iota(u.shape, u.ndim - 1, _I32)
  if (p := packed(sort_key(u), i)) is not None:
    return unpacked_index(cut(network([padded(p, m, dtypes.max_value(p.dtype))], min_max)[0], n))
  k, nan = _key(u)
  if nan is not None: i = nan.where(i + UOp.const(_I32, m, i.shape), i)  # NaN after +inf, in order
  i = cut(network([padded(k, m, dtypes.max_value(k.dtype)), padded(i, m, 2 * m)], _pairs)[1], n)
  return i.alu(Ops.MOD, UOp.const(_I32, m, i.shape)) if nan is not None else i


def argsort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True, descending: bool = False) -> Array:
  """The indices that sort `a` along `axis`; stable (ties keep their order), NaN last.

  descending=True gives the reverse order with ties still in index order (as JAX).

  >>> tnp.argsort(tnp.array([2, 1, 2, 0]))
  Array([3, 1, 0, 2], dtype=int32)
  """
  if order is not None: raise TypeError("argsort: the 'order' argument is not supported (no structured dtypes)")
  x = _arr(a, "argsort")
  if x.ndim == 0 and axis is not None: normalize_axis(axis, 0, "argsort")
  u, inv = _to_last(x, axis, "argsort")
  n = u.shape[-1]
  last = u.ndim - 1
  if n <= 1: return Array(_from_last(UOp.const(dtypes.default_int(), 0, u.shape), inv))
  if descending:
    i = _argsort_last(u.flip((last,))).flip((last,))
    i = UOp.const(_I32, n - 1, i.shape) - i
  else:
    i = _argsort_last(u)
  return Array(_from_last(i.cast(dtypes.default_int()), inv))


def sort_complex(a) -> Array:
  """a sorted along its last axis in numpy's order of complex values, as a complex array (float16, bfloat16, float32
  and integers give complex64 unless 64-bit mode is on, as jax.numpy).

  >>> tnp.sort_complex(tnp.array([1 + 2j, 1 - 1j, 0 + 5j]))
  Array([0.+5.j, 1.-1.j, 1.+2.j], dtype=complex64)
  """
  x = _arr(a, "sort_complex")
  y = sort(x)
  d = x.dtype
  c = d if d.is_complex else dtypes.complex_of(d if d.is_float else dtypes.default_float())
  return Array(y.uop.cast(c))


def _lt(a: UOp, b: UOp) -> UOp:
  """a < b with NaN above everything (numpy's sort order)."""
  if a.dtype.is_complex: return _complex_lt(a, b)
  lt = a.alu(Ops.CMPLT, b)
  if not a.dtype.is_float: return lt
  a_num = a.alu(Ops.CMPEQ, a)
  return lt.alu(Ops.OR, b.alu(Ops.CMPNE, b).alu(Ops.AND, a_num))


_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "scan") -> Array:
  """Where to insert v into the sorted 1-d array a to keep it sorted (numpy's order: NaN last). A binary search
  (log2(len(a)) gathers per value), or with method='compare_all' a count of the entries before each value.

  >>> tnp.searchsorted(tnp.array([1, 2, 2, 3]), tnp.array([2, 5]))
  Array([1, 4], dtype=int32)
  """
  if side not in ("left", "right"): raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
  if method not in _SEARCH_METHODS:
    raise ValueError(f"searchsorted: method must be one of {', '.join(map(repr, _SEARCH_METHODS))}, got {method!r}")
  x = _arr(a, "searchsorted")
  if x.ndim != 1: raise ValueError(f"searchsorted: a must be 1-dimensional, got shape {x.shape}")
  if sorter is not None:
    x = take(x, sorter)
  (x, y), _, _ = promote("searchsorted", x, v)
  xu, yu = x.uop, y.uop
  if xu.dtype.is_bool: xu, yu = xu.cast(dtypes.uint8), yu.cast(dtypes.uint8)
  n = x.shape[0]
  # left: how many a[j] < v; right: how many a[j] <= v, i.e. not v < a[j]
  before = _lt if side == "left" else lambda aj, v: _lt(v, aj).alu(Ops.XOR, _const(True, v.shape, dtypes.bool_))
  if method == "compare_all":
    full = (n, *y.shape)
    xa = xu.reshape((n,) + (1,) * y.ndim).broadcast(full)
    hit = before(xa, yu.reshape((1, *y.shape)).broadcast(full))
    cnt = hit.cast(_I32).reduce(Ops.REDUCE_SUM, (0,)).reshape(y.shape)
  else:   # the largest count whose last entry is before v, a power of two at a time
    cnt, step = _const(0, y.shape), 1 << max(n.bit_length() - 1, 0)
    while n and step:
      take_more = cnt + _const(step, y.shape)
      at = take_more.alu(Ops.MIN, _const(n, y.shape)) - _const(1, y.shape)
      ok = take_more.alu(Ops.CMPLT, _const(n + 1, y.shape))
      ok = ok.alu(Ops.AND, before(xu.gather(at.reshape((*y.shape, 1))), yu))
      cnt, step = ok.where(take_more, cnt), step // 2
  return Array(cnt.cast(dtypes.default_int()))


def unique(ar, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False, axis=None,
           *, equal_nan: bool = True, size: int | None = None, fill_value=None, sorted: bool = True):  # noqa: A002
  """The sorted distinct values of ar (as np.unique). With size= the result has that length, cut or padded with
  fill_value (default: the smallest value), and works traced; without it ar must be concrete.

  >>> tnp.unique(tnp.array([3, 1, 3, 2]))
  Array([1, 2, 3], dtype=int32)
  >>> tnp.unique(tnp.array([3, 1, 3, 2]), size=4, fill_value=0)
  Array([1, 2, 3, 0], dtype=int32)
  """
  x = _arr(ar, "unique")
  if size is not None and axis is None:
    out = _unique_sized(x, size, fill_value, equal_nan, (return_index, return_inverse, return_counts), "unique")
    return out[0] if len(out) == 1 else tuple(out)
  if x.is_traced:
    raise TypeError(f"unique: the array ({x.aval_str()}) is traced, so the number of distinct values is not known; "
                    f"pass size= (and axis=None), or compute it outside the transformed function")
  res = np.unique(np.asarray(x), return_index=return_index, return_inverse=return_inverse,
                  return_counts=return_counts, axis=axis, equal_nan=equal_nan)
  res = res if isinstance(res, tuple) else (res,)
  vals, extra = res[0], list(res[1:])
  if size is not None:
    k = len(vals)
    if k >= size: vals = vals[:size]
    else:
      fill = vals.min() if fill_value is None and k else (0 if fill_value is None else fill_value)
      vals = np.concatenate([vals, np.full((size - k, *vals.shape[1:]), fill, vals.dtype)])
    names = [n for n, f in (("index", return_index), ("inverse", return_inverse), ("counts", return_counts)) if f]
    for j, name in enumerate(names):
      if name != "inverse":
        e = extra[j][:size]
        extra[j] = np.concatenate([e, np.zeros(size - len(e), e.dtype)]) if len(e) < size else e
  di = dtypes.default_int().np
  out = [Array(UOp.buffer(np.ascontiguousarray(vals)))] + [Array(UOp.buffer(np.asarray(e).astype(di))) for e in extra]
  return out[0] if len(out) == 1 else tuple(out)


def _unique_sized(x: Array, size, fill_value, equal_nan: bool, parts, fn: str) -> list[Array]:
  """The distinct values of x (flattened) in a fixed number of places, and the parts asked for (index of each one's
  first occurrence, x's indices into them in x's shape, their counts), as JAX's unique with size=: from the stable
  argsort, whose runs of equal values each start a distinct value. Values past the last are fill_value (default the
  smallest), their indices the first one's, their counts 0."""
  size = operator.index(size)
  if size < 0: raise ValueError(f"{fn}: size must be >= 0, got {size}")
  index, inverse, counts = parts
  di, n = dtypes.default_int(), x.size
  u = x.uop.reshape((n,))
  if n == 0 and size and fill_value is None:
    raise ValueError(f"{fn}: for an empty array with size={size}, pass fill_value to pad the values with")
  fill = None if fill_value is None else to_array(fill_value, fn=fn).uop.cast(u.dtype).reshape((1,))
  if n == 0:   # (fill_value is None only where size is 0 too)
    parts = [((size,), index), (x.shape, inverse), ((size,), counts)]
    out = [_const(0, (size,), u.dtype) if fill is None else fill.broadcast((size,))]
    out += [_const(0, s, di) for s, want in parts if want]
    return [Array(o) for o in out]
  order = _argsort_last(u)
  s = take_last(u, order)
  a, b = cut(s, n - 1), s.slice([(1, n, 1)])
  same = a.alu(Ops.CMPEQ, b)
  if equal_nan and u.dtype.is_inexact: same = same.alu(Ops.OR, a.alu(Ops.CMPNE, a).alu(Ops.AND, b.alu(Ops.CMPNE, b)))
  first = UOp.concat([_const(True, (1,), dtypes.bool_), same.alu(Ops.XOR, _const(True, same.shape, dtypes.bool_))], 0)
  pos = cumsum(Array(first.cast(_I32))).uop - _const(1, (n,))   # each sorted value's place among the distinct
  at = first.where(pos, _const(size, (n,))).reshape((n, 1))   # the first of each run, past the end for the rest
  start = lambda v: v.reshape((1,)).broadcast((size,))
  out = [start(s.slice([(0, 1, 1)]) if fill is None else fill).scatter(at, s, "set")]
  if index: out.append(start(order.slice([(0, 1, 1)])).scatter(at, order, "set").cast(di))
  if inverse: out.append(_const(0, (n,)).scatter(order.reshape((n, 1)), pos, "set").reshape(x.shape).cast(di))
  if counts: out.append(_const(0, (size,)).scatter(pos.reshape((n, 1)), _const(1, (n,)), "add").cast(di))
  return [Array(o) for o in out]


class UniqueAllResult(NamedTuple):
  values: Array
  indices: Array
  inverse_indices: Array
  counts: Array


class UniqueCountsResult(NamedTuple):
  values: Array
  counts: Array


class UniqueInverseResult(NamedTuple):
  values: Array
  inverse_indices: Array


def _unique(x, fn: str, index: bool = False, inverse: bool = False, counts: bool = False, size: int | None = None,
            fill_value=None) -> list[Array]:
  """The sorted distinct values of x, with the parts asked for (indices in the default integer type, the inverse in
  x's shape). As the Array API has it, every NaN is a distinct value. With size=, as unique's (works traced)."""
  a = _arr(x, fn)
  if size is not None: return _unique_sized(a, size, fill_value, False, (index, inverse, counts), fn)
  if a.is_traced:
    raise TypeError(f"{fn}: the array ({a.aval_str()}) is traced, so the number of distinct values is not known; "
                    f"pass size=, or compute it outside the transformed function")
  v = np.asarray(a)
  res = np.unique(v, return_index=index, return_inverse=inverse, return_counts=counts, equal_nan=False)
  res = list(res) if isinstance(res, tuple) else [res]
  if inverse: res[1 + index] = res[1 + index].reshape(v.shape)
  di = dtypes.default_int().np
  return [Array(UOp.buffer(np.ascontiguousarray(res[0])))] + [Array(UOp.buffer(r.astype(di))) for r in res[1:]]


def unique_all(x, /, *, size: int | None = None, fill_value=None) -> UniqueAllResult:
  """The distinct values of x with the index of each one's first occurrence, x's indices into them, and their counts.

  >>> tnp.unique_all(tnp.array([3, 1, 3])).counts
  Array([1, 2], dtype=int32)
  """
  return UniqueAllResult(*_unique(x, "unique_all", index=True, inverse=True, counts=True, size=size,
                                  fill_value=fill_value))


def unique_counts(x, /, *, size: int | None = None, fill_value=None) -> UniqueCountsResult:
  """The distinct values of x and how often each occurs.

  >>> tnp.unique_counts(tnp.array([3, 1, 3]))
  UniqueCountsResult(values=Array([1, 3], dtype=int32), counts=Array([1, 2], dtype=int32))
  """
  return UniqueCountsResult(*_unique(x, "unique_counts", counts=True, size=size, fill_value=fill_value))


def unique_inverse(x, /, *, size: int | None = None, fill_value=None) -> UniqueInverseResult:
  """The distinct values of x and, in x's shape, the index of each element among them.

  >>> tnp.unique_inverse(tnp.array([3, 1, 3])).inverse_indices
  Array([1, 0, 1], dtype=int32)
  """
  return UniqueInverseResult(*_unique(x, "unique_inverse", inverse=True, size=size, fill_value=fill_value))


def unique_values(x, /, *, size: int | None = None, fill_value=None) -> Array:
  """The sorted distinct values of x (each NaN counts as distinct).

  >>> tnp.unique_values(tnp.array([3.0, tnp.nan, 1.0, tnp.nan]))
  Array([ 1.,  3., nan, nan], dtype=float32)
  """
  return _unique(x, "unique_values", size=size, fill_value=fill_value)[0]


# ---- nonzero ----
def _positions(x: Array, size: int | None, fn: str):
  """Flat positions of the nonzero elements of x: numpy int array (concrete) or (UOp, count UOp) (traced, size)."""
  if not x.is_traced:
    pos = np.flatnonzero(np.asarray(x))
    return pos, None
  if size is None:
    raise TypeError(f"{fn}: the array ({x.aval_str()}) is traced, so the number of nonzero elements is not known; "
                    f"pass size=... (and fill_value=...) for a fixed-size result")
  flat = x.uop.reshape((x.size,))
  nz = flat if flat.dtype.is_bool else flat.alu(Ops.CMPNE, UOp.const(flat.dtype, 0, flat.shape))
  if not x.size: return _const(0, (size,)), _const(0, ())
  # each nonzero element's place among them (a running count), where its position is scattered; the rest past the end
  place = cumsum(Array(nz.cast(_I32))).uop - _const(1, flat.shape)
  at = nz.where(place, _const(size, flat.shape)).reshape((x.size, 1))
  order = _const(0, (size,)).scatter(at, UOp.iota(flat.shape, 0, _I32), "set")
  return order, place.slice(((x.size - 1, x.size, 1),)).reshape(()) + _const(1, ())


def _coords(x: Array, size, fill_value, fn: str) -> list[Array]:
  dt = dtypes.default_int()
  pos, cnt = _positions(x, size, fn)
  shape = x.shape or (1,)
  if cnt is None:
    p = pos if size is None else pos[:size]
    cols = list(np.unravel_index(p, shape)) if x.ndim else [np.zeros(len(p), np.int64)]
    if size is not None and len(p) < size:
      fills = _fills(fill_value, len(cols), fn)
      cols = [np.concatenate([c, np.full(size - len(p), f)]) for c, f in zip(cols, fills)]
    return [Array(UOp.buffer(c.astype(dt.np))) for c in cols]
  keep = UOp.iota((size,), 0, _I32).alu(Ops.CMPLT, cnt.broadcast((size,)))
  fills = _fills(fill_value, len(shape), fn)
  cols, rem = [], pos
  for d in range(len(shape)):
    stride = math.prod(shape[d + 1:])
    c = rem.alu(Ops.IDIV, _const(stride, rem.shape)).alu(Ops.MOD, _const(shape[d], rem.shape)) if shape[d] else rem
    cols.append(Array(keep.where(c, _const(fills[d], c.shape)).cast(dt)))
  return cols if x.ndim else cols[:1]


def _fills(fill_value, k: int, fn: str) -> list[int]:
  if fill_value is None: return [0] * k
  f = np.asarray(fill_value)
  if f.ndim == 0: return [int(f)] * k
  if f.shape != (k,): raise ValueError(f"{fn}: fill_value must be a scalar or have {k} entries, got shape {f.shape}")
  return [int(v) for v in f]


def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple[Array, ...]:
  """The indices of the nonzero elements, one array per axis (concrete arrays, or traced ones with size=).

  >>> tnp.nonzero(tnp.array([0, 3, 0, 4]))
  (Array([1, 3], dtype=int32),)
  """
  x = _arr(a, "nonzero")
  if x.ndim == 0: raise ValueError("nonzero: calling nonzero on 0-d arrays is not allowed; use atleast_1d first")
  return tuple(_coords(x, size, fill_value, "nonzero"))


def flatnonzero(a, *, size: int | None = None, fill_value=None) -> Array:
  """The indices of the nonzero elements of the flattened array.

  >>> tnp.flatnonzero(tnp.array([[0, 1], [1, 0]]))
  Array([1, 2], dtype=int32)
  """
  x = _arr(a, "flatnonzero")
  return _coords(Array(x.uop.reshape((x.size,))), size, fill_value, "flatnonzero")[0]


def argwhere(a, *, size: int | None = None, fill_value=None) -> Array:
  """The indices of the nonzero elements as an (N, ndim) array.

  >>> tnp.argwhere(tnp.array([[0, 1], [1, 0]]))
  Array([[0, 1],
         [1, 0]], dtype=int32)
  """
  x = _arr(a, "argwhere")
  if x.ndim == 0:
    n = (1 if bool(np.asarray(x)) else 0) if size is None else size
    return Array(UOp.const(dtypes.default_int(), 0, (n, 0)))
  cols = _coords(x, size, fill_value, "argwhere")
  return Array(UOp.concat([c.uop.reshape(c.shape + (1,)) for c in cols], 1))
