"""Choosing elements: select, piecewise, choose, compress, extract, place, put."""
from __future__ import annotations

import math

from ..array import Array, to_array
from ..ir import dtypes
from ._support import arr
from .elementwise import where
from .reductions import any as _any
from .shape import broadcast_arrays, expand_dims, moveaxis, ravel, tile
from .sorting import argsort, nonzero
from .elementwise import clip, remainder
from .index_tricks import unravel_index

__all__ = ["select", "piecewise", "choose", "compress", "extract", "place", "put"]


def select(condlist, choicelist, default=0) -> Array:
  """The element of the first choice whose condition holds, else default.

  >>> x = tnp.arange(4)
  >>> tnp.select([x < 1, x < 3], [x, x * 10], -1)
  Array([ 0, 10, 20, -1], dtype=int32)
  """
  if len(condlist) != len(choicelist):
    raise ValueError(f"select: condlist must have length equal to choicelist ({len(condlist)} vs {len(choicelist)})")
  if len(condlist) == 0: raise ValueError("select: condlist must be non-empty")
  conds = [arr(c, "select") for c in condlist]
  out = arr(default, "select")
  for c, v in reversed(list(zip(conds, choicelist))): out = where(c, v, out)
  return out


def piecewise(x, condlist, funclist, *args, **kw) -> Array:
  """funclist[i](x) (or the constant funclist[i]) where condlist[i] holds, the last true condition winning; an extra
  last entry of funclist is the value where none holds (else 0). The result has x's dtype.

  >>> x = tnp.array([-2.0, 0.5, 3.0])
  >>> tnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 2, 7.0])
  Array([2., 7., 6.], dtype=float32)
  """
  xa = arr(x, "piecewise")
  if isinstance(condlist, Array): conds = [condlist[i] for i in range(condlist.shape[0])]
  else: conds = [arr(c, "piecewise") for c in condlist]
  nc, nf = len(conds), len(funclist)
  if nf == nc + 1: funcs = [funclist[-1]] + list(funclist[:-1])
  elif nf == nc: funcs = [0] + list(funclist)
  else: raise ValueError(f"piecewise: with {nc} condition(s), either {nc} or {nc + 1} functions are expected; got {nf}")

  def value(f):
    v = f(xa, *args, **kw) if callable(f) else f
    return arr(v, "piecewise").astype(xa.dtype)

  out = Array(value(funcs[0]).uop.broadcast(xa.shape))
  for c, f in zip(conds, funcs[1:]):
    out = where(c.astype(dtypes.bool_), value(f), out)
  return out.astype(xa.dtype)


