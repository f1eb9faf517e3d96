"""The rest of jax.numpy's surface: array editing (append, insert, delete, block, resize, rollaxis, trim_zeros),
grids and constructors (vander, geomspace, logspace, fromfunction, frombuffer, fromstring), integer and float
helpers (gcd, lcm, ldexp, frexp, modf, spacing, i0, bitwise_count, packbits, unpackbits), ordering (lexsort,
partition, argpartition), function application (apply_along_axis, apply_over_axes, vectorize from gufunc.py),
products (matvec, vecmat, convolve, correlate), printing, saving, scalar-type aliases and constants."""
from __future__ import annotations

import math

import numpy as np

from ..array import Array, to_array
from ..ir import dtypes
from ..lax import bitcast_convert_type, conv_general_dilated, while_loop
from ..transforms import vmap
from ._support import arr, concrete, inexact, static_int
from .core import normalize_axis, promote
from .creation import arange, full, linspace, ones, zeros, zeros_like
from .contract import matmul
from .elementwise import (abs as _abs, ceil, exp2, floor, floor_divide, isfinite, left_shift, log2, log10,
                          power, remainder, sign, where, bitwise_and, right_shift)
from .gufunc import vectorize
from .indexing import take_along_axis
from .reductions import any as _any, sum as _sum
from .shape import (concatenate, expand_dims, flip, moveaxis, ravel, reshape, swapaxes, tile, pad)
from .sorting import argsort, nonzero, sort

__all__ = ["append", "insert", "delete", "block", "resize", "rollaxis", "trim_zeros", "vander", "geomspace",
           "logspace", "fromfunction", "frombuffer", "fromstring", "fromiter", "fromfile", "gcd", "lcm", "ldexp",
           "frexp", "modf", "spacing", "i0", "bitwise_count", "packbits", "unpackbits", "lexsort", "partition",
           "argpartition", "apply_along_axis", "apply_over_axes", "vectorize", "matvec", "vecmat", "convolve",
           "correlate", "isscalar", "iterable", "array_repr", "array_str", "get_printoptions", "set_printoptions",
           "printoptions", "save", "savez", "load", "euler_gamma", "int_", "uint", "float_", "single", "double",
           "object_", "character", "flexible"]

euler_gamma = float(np.euler_gamma)
int_, uint, float_, single, double = dtypes.int64, dtypes.uint64, dtypes.float64, dtypes.float32, dtypes.float64
object_, character, flexible = np.object_, np.character, np.flexible
iterable = np.iterable
array_repr, array_str = np.array_repr, np.array_str
get_printoptions, set_printoptions, printoptions = np.get_printoptions, np.set_printoptions, np.printoptions


def isscalar(element) -> bool:
  """Whether element is a scalar: a Python or numpy scalar, or a 0-d array.

  >>> tnp.isscalar(tnp.array(1.0)), tnp.isscalar([1.0])
  (True, False)
  """
  if np.isscalar(element): return True
  if isinstance(element, (np.ndarray, Array)): return element.ndim == 0
  return False


def append(arr_, values, axis=None) -> Array:
  """arr with values appended (both flattened when axis is None).

  >>> tnp.append(tnp.array([1, 2]), tnp.array([[3]]))
  Array([1, 2, 3], dtype=int32)
  """
  if axis is None: return concatenate([ravel(arr(arr_, "append")), ravel(arr(values, "append"))], 0)
  return concatenate([arr(arr_, "append"), arr(values, "append")], axis=axis)


