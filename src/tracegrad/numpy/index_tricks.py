"""Index helpers: unravel_index, ravel_multi_index, indices, ix_, the *_indices functions, fill_diagonal, and the
index objects s_, index_exp, r_, c_, mgrid, ogrid."""
from __future__ import annotations

import math

import numpy as np

from ..array import Array, to_array
from ..ir import UOp, dtypes
from ._support import arr, concrete, static_int
from .creation import arange, array, linspace, ones
from .elementwise import clip, floor_divide, remainder, where
from .reductions import any as _any
from .shape import concatenate, expand_dims, ravel, stack, tile, transpose
from .sorting import nonzero

__all__ = ["unravel_index", "ravel_multi_index", "indices", "ix_", "diag_indices", "diag_indices_from",
           "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from", "mask_indices", "fill_diagonal",
           "index_exp", "s_", "r_", "c_", "mgrid", "ogrid"]

s_ = np.s_
index_exp = np.index_exp


def _int_array(a: np.ndarray) -> Array:
  return Array(UOp.buffer(np.ascontiguousarray(a.astype(dtypes.default_int().np))))


def unravel_index(indices, shape) -> tuple[Array, ...]:
  """The coordinates in an array of `shape` of flat indices (out-of-range ones clamped, as JAX).

  >>> tnp.unravel_index(tnp.array([5, 7]), (2, 4))
  (Array([1, 1], dtype=int32), Array([1, 3], dtype=int32))
  """
  idx = arr(indices, "unravel_index")
  try:
    shape = list(shape)
  except TypeError:
    shape = [shape]
  if any(np.ndim(s) != 0 for s in shape): raise ValueError("unravel_index: shape should be a scalar or 1D sequence")
  out = [None] * len(shape)
  for i, s in reversed(list(enumerate(shape))):
    idx, out[i] = floor_divide(idx, s), remainder(idx, s)
  oob_pos = idx > 0
  oob_neg = (idx < -1) if not idx.dtype.is_unsigned else None
  return tuple(where(oob_pos, s - 1, o if oob_neg is None else where(oob_neg, 0, o)) for s, o in zip(shape, out))


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C", *, dtype=None) -> Array:
  """Flat indices of coordinate arrays in an array of shape dims.

  >>> tnp.ravel_multi_index((tnp.array([1, 0]), tnp.array([2, 3])), (2, 4))
  Array([6, 3], dtype=int32)
  """
  if len(multi_index) != len(dims):
    raise ValueError(f"ravel_multi_index: len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
  dims = tuple(static_int(d, "ravel_multi_index", "dims") for d in dims)
  idx = [arr(i, "ravel_multi_index") for i in multi_index]
  dt = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtypes.as_dtype(dtype, "ravel_multi_index"))
  if not dt.is_int: raise ValueError(f"ravel_multi_index: dtype={dt} is not an integer type")
  for i in idx:
    if not i.dtype.is_int: raise TypeError(f"ravel_multi_index: only int indices permitted, got {i.dtype}")
  if mode == "raise":
    for i in idx: concrete(i, "ravel_multi_index", "multi_index", "use mode='wrap' or mode='clip' under a transform")
    if any(bool(_any((i < 0) | (i >= d))) for i, d in zip(idx, dims)):
      raise ValueError(f"ravel_multi_index: invalid entry in coordinates array for dims {dims}")
  elif mode == "clip": idx = [clip(i, 0, d - 1) for i, d in zip(idx, dims)]
  elif mode == "wrap": idx = [remainder(i, d) for i, d in zip(idx, dims)]
  elif mode != "ignore":
    raise ValueError(f"ravel_multi_index: invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'")
  if order == "F": strides = np.cumprod((1,) + dims[:-1])
  elif order == "C": strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
  else: raise ValueError(f"ravel_multi_index: invalid order={order!r}. Expected 'C' or 'F'")
  out = to_array(0, dt, fn="ravel_multi_index")
  for i, s in zip(idx, strides): out = out + i.astype(dt) * int(s)
  return out


def indices(dimensions, dtype=None, sparse: bool = False):
  """An array (or, sparse, a tuple of broadcastable arrays) of the indices of a grid.

  >>> tnp.indices((2, 2))
  Array([[[0, 0],
          [1, 1]],
  <BLANKLINE>
         [[0, 1],
          [0, 1]]], dtype=int32)
  """
  dt = dtypes.canonicalize(dtypes.as_dtype(int if dtype is None else dtype, "indices"))
  dims = tuple(static_int(d, "indices", "dimensions") for d in dimensions)
  n, out = len(dims), []
  for i, d in enumerate(dims):
    s = (1,) * i + (d,) + (1,) * (n - i - 1)
    u = UOp.iota((d,), 0, dtypes.int32).cast(dt).reshape(s)
    out.append(Array(u if sparse else u.broadcast(dims)))
  if sparse: return tuple(out)
  return stack(out, 0) if out else array([], dtype=dt)


