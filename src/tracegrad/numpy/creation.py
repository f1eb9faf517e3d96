"""Array creation: array, asarray, zeros, ones, full, empty, *_like, arange, linspace, eye, identity, tri, triu, tril."""
from __future__ import annotations

import math
import operator

import numpy as np

from ..array import Array, device_put, to_array
from ..ir.dtypes import DType
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import check_size
from .core import normalize_axis

__all__ = ["array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
           "arange", "linspace", "eye", "identity", "tri", "triu", "tril", "copy", "astype", "from_dlpack"]


def _dt(dtype, fn):
  return None if dtype is None else dtypes.canonicalize(dtypes.as_dtype(dtype, fn))


def _on(out: Array, device) -> Array:
  """out placed on `device` (None: left where it is), as device_put."""
  return out if device is None else device_put(out, device)


def _shape(shape, fn):
  shape = (shape,) if isinstance(shape, int) or hasattr(shape, "__index__") else tuple(shape)
  try:
    shape = tuple(operator.index(n) for n in shape)
  except TypeError:
    raise TypeError(f"{fn}: shape must be a sequence of integers, got {shape!r}") from None
  if any(n < 0 for n in shape): raise ValueError(f"{fn}: negative dimensions are not allowed, got shape {shape}")
  return shape


def array(object, dtype=None, copy: bool = True, ndmin: int = 0) -> Array:
  """An Array from an Array, numpy array, scalar or nested sequence.

  >>> tnp.array([1, 2, 3])
  Array([1, 2, 3], dtype=int32)
  """
  out = to_array(object, _dt(dtype, "array"), fn="array")
  if ndmin > out.ndim: out = Array(out.uop.reshape((1,) * (ndmin - out.ndim) + out.shape), out.weak_type)
  return out


def asarray(a, dtype=None, order=None, *, copy=None, device=None) -> Array:
  """`a` as an Array (no copy for an Array of the right dtype), on `device` if given.

  >>> tnp.asarray([1.5, 2], dtype=tnp.float16)
  Array([1.5, 2. ], dtype=float16)
  """
  if hasattr(a, "__dlpack__") and not isinstance(a, (Array, np.ndarray, np.generic)) and not hasattr(a, "__array__"):
    a = np.from_dlpack(a)
  return _on(to_array(a, _dt(dtype, "asarray"), fn="asarray"), device)


def astype(x, dtype, /, *, copy: bool = False, device=None) -> Array:
  """x converted to `dtype` (values converted as numpy's astype), on `device` if given.

  >>> tnp.astype(tnp.array([1.7, -1.7]), tnp.int32)
  Array([ 1, -1], dtype=int32)
  """
  x = x if isinstance(x, Array) else to_array(x, fn="astype")
  d = dtypes.canonicalize(dtypes.as_dtype(dtype, "astype"))
  if x.dtype.is_complex and d.is_bool:   # true where either part is nonzero, as numpy (a CAST would read the real part)
    return _on(Array(x.uop.alu(Ops.CMPNE, UOp.const(x.dtype, 0, x.shape))), device)
  return _on(x if x.dtype is d and not x.weak_type else Array(x.uop.cast(d)), device)


def from_dlpack(x, /, *, device=None, copy=None) -> Array:
  """An Array of the values of an object that supports DLPack (a numpy array, a torch tensor, an Array).

  >>> tnp.from_dlpack(np.arange(3.0, dtype=np.float32))
  Array([0., 1., 2.], dtype=float32)
  """
  if isinstance(x, Array): return _on(x, device)
  if not hasattr(x, "__dlpack__"):
    raise TypeError(f"from_dlpack: {type(x).__name__} does not support DLPack (it has no __dlpack__ method)")
  return _on(to_array(np.from_dlpack(x), fn="from_dlpack"), device)


def copy(a) -> Array: return asarray(a)


def full(shape, fill_value, dtype=None, *, device=None) -> Array:
  """An array of `shape` filled with `fill_value`.

  >>> tnp.full((2,), 7)
  Array([7, 7], dtype=int32)
  """
  return _on(_full(shape, fill_value, dtype, "full"), device)


