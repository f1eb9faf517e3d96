"""Reductions: sum, prod, max, min, argmax, mean, var, std, any, all, cumulative scans and their nan- variants.

Every function is a composition of REDUCE_* (which keep reduced axes with size 1), elementwise ops, IOTA and
PAD/SLICE. Dtypes follow jax.numpy: sums and products of bool and narrow integers widen to the default
integer, float16/bfloat16 accumulate in float32, means of integers are float, arg-reductions give the
default integer.
"""
from __future__ import annotations

import builtins
import math

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.dtypes import DType
from .core import arraylike as _arr, normalize_axes, normalize_axis, promote, sum_dtype

__all__ = ["sum", "prod", "product", "max", "min", "amax", "amin", "argmax", "argmin", "mean", "var", "std", "any",
           "all", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod", "ptp",
           "count_nonzero", "average", "nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"]

_SMALL_FLOATS = (dtypes.float16, dtypes.bfloat16)


# ---- helpers ----
def _dtype_arg(dtype, fn: str) -> DType | None:
  return None if dtype is None else dtypes.canonicalize(dtypes.as_dtype(dtype, fn))


def _no_out(out, fn: str):
  if out is not None: raise NotImplementedError(f"{fn}: the 'out' argument is not supported (arrays are immutable)")


def _upcast_f16(d: DType) -> DType: return dtypes.float32 if d in _SMALL_FLOATS else d




def _inexact(d: DType) -> DType: return d if d.is_inexact else dtypes.default_float()


def _drop(u: UOp, axes, keepdims: bool) -> UOp:
  return u if keepdims else u.reshape(tuple(n for i, n in enumerate(u.shape) if i not in axes))


def _const(d: DType, v, shape) -> UOp: return UOp.const(d, v, shape)


def _isnan(u: UOp) -> UOp: return u.alu(Ops.CMPNE, u)
def _nan_of(u: UOp) -> UOp: return _complex_nan(u) if u.dtype.is_complex else _isnan(u)


def _not(u: UOp) -> UOp: return u.alu(Ops.XOR, _const(dtypes.bool_, True, u.shape))


def _nonzero(u: UOp) -> UOp: return u if u.dtype.is_bool else u.alu(Ops.CMPNE, _const(u.dtype, 0, u.shape))


def _mask(where, x: Array, fn: str) -> UOp | None:
  """`where` as a bool UOp of x's shape (None stays None)."""
  if where is None: return None
  w = _arr(where, fn)
  m = _nonzero(w.uop)
  try:
    return m.broadcast(x.shape)
  except ValueError:
    raise ValueError(f"{fn}: where of shape {w.shape} does not broadcast to the array's shape {x.shape}") from None


def _masked(u: UOp, mask: UOp | None, fill) -> UOp:
  return u if mask is None else mask.where(u, _const(u.dtype, fill, u.shape))


def _scalar_initial(initial, d: DType, shape, fn: str) -> UOp:
  if isinstance(initial, Array):
    if initial.shape != (): raise ValueError(f"{fn}: initial must be a scalar, got shape {initial.shape}")
    return initial.uop.cast(d).broadcast(shape)
  return _const(d, initial, shape)


def _empty_axis(x: Array, axes) -> bool: return builtins.any(x.shape[i] == 0 for i in axes)