def delete(arr_, obj, axis=None, *, assume_unique_indices: bool = False) -> Array:
  """arr without the entries obj (an int, slice, index array or boolean mask) along axis.

  >>> tnp.delete(tnp.array([1, 2, 3, 4]), tnp.array([0, 2]))
  Array([2, 4], dtype=int32)
  """
  a = arr(arr_, "delete")
  if axis is None: a, axis = ravel(a), 0
  axis = normalize_axis(axis, a.ndim, "delete")
  n, pre = a.shape[axis], (slice(None),) * axis
  if isinstance(obj, (int, np.integer)):
    i = normalize_axis(int(obj), n, "delete", "obj")
    return concatenate([a[pre + (slice(0, i),)], a[pre + (slice(i + 1, None),)]], axis=axis)
  if isinstance(obj, slice):
    obj, assume_unique_indices = np.arange(n)[obj], True
  o = obj if isinstance(obj, Array) else np.asarray(obj)
  if assume_unique_indices and (o.dtype.is_int if isinstance(o, Array) else o.dtype.kind in "iu"):
    o = ravel(arr(o, "delete"))
    o = sort(where(o < 0, o + n, o).clip(0, n))
    o = o - arange(o.shape[0]).astype(o.dtype)
    i = arange(n - o.shape[0]).astype(o.dtype)
    i = i + _sum(i[None, :] >= o[:, None], axis=0).astype(i.dtype)
    return a[pre + (i,)]
  if isinstance(o, Array): o = np.asarray(concrete(o, "delete", "obj", "pass assume_unique_indices=True"))
  if o.dtype.kind in "iu" or (o.dtype.kind == "f" and o.size == 0):
    mask = np.ones(n, dtype=bool)
    mask[o.astype(np.int64)] = False
  elif o.dtype == bool:
    if o.shape != (n,):
      raise ValueError(f"delete: for boolean indices, obj must be one-dimensional with length {n}, got {o.shape}")
    mask = ~o
  else:
    raise ValueError(f"delete: obj must be integer or bool, got dtype {o.dtype}")
  return a[pre + (mask,)]


def insert(arr_, obj, values, axis=None) -> Array:
  """arr with values inserted before the indices obj along axis (flattened when axis is None).

  >>> tnp.insert(tnp.array([1, 2, 3]), 1, tnp.array([9, 8]))
  Array([1, 9, 8, 2, 3], dtype=int32)
  """
  a = arr(arr_, "insert")
  if axis is None: a, axis = ravel(a), 0
  axis = normalize_axis(axis, a.ndim, "insert")
  if isinstance(obj, slice): idx = arange(*obj.indices(a.shape[axis]))
  else: idx = arr(obj, "insert")
  if idx.ndim > 1: raise ValueError(f"insert: obj must be a slice, a one-dimensional array or a scalar; got {obj}")
  if not idx.dtype.is_int:
    if idx.size == 0 and not isinstance(obj, Array): idx = idx.astype(dtypes.default_int())
    else: raise ValueError(f"insert: index array must be integer typed; got {obj}")
  v = to_array(values, a.dtype, fn="insert")
  if v.ndim < a.ndim: v = v.reshape((1,) * (a.ndim - v.ndim) + v.shape)
  if idx.size == 1:
    index = ravel(idx)[0]
    if idx.ndim == 0: v = moveaxis(v, 0, axis)
    idx = full((v.shape[axis],), 0, idx.dtype) + index
  n_in = a.shape[axis]
  n_ins = np.broadcast_shapes(idx.shape, (v.shape[axis],))[0]
  shape = list(a.shape)
  shape[axis] += n_ins
  out = zeros_like(a, shape=tuple(shape))
  idx = where(idx < 0, idx + n_in, idx).clip(0, n_in)
  vind = idx.at[argsort(idx)].add(arange(n_ins).astype(idx.dtype))
  amask = ones(n_in + n_ins, dtype=dtypes.bool_).at[vind].set(False)
  aind = nonzero(amask, size=n_in)[0]
  pre = (slice(None),) * axis
  if v.shape[axis] != n_ins: v = Array(v.uop.broadcast(tuple(n_ins if d == axis else s for d, s in
                                                               enumerate(out.shape))))
  out = out.at[pre + (vind,)].set(v)
  return out.at[pre + (aind,)].set(a)