def ix_(*args) -> tuple[Array, ...]:
  """Open-mesh index arrays from 1-d sequences: x[ix_(rows, cols)] is the cross product of rows and cols.

  >>> [a.shape for a in tnp.ix_(tnp.array([0, 1]), tnp.array([2, 0, 1]))]
  [(2, 1), (1, 3)]
  """
  xs = [arr(a, "ix_") for a in args]
  out = []
  for i, a in enumerate(xs):
    if a.ndim != 1: raise ValueError(f"ix_: arguments must be 1-dimensional, got shape {a.shape}")
    if a.dtype.is_bool: raise NotImplementedError("ix_: boolean arguments are not supported")
    shape = [1] * len(xs)
    shape[i] = a.shape[0]
    if a.size == 0: out.append(Array(UOp.const(dtypes.default_int(), 0, tuple(shape))))
    else: out.append(a.reshape(tuple(shape)))
  return tuple(out)


def diag_indices(n: int, ndim: int = 2) -> tuple[Array, ...]:
  """The indices of the main diagonal of an n x ... x n array of ndim dimensions.

  >>> tnp.diag_indices(3)
  (Array([0, 1, 2], dtype=int32), Array([0, 1, 2], dtype=int32))
  """
  n, ndim = static_int(n, "diag_indices", "n"), static_int(ndim, "diag_indices", "ndim")
  if n < 0: raise ValueError(f"diag_indices: n argument must be nonnegative, got {n}")
  if ndim < 0: raise ValueError(f"diag_indices: ndim argument must be nonnegative, got {ndim}")
  return (arange(n),) * ndim


def diag_indices_from(arr_) -> tuple[Array, ...]:
  """diag_indices for an array whose dimensions are all equal.

  >>> len(tnp.diag_indices_from(tnp.zeros((2, 2, 2))))
  3
  """
  x = arr(arr_, "diag_indices_from")
  if x.ndim < 2: raise ValueError(f"diag_indices_from: input array must be at least 2-d, got shape {x.shape}")
  if len(set(x.shape)) != 1:
    raise ValueError(f"diag_indices_from: all dimensions of input must be of equal length, got shape {x.shape}")
  return diag_indices(x.shape[0], x.ndim)


def _tri_indices(fn, n, k, m, lower):
  n = static_int(n, fn, "n")
  k = static_int(k, fn, "k")
  m = n if m is None else static_int(m, fn, "m")
  i, j = (np.tril_indices if lower else np.triu_indices)(n, k, m)
  return _int_array(i), _int_array(j)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
  """The indices of the lower triangle (at and below diagonal k) of an n x m array.

  >>> tnp.tril_indices(2)
  (Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))
  """
  return _tri_indices("tril_indices", n, k, m, True)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Array, Array]:
  """The indices of the upper triangle (at and above diagonal k) of an n x m array.

  >>> tnp.triu_indices(2)
  (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
  """
  return _tri_indices("triu_indices", n, k, m, False)


def _from(fn, a):
  shape = a.shape if hasattr(a, "shape") else arr(a, fn).shape
  if len(shape) != 2: raise ValueError(f"{fn}: only 2-D inputs are accepted, got shape {tuple(shape)}")
  return shape


def tril_indices_from(arr_, k: int = 0) -> tuple[Array, Array]:
  """tril_indices for a 2-d array's shape.

  >>> tnp.tril_indices_from(tnp.zeros((2, 3)), k=-1)
  (Array([1], dtype=int32), Array([0], dtype=int32))
  """
  n, m = _from("tril_indices_from", arr_)
  return tril_indices(n, k, m)


def triu_indices_from(arr_, k: int = 0) -> tuple[Array, Array]:
  """triu_indices for a 2-d array's shape.

  >>> tnp.triu_indices_from(tnp.zeros((2, 3)), k=2)
  (Array([0], dtype=int32), Array([2], dtype=int32))
  """
  n, m = _from("triu_indices_from", arr_)
  return triu_indices(n, k, m)


def mask_indices(n: int, mask_func, k: int = 0, *, size: int | None = None) -> tuple[Array, Array]:
  """The indices where mask_func(ones((n, n)), k) is nonzero.

  >>> tnp.mask_indices(2, tnp.triu)
  (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
  """
  i, j = nonzero(mask_func(ones((n, n)), k), size=size)
  return i, j


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True) -> Array:
  """a with its main diagonal set to val (repeated as needed); pass inplace=False, as arrays are immutable.

  >>> tnp.fill_diagonal(tnp.zeros((2, 2), int), 5, inplace=False)
  Array([[5, 0],
         [0, 5]], dtype=int32)
  """
  if inplace:
    raise NotImplementedError("fill_diagonal: tracegrad arrays are immutable, must use inplace=False")
  if wrap: raise NotImplementedError("fill_diagonal: wrap=True is not implemented, must use wrap=False")
  x, v = arr(a, "fill_diagonal"), arr(val, "fill_diagonal")
  if x.ndim < 2: raise ValueError(f"fill_diagonal: array must be at least 2-d, got shape {x.shape}")
  if x.ndim > 2 and len(set(x.shape)) != 1:
    raise ValueError(f"fill_diagonal: all dimensions of input must be of equal length, got shape {x.shape}")
  n = min(x.shape)
  if v.ndim:
    v = ravel(v)
    if v.size < n: v = tile(v, math.ceil(n / v.size))
    v = v[:n]
  return x.at[diag_indices(n, x.ndim)].set(v)