def _tree(u: UOp, axes, combine, ident) -> UOp:
  """u reduced over axes (kept, with size 1) by a pairwise tree of combine(a, b) -> UOp, padded with ident: for the
  reductions no REDUCE_* primitive has on complex values (prod, max, min)."""
  keep = [i for i in range(u.ndim) if i not in axes]
  lead, n = tuple(u.shape[i] for i in keep), math.prod(u.shape[i] for i in axes)
  out_shape = tuple(1 if i in axes else d for i, d in enumerate(u.shape))
  if n == 0: return _const(u.dtype, ident, out_shape)
  v = u.permute(keep + list(axes)).reshape(lead + (n,))
  full = [(0, d, 1) for d in lead]
  while n > 1:
    if n % 2:
      v = UOp.concat([v, _const(u.dtype, ident, lead + (1,))], len(lead))
      n += 1
    v = v.reshape(lead + (n // 2, 2))
    a, b = (v.slice(full + [(0, n // 2, 1), (j, j + 1, 1)]).reshape(lead + (n // 2,)) for j in (0, 1))
    v, n = combine(a, b), n // 2
  return v.reshape(out_shape)


def _complex_nan(u: UOp) -> UOp:
  """Whether either part of a complex value is nan."""
  return u.alu(Ops.REAL).alu(Ops.CMPNE, u.alu(Ops.REAL)).alu(Ops.OR, u.alu(Ops.IMAG).alu(Ops.CMPNE, u.alu(Ops.IMAG)))


# ---- sum and prod ----
def _sum_prod(fn, op, a, axis, dtype, keepdims, initial, where, promote_integers=True, nan_fill=None) -> Array:
  x = _arr(a, fn)
  axes = normalize_axes(axis, x.ndim, fn)
  d = _dtype_arg(dtype, fn)
  out_dt = d if d is not None else (sum_dtype(x.dtype) if promote_integers else x.dtype)
  mask = _mask(where, x, fn)
  ident = 0 if op is Ops.REDUCE_SUM else 1
  u = x.uop
  if nan_fill is not None and u.dtype.is_inexact: u = _nan_of(u).where(_const(u.dtype, nan_fill, u.shape), u)
  if out_dt.is_bool:  # a boolean sum is `or`, a boolean product is `and`
    b = _masked(_nonzero(u), mask, op is Ops.REDUCE_PROD)
    r = b.reduce(Ops.REDUCE_MAX if op is Ops.REDUCE_SUM else Ops.REDUCE_MIN, axes)
    if initial is not None:
      r = r.alu(Ops.OR if op is Ops.REDUCE_SUM else Ops.AND, _nonzero(_scalar_initial(initial, x.dtype, r.shape, fn)))
    return Array(_drop(r, axes, keepdims))
  comp = _upcast_f16(out_dt)
  u = _masked(u.cast(comp), mask, ident)
  # REDUCE_PROD takes no complex operand: a tree of complex products
  if comp.is_complex and op is Ops.REDUCE_PROD: r = _tree(u, axes, lambda p, q: p.alu(Ops.MUL, q), 1)
  else: r = u.reduce(op, axes)
  if initial is not None:
    r = r.alu(Ops.ADD if op is Ops.REDUCE_SUM else Ops.MUL, _scalar_initial(initial, comp, r.shape, fn))
  return Array(_drop(r.cast(out_dt), axes, keepdims), x.weak_type and d is None and out_dt is x.dtype)


def sum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None,
        promote_integers: bool = True) -> Array:
  """Sum of elements over the given axes (bool and narrow ints sum in the default integer).

  >>> tnp.sum(tnp.array([[1, 2], [3, 4]]), axis=0)
  Array([4, 6], dtype=int32)
  """
  _no_out(out, "sum")
  return _sum_prod("sum", Ops.REDUCE_SUM, a, axis, dtype, keepdims, initial, where, promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None,
         promote_integers: bool = True) -> Array:
  """Product of elements over the given axes.

  >>> tnp.prod(tnp.array([1, 2, 3, 4]))
  Array(24, dtype=int32)
  """
  _no_out(out, "prod")
  return _sum_prod("prod", Ops.REDUCE_PROD, a, axis, dtype, keepdims, initial, where, promote_integers)


product = prod


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
  """Sum treating NaN as zero.

  >>> tnp.nansum(tnp.array([1.0, tnp.nan, 2.0]))
  Array(3., dtype=float32)
  """
  _no_out(out, "nansum")
  return _sum_prod("nansum", Ops.REDUCE_SUM, a, axis, dtype, keepdims, initial, where, nan_fill=0)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
  """Product treating NaN as one.

  >>> tnp.nanprod(tnp.array([2.0, tnp.nan, 3.0]))
  Array(6., dtype=float32)
  """
  _no_out(out, "nanprod")
  return _sum_prod("nanprod", Ops.REDUCE_PROD, a, axis, dtype, keepdims, initial, where, nan_fill=1)


def count_nonzero(a, axis=None, keepdims: bool = False) -> Array:
  """The number of non-zero elements over the given axes, in the default integer.

  >>> tnp.count_nonzero(tnp.array([0, 1, 2, 0]))
  Array(2, dtype=int32)
  """
  x = _arr(a, "count_nonzero")
  axes = normalize_axes(axis, x.ndim, "count_nonzero")
  r = _nonzero(x.uop).cast(dtypes.default_int()).reduce(Ops.REDUCE_SUM, axes)
  return Array(_drop(r, axes, keepdims))


# ---- max and min ----
def _minmax(fn, op, a, axis, keepdims, initial, where, nan_skip=False) -> Array:
  x = _arr(a, fn)
  axes = normalize_axes(axis, x.ndim, fn)
  name = "max" if op is Ops.REDUCE_MAX else "min"
  if initial is None and where is not None:
    raise ValueError(f"{fn}: reduction operation {name} does not have an identity, so to use a where mask one has "
                     f"to specify 'initial'")
  if initial is None and _empty_axis(x, axes):
    raise ValueError(f"{fn}: zero-size array to reduction operation {name} which has no identity "
                     f"(shape {x.shape}, axis {axis}); pass initial=")
  d = x.dtype
  if d.is_complex: return _complex_minmax(fn, op, x, axes, keepdims, initial, where, nan_skip)
  ident = dtypes.min_value(d) if op is Ops.REDUCE_MAX else dtypes.max_value(d)
  u = x.uop
  if nan_skip and d.is_float: u = _isnan(u).where(_const(d, ident, u.shape), u)
  u = _masked(u, _mask(where, x, fn), ident)
  r = u.reduce(op, axes)
  if initial is not None:
    r = r.alu(Ops.MAX if op is Ops.REDUCE_MAX else Ops.MIN, _scalar_initial(initial, d, r.shape, fn))
  if nan_skip and d.is_float and initial is None:  # all-NaN slices give NaN
    all_nan = _isnan(x.uop).reduce(Ops.REDUCE_MIN, axes)
    r = all_nan.where(_const(d, float("nan"), r.shape), r)
  return Array(_drop(r, axes, keepdims), x.weak_type)


def _complex_minmax(fn, op, x: Array, axes, keepdims, initial, where, nan_skip) -> Array:
  """max or min of complex values in numpy's order (by the real parts, then the imaginary ones; nan propagates, or
  with nan_skip is skipped), by a tree of elementwise maximum or minimum."""
  from .elementwise import _complex_minmax as pairwise
  ew = Ops.MAX if op is Ops.REDUCE_MAX else Ops.MIN
  inf = float("inf") if op is Ops.REDUCE_MIN else -float("inf")
  ident = complex(inf, inf)
  u = _masked(x.uop, _mask(where, x, fn), ident)
  r = _tree(u, axes, lambda a, b: pairwise(ew, a, b, nan_skip), ident)
  if initial is not None: r = pairwise(ew, r, _scalar_initial(initial, x.dtype, r.shape, fn), nan_skip)
  return Array(_drop(r, axes, keepdims), x.weak_type)


def max(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
  """Maximum over the given axes; NaN propagates.

  >>> tnp.max(tnp.array([[1, 5], [3, 2]]), axis=1)
  Array([5, 3], dtype=int32)
  """
  _no_out(out, "max")
  return _minmax("max", Ops.REDUCE_MAX, a, axis, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
  """Minimum over the given axes; NaN propagates.

  >>> tnp.min(tnp.array([[1, 5], [3, 2]]), axis=1)
  Array([1, 2], dtype=int32)
  """
  _no_out(out, "min")
  return _minmax("min", Ops.REDUCE_MIN, a, axis, keepdims, initial, where)


amax = max
amin = min


def nanmax(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
  """Maximum ignoring NaN (NaN where a slice is all NaN).

  >>> tnp.nanmax(tnp.array([1.0, tnp.nan, 3.0]))
  Array(3., dtype=float32)
  """
  _no_out(out, "nanmax")
  return _minmax("nanmax", Ops.REDUCE_MAX, a, axis, keepdims, initial, where, nan_skip=True)


def nanmin(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None) -> Array:
  """Minimum ignoring NaN (NaN where a slice is all NaN).

  >>> tnp.nanmin(tnp.array([1.0, tnp.nan, 3.0]))
  Array(1., dtype=float32)
  """
  _no_out(out, "nanmin")
  return _minmax("nanmin", Ops.REDUCE_MIN, a, axis, keepdims, initial, where, nan_skip=True)


def ptp(a, axis=None, out=None, keepdims: bool = False) -> Array:
  """Range (maximum minus minimum) over the given axes.

  >>> tnp.ptp(tnp.array([4, 9, 2]))
  Array(7, dtype=int32)
  """
  _no_out(out, "ptp")
  x = _arr(a, "ptp")
  if x.dtype.is_bool: raise TypeError("ptp: not defined on bool arrays (the subtraction of booleans is undefined)")
  hi = _minmax("ptp", Ops.REDUCE_MAX, x, axis, keepdims, None, None)
  lo = _minmax("ptp", Ops.REDUCE_MIN, x, axis, keepdims, None, None)
  return Array(hi.uop.alu(Ops.SUB, lo.uop), x.weak_type)


# ---- argmax and argmin ----
def _arg(fn, op, a, axis, keepdims) -> Array:
  x = _arr(a, fn)
  if axis is None:
    u, ax = x.uop.reshape((x.size,)), 0
  else:
    u, ax = x.uop, normalize_axis(axis, x.ndim, fn)
  n = u.shape[ax]
  if n == 0: raise ValueError(f"{fn}: attempt to get {fn} of an empty sequence (shape {x.shape}, axis {axis})")
  if u.dtype.is_complex:   # numpy's order, as max and min
    ext = _complex_minmax(fn, op, Array(u), (ax,), True, None, None, False).uop.broadcast(u.shape)
  else:
    ext = u.reduce(op, (ax,)).broadcast(u.shape)
  hit = u.alu(Ops.CMPEQ, ext)
  if u.dtype.is_inexact: hit = hit.alu(Ops.OR, _nan_of(u))  # the first NaN wins, as the extreme is then NaN
  it = dtypes.default_int()
  r = hit.where(UOp.iota(u.shape, ax, it), _const(it, n, u.shape)).reduce(Ops.REDUCE_MIN, (ax,))
  if axis is None: return Array(r.reshape((1,) * x.ndim if keepdims else ()))
  return Array(_drop(r, (ax,), bool(keepdims)))


def argmax(a, axis=None, out=None, keepdims=None) -> Array:
  """Index of the first maximum (of the first NaN, if any), in the flattened array when axis is None.

  >>> tnp.argmax(tnp.array([1, 7, 7, 2]))
  Array(1, dtype=int32)
  """
  _no_out(out, "argmax")
  return _arg("argmax", Ops.REDUCE_MAX, a, axis, keepdims)


def argmin(a, axis=None, out=None, keepdims=None) -> Array:
  """Index of the first minimum (of the first NaN, if any), in the flattened array when axis is None.

  >>> tnp.argmin(tnp.array([3, 1, 1, 2]))
  Array(1, dtype=int32)
  """
  _no_out(out, "argmin")
  return _arg("argmin", Ops.REDUCE_MIN, a, axis, keepdims)


# ---- any and all ----
def _anyall(fn, op, a, axis, keepdims, where) -> Array:
  x = _arr(a, fn)
  axes = normalize_axes(axis, x.ndim, fn)
  b = _masked(_nonzero(x.uop), _mask(where, x, fn), op is Ops.REDUCE_MIN)
  return Array(_drop(b.reduce(op, axes), axes, keepdims))


def any(a, axis=None, out=None, keepdims: bool = False, *, where=None) -> Array:
  """Whether any element over the given axes is non-zero.

  >>> tnp.any(tnp.array([0, 0, 3]))
  Array(True, dtype=bool)
  """
  _no_out(out, "any")
  return _anyall("any", Ops.REDUCE_MAX, a, axis, keepdims, where)


def all(a, axis=None, out=None, keepdims: bool = False, *, where=None) -> Array:
  """Whether every element over the given axes is non-zero.

  >>> tnp.all(tnp.array([1, 0, 3]))
  Array(False, dtype=bool)
  """
  _no_out(out, "all")
  return _anyall("all", Ops.REDUCE_MIN, a, axis, keepdims, where)


# ---- mean, var, std ----
def _count(x: Array, axes, mask: UOp | None, d: DType) -> UOp:
  """The number of elements reduced (keepdims shape), in dtype d."""
  if mask is None:
    shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
    return _const(d, math.prod(x.shape[i] for i in axes), shape)
  return mask.cast(d).reduce(Ops.REDUCE_SUM, axes)


def _mean_keep(x: Array, u: UOp, axes, mask: UOp | None) -> UOp:
  """Mean of u (already in its computation dtype) over axes, keeping them."""
  s = _masked(u, mask, 0).reduce(Ops.REDUCE_SUM, axes)
  return s.alu(Ops.DIV, _count(x, axes, mask, u.dtype))


def mean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None) -> Array:
  """Arithmetic mean over the given axes (integers and bool give the default float).

  >>> tnp.mean(tnp.array([1, 2, 3, 4]))
  Array(2.5, dtype=float32)
  """
  _no_out(out, "mean")
  x = _arr(a, "mean")
  axes = normalize_axes(axis, x.ndim, "mean")
  d = _dtype_arg(dtype, "mean")
  out_dt = d if d is not None else _inexact(x.dtype)
  comp = _upcast_f16(_inexact(out_dt))
  r = _mean_keep(x, x.uop.cast(comp), axes, _mask(where, x, "mean"))
  return Array(_drop(r.cast(out_dt), axes, keepdims), x.weak_type and d is None and out_dt is x.dtype)


def _var(fn, a, axis, dtype, ddof, keepdims, where, correction, nan_skip=False) -> Array:
  if correction is not None:
    if ddof != 0: raise ValueError(f"{fn}: ddof and correction can't both be given")
    ddof = correction
  x = _arr(a, fn)
  axes = normalize_axes(axis, x.ndim, fn)
  d = _dtype_arg(dtype, fn)
  out_dt = d if d is not None else _inexact(x.dtype)
  comp = _upcast_f16(_inexact(out_dt))
  mask = _mask(where, x, fn)
  if nan_skip and x.dtype.is_inexact:
    ok = _not(_nan_of(x.uop))
    mask = ok if mask is None else mask.alu(Ops.AND, ok)
  u = x.uop.cast(comp)
  c = u.alu(Ops.SUB, _mean_keep(x, u, axes, mask).broadcast(u.shape))
  if c.dtype.is_complex:   # |c|^2, real: the variance of complex values is a real number, as numpy's
    c = c.alu(Ops.REAL).alu(Ops.MUL, c.alu(Ops.REAL)).alu(Ops.ADD, c.alu(Ops.IMAG).alu(Ops.MUL, c.alu(Ops.IMAG)))
    comp, out_dt = c.dtype, out_dt.real
  else:
    c = c.alu(Ops.MUL, c)
  s = _masked(c, mask, 0).reduce(Ops.REDUCE_SUM, axes)
  norm = _count(x, axes, mask, comp).alu(Ops.SUB, _const(comp, ddof, s.shape))
  return Array(_drop(s.alu(Ops.DIV, norm).cast(out_dt), axes, keepdims))


def var(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None,
        correction=None) -> Array:
  """Variance over the given axes, dividing by N - ddof.

  >>> tnp.var(tnp.array([1.0, 2.0, 3.0, 4.0]))
  Array(1.25, dtype=float32)
  """
  _no_out(out, "var")
  return _var("var", a, axis, dtype, ddof, keepdims, where, correction)


def std(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None,
        correction=None) -> Array:
  """Standard deviation over the given axes, sqrt(var).

  >>> tnp.std(tnp.array([1.0, 3.0]))
  Array(1., dtype=float32)
  """
  _no_out(out, "std")
  v = _var("std", a, axis, dtype, ddof, keepdims, where, correction)
  return Array(v.uop.alu(Ops.SQRT))


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None) -> Array:
  """Mean ignoring NaN.

  >>> tnp.nanmean(tnp.array([1.0, tnp.nan, 3.0]))
  Array(2., dtype=float32)
  """
  _no_out(out, "nanmean")
  x = _arr(a, "nanmean")
  if not x.dtype.is_inexact: return mean(x, axis, dtype, keepdims=keepdims, where=where)
  ok = _not(_nan_of(x.uop))
  m = _mask(where, x, "nanmean")
  return mean(x, axis, dtype, keepdims=keepdims, where=Array(ok if m is None else m.alu(Ops.AND, ok)))


def nanvar(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None) -> Array:
  """Variance ignoring NaN.

  >>> tnp.nanvar(tnp.array([1.0, tnp.nan, 3.0]))
  Array(1., dtype=float32)
  """
  _no_out(out, "nanvar")
  return _var("nanvar", a, axis, dtype, ddof, keepdims, where, None, nan_skip=True)


def nanstd(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *, where=None) -> Array:
  """Standard deviation ignoring NaN.

  >>> tnp.nanstd(tnp.array([1.0, tnp.nan, 3.0]))
  Array(1., dtype=float32)
  """
  _no_out(out, "nanstd")
  v = _var("nanstd", a, axis, dtype, ddof, keepdims, where, None, nan_skip=True)
  return Array(v.uop.alu(Ops.SQRT))


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
  """Weighted average over the given axes; with returned=True also the sum of the weights.

  >>> tnp.average(tnp.array([1.0, 2.0, 4.0]), weights=tnp.array([1.0, 1.0, 2.0]))
  Array(2.75, dtype=float32)
  """
  x = _arr(a, "average")
  if weights is None:
    avg = mean(x, axis, keepdims=keepdims)
    axes = normalize_axes(axis, x.ndim, "average")
    wsum = Array(_const(avg.dtype, math.prod(x.shape[i] for i in axes), avg.shape))
  else:
    (x, w), dt, _ = promote("average", x, weights)
    if not dt.is_inexact:
      dt = dtypes.default_float()
      x, w = Array(x.uop.cast(dt)), Array(w.uop.cast(dt))
    if x.shape != w.shape:
      if w.ndim != 1:
        raise ValueError(f"average: 1D weights expected when shapes of a {x.shape} and weights {w.shape} differ")
      if axis is None: raise ValueError("average: axis must be specified when shapes of a and weights differ")
      if not isinstance(axis, int) and not hasattr(axis, "__index__"):
        raise ValueError("average: single axis expected when shapes of a and weights differ")
      ax = normalize_axis(axis, x.ndim, "average")
      if w.shape[0] != x.shape[ax]:
        raise ValueError(f"average: length of weights {w.shape[0]} not compatible with axis {axis} of shape {x.shape}")
      w = Array(w.uop.reshape(tuple(w.shape[0] if i == ax else 1 for i in range(x.ndim))).broadcast(x.shape))
    wsum = sum(w, axis, keepdims=keepdims)
    num = sum(Array(x.uop.alu(Ops.MUL, w.uop)), axis, keepdims=keepdims)
    avg = Array(num.uop.alu(Ops.DIV, wsum.uop))
  if returned:
    if wsum.shape != avg.shape: wsum = Array(wsum.uop.broadcast(avg.shape))
    return avg, wsum
  return avg


# ---- cumulative scans ----
def _scan(u: UOp, ax: int, op: Ops) -> UOp:
  """Inclusive scan of u along ax by log-step doubling (Hillis-Steele): O(n log n) work, log n steps."""
  n, k = u.shape[ax], 1
  while k < n:
    pads = [(0, 0)] * u.ndim
    pads[ax] = (k, 0)
    shifted = u.pad(pads).slice([(0, s, 1) for s in u.shape])  # u shifted right by k, zeros in front
    if op is Ops.MUL:
      front = UOp.iota(u.shape, ax, dtypes.int32).alu(Ops.CMPLT, _const(dtypes.int32, k, u.shape))
      shifted = front.where(_const(u.dtype, 1, u.shape), shifted)
    u = u.alu(op, shifted)
    k *= 2
  return u


def _cumulative(fn, op, a, axis, dtype, promote_integers=False, nan_fill=None, include_initial=False) -> Array:
  x = _arr(a, fn)
  if axis is None or x.ndim == 0:
    u = x.uop.reshape((x.size,))
    ax = 0 if axis is None else normalize_axis(axis, 1, fn)
  else:
    u, ax = x.uop, normalize_axis(axis, x.ndim, fn)
  if nan_fill is not None and u.dtype.is_inexact: u = _nan_of(u).where(_const(u.dtype, nan_fill, u.shape), u)
  d = _dtype_arg(dtype, fn)
  if d is None:
    res = comp = sum_dtype(x.dtype) if promote_integers or x.dtype.is_bool else x.dtype
  elif d.is_bool:  # accumulate in an integer, then read back as bool
    res, comp = d, sum_dtype(d)
    u = _nonzero(u)
  else:
    res = comp = d
  u = _scan(u.cast(_upcast_f16(comp)), ax, op)
  if include_initial:
    shape = tuple(1 if i == ax else n for i, n in enumerate(u.shape))
    u = UOp.concat([_const(u.dtype, 0 if op is Ops.ADD else 1, shape), u], ax)
  return Array(u.cast(res), x.weak_type and d is None and res is x.dtype)


def cumsum(a, axis=None, dtype=None, out=None) -> Array:
  """Cumulative sum along an axis (of the flattened array when axis is None).

  >>> tnp.cumsum(tnp.array([1, 2, 3]))
  Array([1, 3, 6], dtype=int32)
  """
  _no_out(out, "cumsum")
  return _cumulative("cumsum", Ops.ADD, a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None) -> Array:
  """Cumulative product along an axis (of the flattened array when axis is None).

  >>> tnp.cumprod(tnp.array([1, 2, 3]))
  Array([1, 2, 6], dtype=int32)
  """
  _no_out(out, "cumprod")
  return _cumulative("cumprod", Ops.MUL, a, axis, dtype)


def nancumsum(a, axis=None, dtype=None, out=None) -> Array:
  """Cumulative sum treating NaN as zero.

  >>> tnp.nancumsum(tnp.array([1.0, tnp.nan, 2.0]))
  Array([1., 1., 3.], dtype=float32)
  """
  _no_out(out, "nancumsum")
  return _cumulative("nancumsum", Ops.ADD, a, axis, dtype, nan_fill=0)


def nancumprod(a, axis=None, dtype=None, out=None) -> Array:
  """Cumulative product treating NaN as one.

  >>> tnp.nancumprod(tnp.array([2.0, tnp.nan, 3.0]))
  Array([2., 2., 6.], dtype=float32)
  """
  _no_out(out, "nancumprod")
  return _cumulative("nancumprod", Ops.MUL, a, axis, dtype, nan_fill=1)


def _array_api_axis(fn, x: Array, axis):
  if x.ndim == 0: raise ValueError(f"{fn}: the input must be non-scalar, got a 0-d array")
  if axis is None:
    if x.ndim > 1:
      raise ValueError(f"{fn}: the input has rank {x.ndim}, so axis must be given (it is optional only for 1-d input)")
    return 0
  return normalize_axis(axis, x.ndim, fn)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: bool = False) -> Array:
  """Array-API cumulative sum: axis is required beyond 1-d; include_initial prepends a zero.

  >>> tnp.cumulative_sum(tnp.array([1, 2, 3]), include_initial=True)
  Array([0, 1, 3, 6], dtype=int32)
  """
  x = _arr(x, "cumulative_sum")
  ax = _array_api_axis("cumulative_sum", x, axis)
  return _cumulative("cumulative_sum", Ops.ADD, x, ax, dtype, promote_integers=True, include_initial=include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: bool = False) -> Array:
  """Array-API cumulative product: axis is required beyond 1-d; include_initial prepends a one.

  >>> tnp.cumulative_prod(tnp.array([1, 2, 3]))
  Array([1, 2, 6], dtype=int32)
  """
  x = _arr(x, "cumulative_prod")
  ax = _array_api_axis("cumulative_prod", x, axis)
  return _cumulative("cumulative_prod", Ops.MUL, x, ax, dtype, promote_integers=True, include_initial=include_initial)