def _full(shape, fill_value, dtype, fn: str) -> Array:
  shape = _shape(shape, fn)
  v = to_array(fill_value, _dt(dtype, fn), fn=fn)
  check_size(shape, v.dtype, fn)
  return Array(v.uop.broadcast(shape))


def zeros(shape, dtype=None, *, device=None) -> Array:
  """>>> tnp.zeros((2, 2)).shape
  (2, 2)
  """
  return _on(_full(shape, 0, dtype or dtypes.default_float(), "zeros"), device)


def ones(shape, dtype=None, *, device=None) -> Array:
  return _on(_full(shape, 1, dtype or dtypes.default_float(), "ones"), device)


def empty(shape, dtype=None, *, device=None) -> Array:
  return _on(_full(shape, 0, dtype or dtypes.default_float(), "empty"), device)


def _like(a, dtype, shape):
  a = to_array(a, fn="like")
  return (a.shape if shape is None else shape), (dtype or a.dtype)


def zeros_like(a, dtype=None, shape=None, *, device=None) -> Array: return zeros(*_like(a, dtype, shape), device=device)
def ones_like(a, dtype=None, shape=None, *, device=None) -> Array: return ones(*_like(a, dtype, shape), device=device)
def empty_like(a, dtype=None, shape=None, *, device=None) -> Array: return zeros(*_like(a, dtype, shape), device=device)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None) -> Array:
  s, d = _like(a, dtype, shape)
  return full(s, fill_value, d, device=device)


def _static_number(x, fn, name):
  if isinstance(x, Array):
    if x.is_traced:
      raise TypeError(f"{fn}: {name} must be a concrete number, got a traced value; pass a Python number")
    return x.item()
  return x


def arange(start, stop=None, step=None, dtype=None, *, device=None) -> Array:
  """Evenly spaced values in [start, stop).

  >>> tnp.arange(3)
  Array([0, 1, 2], dtype=int32)
  """
  start, stop, step = (_static_number(v, "arange", n) for v, n in ((start, "start"), (stop, "stop"), (step, "step")))
  if stop is None: start, stop = 0, start
  step = 1 if step is None else step
  if step == 0: raise ValueError("arange: step must not be zero")
  d = _dt(dtype, "arange")
  if d is None:
    d = dtypes.default_float() if any(isinstance(v, float) for v in (start, stop, step)) else dtypes.default_int()
  n = max(0, math.ceil((stop - start) / step))
  if d.is_int:
    return _on(Array(UOp.buffer((np.arange(n, dtype=np.int64) * int(step) + int(start)).astype(d.np))), device)
  out = UOp.iota((n,), 0, dtypes.int32).cast(d) * UOp.const(d, step, (n,)) + UOp.const(d, start, (n,))
  return _on(Array(out), device)


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0, *,
             device=None):
  """`num` evenly spaced values from start to stop.

  >>> tnp.linspace(0, 1, 3)
  Array([0. , 0.5, 1. ], dtype=float32)
  """
  if num < 0: raise ValueError(f"linspace: num must be non-negative, got {num}")
  d = _dt(dtype, "linspace")
  if d is None:   # complex endpoints give a complex result, as jax.numpy
    cplx = any(v.dtype.is_complex if isinstance(v, Array) else np.iscomplexobj(v) for v in (start, stop))
    d = dtypes.default_complex() if cplx else dtypes.default_float()
  ft = d if d.is_inexact else dtypes.default_float()
  s, e = to_array(start, fn="linspace").astype(ft), to_array(stop, fn="linspace").astype(ft)
  div = (num - 1) if endpoint else num
  shape = np.broadcast_shapes(s.shape, e.shape)
  t = Array(UOp.iota((num,), 0, dtypes.int32).cast(ft)).reshape((num,) + (1,) * len(shape))
  step = (e - s) / div if div > 0 else (e - s) * float("nan")
  out = s + t * step if div > 0 else s + t * (e - s)
  if endpoint and num > 1:
    out = out.at[num - 1].set(e) if shape == () else _set_last(out, e)
  out = _moveaxis(out, 0, normalize_axis(axis, out.ndim, "linspace")).astype(d)
  return (_on(out, device), step.astype(d)) if retstep else _on(out, device)