def _grid_1d(s: slice, fn: str) -> Array:
  def get(v, name):
    if isinstance(v, Array): v = concrete(v, fn, f"the slice {name}").item()
    return v
  start, stop, step = get(s.start, "start") or 0, get(s.stop, "stop"), get(s.step, "step") or 1
  if np.iscomplex(step): return linspace(start, stop, int(abs(step)))
  return arange(start, stop, step)


def _promoted(grids: list[Array]) -> list[Array]:
  if not grids: return grids
  dt = dtypes.result_type(*((g.dtype, False) for g in grids))[0]
  return [g.astype(dt) for g in grids]


class _Mgrid:
  """A dense mesh grid from slices (a complex step is a number of points): mgrid[0:2, 0:3].

  >>> tnp.mgrid[0:2, 0:3]
  Array([[[0, 0, 0],
          [1, 1, 1]],
  <BLANKLINE>
         [[0, 1, 2],
          [0, 1, 2]]], dtype=int32)
  """

  def __getitem__(self, key):
    if isinstance(key, slice): return _grid_1d(key, "mgrid")
    gs = _promoted([_grid_1d(k, "mgrid") for k in key])
    if not gs: return arange(0)
    shape = tuple(g.shape[0] for g in gs)
    n = len(gs)
    return stack([Array(g.uop.reshape((1,) * i + g.shape + (1,) * (n - i - 1)).broadcast(shape))
                  for i, g in enumerate(gs)], 0)


class _Ogrid:
  """An open mesh grid from slices: a list of arrays that broadcast together.

  >>> [g.shape for g in tnp.ogrid[0:2, 0:3]]
  [(2, 1), (1, 3)]
  """

  def __getitem__(self, key):
    if isinstance(key, slice): return _grid_1d(key, "ogrid")
    gs = _promoted([_grid_1d(k, "ogrid") for k in key])
    n = len(gs)
    return [g.reshape((1,) * i + g.shape + (1,) * (n - i - 1)) for i, g in enumerate(gs)]


mgrid, ogrid = _Mgrid(), _Ogrid()


class _AxisConcat:
  axis, ndmin, trans1d, op_name = 0, 1, -1, "r_"

  def __getitem__(self, key):
    key = key if isinstance(key, tuple) else (key,)
    params = [self.axis, self.ndmin, self.trans1d, -1]
    directive = key[0]
    if isinstance(directive, str):
      key = key[1:]
      if directive == "r": params[-1] = 0
      elif directive == "c": params[-1] = 1
      else:
        vec = directive.split(",")
        vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
        try:
          params = [int(v) for v in vec]
        except ValueError:
          raise ValueError(f"{self.op_name}: could not understand directive {directive!r}") from None
    axis, ndmin, trans1d, matrix = params
    out = []
    for item in key:
      if isinstance(item, slice): obj, item_ndim = _grid_1d(item, self.op_name), 0
      elif isinstance(item, str): raise ValueError(f"{self.op_name}: string directive must be placed at the beginning")
      else:
        obj = arr(item, self.op_name)
        item_ndim = obj.ndim
      obj = array(obj, ndmin=ndmin)
      if trans1d != -1 and ndmin - item_ndim > 0:
        perm = tuple(range(ndmin))
        shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
        obj = transpose(obj, perm[shift:] + perm[:shift])
      out.append(obj)
    res = concatenate(tuple(out), axis=axis)
    if matrix != -1 and res.ndim == 1: res = expand_dims(res, matrix)
    return res

  def __len__(self) -> int: return 0


class _RClass(_AxisConcat):
  """Concatenation along the first axis of arrays, scalars and slices (ranges): r_[1:3, 5, [7, 8]].

  >>> tnp.r_[0:3, 5, tnp.array([7, 8])]
  Array([0, 1, 2, 5, 7, 8], dtype=int32)
  """


class _CClass(_AxisConcat):
  """Concatenation along the last axis, 1-d inputs as columns: c_[[1, 2], [3, 4]].

  >>> tnp.c_[tnp.array([1, 2]), tnp.array([3, 4])]
  Array([[1, 3],
         [2, 4]], dtype=int32)
  """
  axis, ndmin, trans1d, op_name = -1, 2, 0, "c_"


r_, c_ = _RClass(), _CClass()