def _block(xs):
  if isinstance(xs, tuple): raise ValueError(f"block: tuples are not allowed, got {xs}")
  if isinstance(xs, list):
    if not xs: raise ValueError("block: empty lists are not allowed")
    parts = [_block(x) for x in xs]
    depth = parts[0][1]
    if any(d != depth for _, d in parts): raise ValueError("block: mismatched list depths")
    rank = max(depth, max(p.ndim for p, _ in parts))
    arrs = [p.reshape((1,) * (rank - p.ndim) + p.shape) for p, _ in parts]
    return concatenate(arrs, axis=-depth), depth + 1
  return arr(xs, "block"), 1


def block(arrays) -> Array:
  """An array assembled from nested lists of blocks (the innermost list joined along the last axis).

  >>> tnp.block([[tnp.ones((1, 2), int), tnp.zeros((1, 1), int)], [tnp.full((1, 3), 7)]])
  Array([[1, 1, 0],
         [7, 7, 7]], dtype=int32)
  """
  return _block(arrays)[0]


def resize(a, new_shape) -> Array:
  """a flattened and repeated (or cut) to new_shape.

  >>> tnp.resize(tnp.array([1, 2, 3]), (2, 2))
  Array([[1, 2],
         [3, 1]], dtype=int32)
  """
  x = ravel(arr(a, "resize"))
  shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
  if any(d < 0 for d in shape):
    raise ValueError(f"resize: all elements of new_shape must be non-negative, got {shape}")
  size = math.prod(shape)
  if x.size == 0 or size == 0: return zeros(shape, x.dtype)
  return reshape(tile(x, -(-size // x.size))[:size], shape)


def rollaxis(a, axis: int, start: int = 0) -> Array:
  """a with axis moved to before position start.

  >>> tnp.rollaxis(tnp.zeros((2, 3, 4)), 2).shape
  (4, 2, 3)
  """
  x = arr(a, "rollaxis")
  start = static_int(start, "rollaxis", "start")
  axis = normalize_axis(axis, x.ndim, "rollaxis")
  if not -x.ndim <= start <= x.ndim:
    raise ValueError(f"rollaxis: start={start} must satisfy {-x.ndim}<=start<={x.ndim}")
  if start < 0: start += x.ndim
  if start > axis: start -= 1
  return moveaxis(x, axis, start)


def trim_zeros(filt, trim: str = "fb", axis=None) -> Array:
  """filt without its leading ('f') and trailing ('b') zeros.

  >>> tnp.trim_zeros(tnp.array([0, 1, 0, 2, 0]))
  Array([1, 0, 2], dtype=int32)
  """
  x = concrete(arr(filt, "trim_zeros"), "trim_zeros", "filt")
  v = np.asarray(x)
  axes = set(range(v.ndim)) if axis is None else {normalize_axis(a, v.ndim, "trim_zeros")
                                                   for a in ((axis,) if isinstance(axis, int) else axis)}
  key = []
  for ax in range(v.ndim):
    if ax not in axes: key.append(slice(None)); continue
    mask = v.any(axis=tuple(i for i in range(v.ndim) if i != ax)) if v.ndim > 1 else v != 0
    if not mask.any(): key.append(slice(0, 0)); continue
    start = int(mask.argmax()) if "f" in trim.lower() else None
    stop = v.shape[ax] - int(mask[::-1].argmax()) if "b" in trim.lower() else None
    key.append(slice(start, stop))
  return x[tuple(key)]


def vander(x, N: int | None = None, increasing: bool = False) -> Array:
  """The Vandermonde matrix of x: columns x**(N-1), ..., x, 1 (reversed when increasing).

  >>> tnp.vander(tnp.array([1, 2, 3]), 3)
  Array([[1, 1, 1],
         [4, 2, 1],
         [9, 3, 1]], dtype=int32)
  """
  xa = arr(x, "vander")
  if xa.ndim != 1: raise ValueError(f"vander: x must be a one-dimensional array, got shape {xa.shape}")
  N = xa.shape[0] if N is None else static_int(N, "vander", "N")
  if N < 0: raise ValueError(f"vander: N must be nonnegative, got {N}")
  p = arange(N).astype(xa.dtype)
  if not increasing: p = (N - 1) - p
  return power(xa[:, None], p[None, :])


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None, axis: int = 0) -> Array:
  """num numbers spaced evenly on a log scale, base**start to base**stop.

  >>> tnp.logspace(0, 2, 3)
  Array([  1.,  10., 100.], dtype=float32)
  """
  dt = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtypes.as_dtype(dtype, "logspace"))
  ft = dt if dt.is_float else dtypes.default_float()
  lin = linspace(start, stop, num, endpoint=endpoint, axis=axis, dtype=ft)
  return power(to_array(base, ft, fn="logspace"), lin).astype(dt)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0) -> Array:
  """num numbers spaced evenly on a log scale from start to stop.

  >>> tnp.geomspace(1, 100, 3)
  Array([  1.,  10., 100.], dtype=float32)
  """
  s, e = inexact("geomspace", start, stop)
  dt = s.dtype if dtype is None else dtypes.canonicalize(dtypes.as_dtype(dtype, "geomspace"))
  sg = sign(s)
  res = sg[None] * logspace(log10(s / sg), log10(e / sg), num, endpoint=endpoint, base=10.0, dtype=s.dtype, axis=0)
  if axis != 0: res = moveaxis(res, 0, axis)
  return res.astype(dt)