def _set_last(out, e):
  from .elementwise import where
  n = out.shape[0]
  last = Array(UOp.iota(out.shape, 0, dtypes.int32)) == n - 1
  return where(last, e, out)


def _moveaxis(x, src, dst):
  perm = [i for i in range(x.ndim) if i != src]
  perm.insert(dst, src)
  return Array(x.uop.permute(perm), x.weak_type)


def eye(N: int, M: int | None = None, k: int = 0, dtype=None, *, device=None) -> Array:
  """>>> tnp.eye(2)
  Array([[1., 0.],
         [0., 1.]], dtype=float32)
  """
  N, M, d = _square(N, M, dtype, "eye")
  k = max(-N, min(operator.index(k), M))   # a diagonal outside the matrix leaves it zero, at any distance
  i, j = UOp.iota((N, M), 0, dtypes.int32), UOp.iota((N, M), 1, dtypes.int32)
  return _on(Array((i + UOp.const(dtypes.int32, k, (N, M))).alu(Ops.CMPEQ, j).cast(d)), device)


def identity(n: int, dtype=None) -> Array: return eye(n, dtype=dtype)


def _square(N, M, dtype, fn: str):
  """eye's and tri's N and M as ints (M defaults to N) and their dtype, checked."""
  try:
    N, M = operator.index(N), None if M is None else operator.index(M)
  except TypeError:
    raise TypeError(f"{fn}: N and M must be integers, got {N!r} and {M!r}") from None
  if N < 0 or (M is not None and M < 0):
    raise ValueError(f"{fn}: negative dimensions are not allowed, got N={N} and M={M}")
  M = N if M is None else M
  d = _dt(dtype, fn) or dtypes.default_float()
  check_size((N, M), d, fn)
  return N, M, d


def _lower_mask(N, M, k):
  i, j = UOp.iota((N, M), 0, dtypes.int32), UOp.iota((N, M), 1, dtypes.int32)
  return j.alu(Ops.CMPLT, i + UOp.const(dtypes.int32, k + 1, (N, M)))  # j <= i + k


def tri(N: int, M: int | None = None, k: int = 0, dtype=None) -> Array:
  """Ones at and below the k-th diagonal of an N x M array.

  >>> tnp.tri(2, dtype=int)
  Array([[1, 0],
         [1, 1]], dtype=int32)
  """
  N, M, d = _square(N, M, dtype, "tri")
  return Array(_lower_mask(N, M, k).cast(d))


def _tri_select(m, k, lower: bool, fn: str):
  m = to_array(m, fn=fn)
  if m.ndim < 2: raise ValueError(f"{fn}: input must have at least 2 dimensions, got shape {m.shape}")
  N, M = m.shape[-2:]
  mask = _lower_mask(N, M, k if lower else k - 1)
  if not lower: mask = mask.alu(Ops.XOR, UOp.const(dtypes.bool_, True, (N, M)))
  mask = mask.broadcast(m.shape)
  return Array(mask.where(m.uop, UOp.const(m.dtype, 0, m.shape)), m.weak_type)


def tril(m, k: int = 0) -> Array: return _tri_select(m, k, True, "tril")
def triu(m, k: int = 0) -> Array: return _tri_select(m, k, False, "triu")


def _dtype_call(self: DType, x) -> Array:
  """x as an array of this type, as jnp.float32(x).

  >>> tnp.float32(3)
  Array(3., dtype=float32)
  """
  return to_array(x, dtypes.canonicalize(self), fn=self.name)   # jnp.int64(3) is int32 unless x64 is on


DType.__call__ = _dtype_call   # dtypes are callable, as jax.numpy's scalar types