def choose(a, choices, out=None, mode: str = "raise") -> Array:
  """choices[a[i]][i] for every position i (all broadcast together).

  >>> tnp.choose(tnp.array([0, 2, 1]), [tnp.array([1, 2, 3]), 10, tnp.array([7, 8, 9])])
  Array([ 1,  8, 10], dtype=int32)
  """
  if out is not None: raise NotImplementedError("choose: the 'out' argument is not supported (arrays are immutable)")
  idx = arr(a, "choose")
  chs = [arr(c, "choose") for c in choices]
  if not idx.dtype.is_int: raise ValueError(f"choose: `a` array must be integer typed, got {idx.dtype}")
  n = len(chs)
  if mode == "raise":
    if idx.is_traced:
      raise TypeError("choose: mode='raise' needs a concrete `a`; use mode='wrap' or mode='clip' under a transform")
    if bool(_any((idx < 0) | (idx >= n))): raise ValueError(f"choose: invalid entry in choice array (0 <= a < {n})")
  elif mode == "wrap": idx = remainder(idx, n)
  elif mode == "clip": idx = clip(idx, 0, n - 1)
  else: raise ValueError(f"choose: mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  idx, *chs = broadcast_arrays(idx, *chs)
  res = chs[-1]
  for i in range(n - 2, -1, -1): res = where(idx == i, chs[i], res)
  return res


def compress(condition, a, axis=None, *, size: int | None = None, fill_value=0, out=None) -> Array:
  """The slices of `a` along axis where condition is true; size= gives a fixed length (padded with fill_value).

  >>> tnp.compress(tnp.array([True, False, True]), tnp.array([1, 2, 3]))
  Array([1, 3], dtype=int32)
  """
  if out is not None: raise NotImplementedError("compress: the 'out' argument is not supported (arrays are immutable)")
  cond = arr(condition, "compress").astype(dtypes.bool_)
  x = arr(a, "compress")
  if cond.ndim != 1: raise ValueError(f"compress: condition must be a 1D array, got shape {cond.shape}")
  if axis is None: x, axis = ravel(x), 0
  else: x = moveaxis(x, axis, 0)
  n = x.shape[0]
  cond, extra = cond[:n], cond[n:]
  x = x[:cond.shape[0]]
  if size is None:
    if cond.is_traced:
      raise TypeError(f"compress: condition ({cond.aval_str()}) is traced, so the length of the result is not known; "
                      f"pass size=... (and fill_value=...)")
    if extra.size and bool(_any(extra)):
      raise ValueError(f"compress: condition of length {cond.shape[0] + extra.shape[0]} has true entries beyond "
                       f"the {n} of `a` along the axis")
    res = x[cond]
  elif not 0 <= size <= x.shape[0]:
    raise ValueError(f"compress: size must be non-negative and not greater than the size of the array axis; "
                     f"got size={size} for a.shape[axis]={x.shape[0]}")
  else:
    mask = expand_dims(cond, tuple(range(1, x.ndim))) if x.ndim > 1 else cond
    x = where(mask, x, to_array(fill_value, x.dtype, fn="compress"))
    res = x[argsort(cond, stable=True, descending=True)][:size]
  return moveaxis(res, 0, axis)


def extract(condition, arr_, *, size: int | None = None, fill_value=0) -> Array:
  """The elements of the flattened array where the flattened condition is true.

  >>> tnp.extract(tnp.array([[1, 0], [0, 1]]), tnp.array([[5, 6], [7, 8]]))
  Array([5, 8], dtype=int32)
  """
  return compress(ravel(arr(condition, "extract")), ravel(arr(arr_, "extract")), size=size, fill_value=fill_value)


def _tile_to_size(v: Array, n: int) -> Array:
  if v.size < n: v = tile(v, math.ceil(n / v.size))
  return v[:n] if v.size > n else v


def place(arr_, mask, vals, *, inplace: bool = True) -> Array:
  """arr with the masked elements replaced by vals, repeated as needed (pass inplace=False: arrays are immutable).

  >>> tnp.place(tnp.zeros(4, int), tnp.array([1, 0, 1, 1]), tnp.array([5, 6]), inplace=False)
  Array([5, 0, 6, 5], dtype=int32)
  """
  data, m, v = arr(arr_, "place"), arr(mask, "place"), ravel(arr(vals, "place"))
  if inplace:
    raise ValueError("place: tracegrad arrays are immutable, so place cannot modify arr in place; pass inplace=False "
                     "to return an updated array")
  if data.size != m.size:
    raise ValueError(f"place: arr and mask must be the same size, got shapes {data.shape} and {m.shape}")
  if not v.size: raise ValueError("place: cannot place values from an empty array")
  if not data.size: return data
  idx = nonzero(ravel(m), size=m.size, fill_value=m.size)[0]
  return ravel(data).at[idx].set(_tile_to_size(v, idx.shape[0]), mode="drop").reshape(data.shape)


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True) -> Array:
  """a with the elements at the flat indices ind replaced by v, repeated as needed (pass inplace=False).

  >>> tnp.put(tnp.zeros(5, int), tnp.array([0, 2]), tnp.array([10, 20]), inplace=False)
  Array([10,  0, 20,  0,  0], dtype=int32)
  """
  if inplace:
    raise ValueError("put: tracegrad arrays are immutable, so put cannot modify `a` in place; pass inplace=False to "
                     "return an updated array")
  x, i, vals = arr(a, "put"), ravel(arr(ind, "put")), ravel(arr(v, "put"))
  if not x.size or not i.size or not vals.size: return x
  vals = _tile_to_size(vals, i.shape[0])
  if mode is None: smode = "drop"
  elif mode == "clip": i, smode = clip(i, 0, x.size - 1), "promise_in_bounds"
  elif mode == "wrap": i, smode = remainder(i, x.size), "promise_in_bounds"
  elif mode == "raise": raise NotImplementedError("put: the 'raise' mode is not supported")
  else: raise ValueError(f"put: mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
  return x.at[unravel_index(i, x.shape)].set(vals, mode=smode)