def fromfunction(function, shape, *, dtype=float, **kwargs):
  """function(*coordinates) evaluated over a grid of shape (vectorized with vmap).

  >>> tnp.fromfunction(lambda i, j: i + 2 * j, (2, 2), dtype=int)
  Array([[0, 2],
         [1, 3]], dtype=int32)
  """
  shape = tuple(static_int(s, "fromfunction", "shape") for s in shape)
  for i in range(len(shape)):
    in_axes = [0 if i == j else None for j in range(len(shape))]
    function = vmap(function, in_axes=tuple(in_axes[::-1]))
  return function(*(arange(s, dtype=dtype) for s in shape), **kwargs)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0) -> Array:
  """An array of the bytes in buffer read as dtype (as np.frombuffer).

  >>> tnp.frombuffer(b"\\x01\\x02", dtype=tnp.uint8)
  Array([1, 2], dtype=uint8)
  """
  return to_array(np.frombuffer(buffer, dtype=dtypes.as_dtype(dtype, "frombuffer").np, count=count, offset=offset),
                  fn="frombuffer")


def fromstring(string: str, dtype=float, count: int = -1, *, sep: str) -> Array:
  """An array of the numbers in a text string separated by sep (as np.fromstring).

  >>> tnp.fromstring("1 2 3", dtype=int, sep=" ")
  Array([1, 2, 3], dtype=int32)
  """
  return to_array(np.fromstring(string, dtype=dtypes.as_dtype(dtype, "fromstring").np, count=count, sep=sep),
                  fn="fromstring")


def fromiter(*args, **kwargs):
  """Not supported (it may consume an iterator, a side effect): use asarray(np.fromiter(...))."""
  raise NotImplementedError("fromiter is not supported because it may be non-pure; use "
                            "tracegrad.numpy.asarray(np.fromiter(...)) instead")


def fromfile(*args, **kwargs):
  """Not supported (reading a file is a side effect): use asarray(np.fromfile(...))."""
  raise NotImplementedError("fromfile is not supported because it may be non-pure; use "
                            "tracegrad.numpy.asarray(np.fromfile(...)) instead")


def _ints(fn, x1, x2):
  (a, b), _, _ = promote(fn, x1, x2)
  if not a.dtype.is_int: raise ValueError(f"{fn}: arguments must be integers, got {a.dtype}")
  shape = np.broadcast_shapes(a.shape, b.shape)
  return Array(a.uop.broadcast(shape), a.weak_type), Array(b.uop.broadcast(shape), b.weak_type)


def gcd(x1, x2) -> Array:
  """The greatest common divisor of |x1| and |x2|, elementwise.

  >>> tnp.gcd(tnp.array([12, 7, 0]), 18)
  Array([ 6,  1, 18], dtype=int32)
  """
  a, b = _ints("gcd", x1, x2)

  def body(xs):
    x, y = xs
    nz = y != 0
    x, y = where(nz, y, x), where(nz, remainder(x, where(nz, y, 1)), 0)
    return where(x < y, y, x), where(x < y, x, y)

  return while_loop(lambda xs: _any(xs[1] != 0), body, (_abs(a), _abs(b)))[0]


def lcm(x1, x2) -> Array:
  """The least common multiple of |x1| and |x2|, elementwise.

  >>> tnp.lcm(tnp.array([4, 6, 0]), 6)
  Array([12,  6,  0], dtype=int32)
  """
  a, b = _ints("lcm", x1, x2)
  a, b = _abs(a), _abs(b)
  d = gcd(a, b)
  return where(d == 0, 0, a * floor_divide(b, where(d == 0, 1, d)))


def ldexp(x1, x2) -> Array:
  """x1 * 2**x2 (x2 integer).

  >>> tnp.ldexp(tnp.array([1.5, 3.0]), tnp.array([2, -1]))
  Array([6. , 1.5], dtype=float32)
  """
  e = arr(x2, "ldexp")
  if not e.dtype.is_int: raise TypeError(f"ldexp: x2 must be of integer type, got {e.dtype}")
  x, = inexact("ldexp", x1)
  h = floor_divide(e, 2)
  return x * exp2(h.astype(x.dtype)) * exp2((e - h).astype(x.dtype))


def frexp(x) -> tuple[Array, Array]:
  """The mantissa m (0.5 <= |m| < 1) and integer exponent e with x = m * 2**e.

  >>> tnp.frexp(tnp.array([3.0, 0.0]))
  (Array([0.75, 0.  ], dtype=float32), Array([2, 0], dtype=int32))
  """
  xa, = inexact("frexp", x)
  a = _abs(xa)
  ok = isfinite(xa) & (xa != 0)
  safe = where(ok, a, 1)
  e = floor(log2(safe)) + 1
  m = safe / exp2(e)
  e = where(m >= 1, e + 1, where(m < 0.5, e - 1, e))
  m = safe / exp2(e)
  return where(ok, sign(xa) * m, xa), where(ok, e, 0).astype(dtypes.int32)


def modf(x, out=None) -> tuple[Array, Array]:
  """The fractional and integral parts of x (both with x's sign).

  >>> tnp.modf(tnp.array([-1.5, 2.25]))
  (Array([-0.5 ,  0.25], dtype=float32), Array([-1.,  2.], dtype=float32))
  """
  if out is not None: raise NotImplementedError("modf: the 'out' argument is not supported (arrays are immutable)")
  xa, = inexact("modf", x)
  whole = where(xa < 0, ceil(xa), floor(xa))
  return xa - whole, whole


_UINT = {2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}


def spacing(x) -> Array:
  """The distance from x to the next float away from zero (negative for negative x).

  >>> tnp.spacing(tnp.array([1.0, -1.0]))
  Array([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
  """
  xa, = inexact("spacing", x)
  a = _abs(xa)
  u = _UINT[xa.dtype.itemsize]
  bits = bitcast_convert_type(a, u)
  nxt = bitcast_convert_type(bits + to_array(1, u, fn="spacing"), xa.dtype)
  d = nxt - a
  return where(isfinite(xa), where(xa < 0, -d, d), float("nan"))


def i0(x) -> Array:
  """The modified Bessel function of the first kind, order 0 (power series; accurate for |x| up to about 50).

  >>> tnp.i0(tnp.array([0.0, 1.0]))
  Array([1.       , 1.266066], dtype=float32)
  """
  xa, = inexact("i0", x)
  y = (xa * 0.5) ** 2
  term, total = y * 0 + 1, y * 0 + 1
  for k in range(1, 80):
    term = term * y / float(k * k)
    total = total + term
  return total


def bitwise_count(x) -> Array:
  """The number of 1 bits in the absolute value of each integer (uint8).

  >>> tnp.bitwise_count(tnp.array([0, 7, -1]))
  Array([0, 3, 1], dtype=uint8)
  """
  xa = arr(x, "bitwise_count")
  if not (xa.dtype.is_int or xa.dtype.is_bool):
    raise TypeError(f"bitwise_count: x must be an integer or boolean array, got {xa.dtype}")
  if xa.dtype.is_bool: return xa.astype(dtypes.uint8)
  u = _UINT.get(xa.dtype.itemsize, dtypes.uint32)
  v = (_abs(xa) if not xa.dtype.is_unsigned else xa).astype(u)
  total = zeros(xa.shape, u)
  for i in range(xa.dtype.itemsize * 8):
    total = total + bitwise_and(right_shift(v, i), 1)
  return total.astype(dtypes.uint8)


def packbits(a, axis=None, bitorder: str = "big") -> Array:
  """The truthiness of a's elements packed 8 to a uint8 along axis (flattened when None).

  >>> tnp.packbits(tnp.array([1, 0, 1]))
  Array([160], dtype=uint8)
  """
  x = arr(a, "packbits")
  if not (x.dtype.is_int or x.dtype.is_bool):
    raise TypeError(f"packbits: expected an input array of integer or boolean data type, got {x.dtype}")
  if bitorder not in ("little", "big"):
    raise ValueError(f"packbits: bitorder must be 'little' or 'big', got {bitorder!r}")
  x = (x != 0).astype(dtypes.uint8)
  bits = arange(8, dtype=dtypes.uint8)
  if bitorder == "big": bits = bits[::-1]
  if axis is None: x, axis = ravel(x), 0
  x = swapaxes(x, axis, -1)
  rem = x.shape[-1] % 8
  if rem: x = pad(x, [(0, 0)] * (x.ndim - 1) + [(0, 8 - rem)])
  x = x.reshape(x.shape[:-1] + (x.shape[-1] // 8, 8))
  packed = _sum(left_shift(x, bits), axis=-1).astype(dtypes.uint8)
  return swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count: int | None = None, bitorder: str = "big") -> Array:
  """The bits of a uint8 array as a uint8 array of 0s and 1s, 8 per element along axis.

  >>> tnp.unpackbits(tnp.array([160], dtype=tnp.uint8))
  Array([1, 0, 1, 0, 0, 0, 0, 0], dtype=uint8)
  """
  x = arr(a, "unpackbits")
  if x.dtype is not dtypes.uint8: raise TypeError(f"unpackbits: expected an input array of uint8, got {x.dtype}")
  if bitorder not in ("little", "big"):
    raise ValueError(f"unpackbits: bitorder must be 'little' or 'big', got {bitorder!r}")
  bits = left_shift(to_array(1, dtypes.uint8, fn="unpackbits"), arange(8, dtype=dtypes.uint8))
  if bitorder == "big": bits = bits[::-1]
  if axis is None: x, axis = ravel(x), 0
  x = swapaxes(x, axis, -1)
  out = (bitwise_and(x[..., None], bits) > 0).astype(dtypes.uint8)
  out = out.reshape(out.shape[:-2] + (-1,))
  if count is not None:
    if count > out.shape[-1]: out = pad(out, [(0, 0)] * (out.ndim - 1) + [(0, count - out.shape[-1])])
    else: out = out[..., :count]
  return swapaxes(out, axis, -1)


def lexsort(keys, axis: int = -1) -> Array:
  """The indices that sort by the last key, ties broken by the one before, and so on (stable).

  >>> tnp.lexsort((tnp.array([2, 1, 3]), tnp.array([1, 0, 1])))
  Array([1, 0, 2], dtype=int32)
  """
  ks = [arr(k, "lexsort") for k in keys]
  if not ks: raise TypeError("lexsort: need sequence of keys with len > 0")
  shape = ks[0].shape
  if any(k.shape != shape for k in ks):
    raise ValueError(f"lexsort: all keys need to be the same shape, got {[k.shape for k in ks]}")
  if not shape: return zeros((), dtypes.default_int())
  ax = normalize_axis(axis, len(shape), "lexsort")
  perm = Array(arange(shape[ax]).uop.reshape(tuple(shape[ax] if d == ax else 1 for d in range(len(shape))))
               .broadcast(shape))
  for k in ks:
    perm = take_along_axis(perm, argsort(take_along_axis(k, perm, axis=ax), axis=ax, stable=True), axis=ax)
  return perm


def partition(a, kth: int, axis: int = -1) -> Array:
  """a with its kth+1 smallest values first (ascending) and the rest after them (descending), along axis.

  >>> tnp.partition(tnp.array([3, 1, 2, 5, 4, 2]), 2)
  Array([1, 2, 2, 5, 4, 3], dtype=int32)
  """
  x = arr(a, "partition")
  kth = static_int(kth, "partition", "kth")
  ax = normalize_axis(axis, x.ndim, "partition")
  n = x.shape[ax]
  if not -n <= kth < n: raise ValueError(f"partition: kth={kth} out of bounds for axis of length {n}")
  if kth < 0: kth += n
  s = moveaxis(sort(x, axis=ax), ax, -1)
  return moveaxis(concatenate([s[..., :kth + 1], flip(s[..., kth + 1:], -1)], -1), -1, ax)


def argpartition(a, kth: int, axis: int = -1) -> Array:
  """The indices that partition a: those of the kth+1 smallest values first (in sorted order), then the others (in
  index order).

  >>> tnp.argpartition(tnp.array([3, 1, 2, 5, 4, 2, 5]), 2)
  Array([1, 2, 5, 0, 3, 4, 6], dtype=int32)
  """
  x = arr(a, "argpartition")
  kth = static_int(kth, "argpartition", "kth")
  ax = normalize_axis(axis, x.ndim, "argpartition")
  n = x.shape[ax]
  if not -n <= kth < n: raise ValueError(f"argpartition: kth={kth} out of bounds for axis of length {n}")
  if kth < 0: kth += n
  xm = moveaxis(x, ax, -1)
  perm = argsort(xm, axis=-1, stable=True)
  rest = sort(perm[..., kth + 1:], axis=-1)
  return moveaxis(concatenate([perm[..., :kth + 1], rest], -1), -1, ax)


def apply_along_axis(func1d, axis: int, arr_, *args, **kwargs) -> Array:
  """func1d applied to every 1-d slice of arr along axis (vectorized with vmap).

  >>> tnp.apply_along_axis(lambda v: v[0] + v[-1], 1, tnp.array([[1, 2, 3], [4, 5, 6]]))
  Array([ 4, 10], dtype=int32)
  """
  x = arr(arr_, "apply_along_axis")
  axis = normalize_axis(axis, x.ndim, "apply_along_axis")

  def func(v): return func1d(v, *args, **kwargs)

  for i in range(1, x.ndim - axis): func = vmap(func, in_axes=i, out_axes=-1)
  for _ in range(axis): func = vmap(func, in_axes=0, out_axes=0)
  return func(x)


def apply_over_axes(func, a, axes) -> Array:
  """func(a, axis) applied over each of axes in turn, keeping the number of dimensions.

  >>> tnp.apply_over_axes(tnp.sum, tnp.ones((2, 3)), [0, 1])
  Array([[6.]], dtype=float32)
  """
  x = arr(a, "apply_over_axes")
  for axis in axes:
    b = func(x, axis)
    if b.ndim == x.ndim: x = b
    elif b.ndim == x.ndim - 1: x = expand_dims(b, axis)
    else: raise ValueError(f"apply_over_axes: function returned shape {b.shape} for input of shape {x.shape}")
  return x


def matvec(x1, x2, /) -> Array:
  """Batched matrix-vector products: x1 (..., m, n) with x2 (..., n).

  >>> tnp.matvec(tnp.eye(2), tnp.array([1.0, 2.0]))
  Array([1., 2.], dtype=float32)
  """
  return matmul(arr(x1, "matvec"), arr(x2, "matvec")[..., None])[..., 0]


def vecmat(x1, x2, /) -> Array:
  """Batched vector-matrix products: x1 (..., m) with x2 (..., m, n).

  >>> tnp.vecmat(tnp.array([1.0, 2.0]), tnp.eye(2))
  Array([1., 2.], dtype=float32)
  """
  return matmul(arr(x1, "vecmat")[..., None, :], arr(x2, "vecmat"))[..., 0, :]


def _conv(fn, a, v, mode, precision, preferred_element_type):
  x, y = arr(a, fn), arr(v, fn)
  if x.ndim != 1 or y.ndim != 1:
    raise ValueError(f"{fn}: only 1-dimensional inputs are supported, got shapes {x.shape} and {y.shape}")
  if preferred_element_type is None: x, y = inexact(fn, x, y)
  else: (x, y), _, _ = promote(fn, x, y)
  if x.shape[0] == 0 or y.shape[0] == 0:
    raise ValueError(f"{fn}: inputs cannot be empty, got shapes {x.shape} and {y.shape}")
  rev = False
  if fn == "correlate":
    if x.shape[0] < y.shape[0]: x, y, rev = y, x, True
  else:
    if x.shape[0] < y.shape[0]: x, y = y, x
    y = flip(y)
  m = y.shape[0]
  if mode == "valid": padding = [(0, 0)]
  elif mode == "same": padding = [(m // 2, m - m // 2 - 1)]
  elif mode == "full": padding = [(m - 1, m - 1)]
  else: raise ValueError(f"{fn}: mode must be one of ['full', 'same', 'valid'], got {mode!r}")
  out = conv_general_dilated(x[None, None, :], y[None, None, :], (1,), padding, precision=precision,
                             preferred_element_type=preferred_element_type)[0, 0]
  return out[::-1] if rev else out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None) -> Array:
  """The discrete linear convolution of two 1-d arrays.

  >>> tnp.convolve(tnp.array([1.0, 2.0, 3.0]), tnp.array([0.0, 1.0]))
  Array([0., 1., 2., 3.], dtype=float32)
  """
  return _conv("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None) -> Array:
  """The cross-correlation of two 1-d arrays.

  >>> tnp.correlate(tnp.array([1.0, 2.0, 3.0]), tnp.array([0.0, 1.0]), mode="full")
  Array([1., 2., 3., 0.], dtype=float32)
  """
  return _conv("correlate", a, v, mode, precision, preferred_element_type)


def save(file, arr_, allow_pickle: bool = True) -> None:
  """Save an array to a .npy file (as np.save)."""
  np.save(file, np.asarray(arr_), allow_pickle=allow_pickle)


def savez(file, *args, **kwds) -> None:
  """Save arrays to an uncompressed .npz file (as np.savez)."""
  np.savez(file, *(np.asarray(a) for a in args), **{k: np.asarray(v) for k, v in kwds.items()})


def load(file, *args, **kwargs):
  """Load an array (as an Array) or the arrays of an .npz file (as np.load)."""
  out = np.load(file, *args, **kwargs)
  if isinstance(out, np.ndarray):
    if out.dtype == "V2": out = out.view(dtypes.bfloat16.np)
    try:
      out = to_array(out, fn="load")
    except (TypeError, ValueError):
      pass
  return out
