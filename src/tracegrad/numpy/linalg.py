"""tracegrad.numpy.linalg: norms, solve, inv, det, slogdet and aliases of the contractions, as jax.numpy.linalg.

There is no LAPACK primitive. solve, inv, det and slogdet run Gaussian elimination with partial pivoting written in
primitives and unrolled over the static matrix size n: each step picks the pivot row (the first row of largest
magnitude, from REDUCE_MAX and an IOTA), swaps it into place with WHERE masks and eliminates below it. Leading axes
batch. A zero pivot skips its elimination step, as LAPACK's getrf does, so singular matrices give det 0 and
inf/nan solutions rather than an error. Integer inputs promote to float; float16/bfloat16 compute in float32.
Traced, each of them (and matrix_power) is one node named after it, whose body is that elimination.
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from .. import lax
from ..array import Array, to_array
from ..ir import Ops, UOp, broadcast_shapes, dtypes
from ..ir.dtypes import DType
from ..ir.shapes import fmt
from .contract import acc_dtype, matmul, matrix_transpose, tensordot, vecdot
from .contract import cross as _cross
from .shape import diagonal as _diagonal
from .contract import outer as _outer
from ..trace import composite
from ..transforms.custom import custom_jvp
from .core import normalize_axis, promote, sum_dtype

__all__ = ["norm", "vector_norm", "matrix_norm", "solve", "inv", "det", "slogdet", "SlogdetResult", "matmul",
           "matrix_transpose", "outer", "tensordot", "vecdot", "matrix_power", "multi_dot", "trace", "cross", "diagonal"]

_I32 = dtypes.int32
_LN2 = math.log(2.0)


# ---- small helpers on UOps ----
def _c(u: UOp, v, dtype: DType | None = None) -> UOp: return UOp.const(dtype or u.dtype, v, u.shape)


def _abs(u: UOp) -> UOp: return u.alu(Ops.MAX, -u)


def _bc(u: UOp, shape) -> UOp: return u.broadcast(tuple(shape))


def _inexact(fn: str, *xs) -> tuple[list[UOp], DType]:
  """Operands promoted together, then to the default float if not floating; (uops in compute dtype, out dtype)."""
  arrs, dt, _ = promote(fn, *xs)
  if not dt.is_float: dt = dtypes.default_float()
  acc = acc_dtype(dt)
  return [a.uop.cast(acc) for a in arrs], dt


def _square_check(fn: str, u: UOp, name: str = "a"):
  if u.ndim < 2 or u.shape[-1] != u.shape[-2]:
    raise ValueError(f"{fn}: {name} must be a square matrix or a stack of them (shape (..., n, n)), "
                     f"got shape {fmt(u.shape)}")


def _col(u: UOp, j: int) -> UOp:
  """Column j of the last axis, kept: shape (..., 1)."""
  return u.slice([(0, n, 1) for n in u.shape[:-1]] + [(j, j + 1, 1)])


def _row(u: UOp, i: int) -> UOp:
  """Row i of the second-to-last axis, kept: shape (..., 1, m)."""
  return u.slice([(0, n, 1) for n in u.shape[:-2]] + [(i, i + 1, 1), (0, u.shape[-1], 1)])


def _eliminate(m: UOp, n: int) -> tuple[UOp, UOp]:
  """Forward elimination with partial pivoting on the first n columns of m: (..., n, n + k).

  Returns m with its first n columns upper triangular (and the same row operations applied to the rest) and the
  permutation's sign, shape (..., 1, 1).
  """
  shape, nd = m.shape, m.ndim
  rows = UOp.iota(shape, nd - 2, _I32)
  rc = UOp.iota(shape[:-1] + (1,), nd - 2, _I32)   # row index of a column, (..., n, 1)
  one = UOp.const(m.dtype, 1, shape[:-2] + (1, 1))
  sign = one
  for j in range(n):
    # pivot: the first row >= j of largest magnitude (a NaN column keeps row j)
    a = _abs(_col(m, j))
    am = rc.alu(Ops.CMPLT, _c(rc, j)).where(_c(a, -1), a)
    mx = am.reduce(Ops.REDUCE_MAX, (nd - 2,))
    idx = am.alu(Ops.CMPEQ, _bc(mx, am.shape)).where(rc, _c(rc, n)).reduce(Ops.REDUCE_MIN, (nd - 2,))
    p = idx.alu(Ops.CMPEQ, _c(idx, n)).where(_c(idx, j), idx)   # (..., 1, 1)
    # swap rows j and p
    is_p = rows.alu(Ops.CMPEQ, _bc(p, shape))
    is_j = rows.alu(Ops.CMPEQ, _c(rows, j))
    row_p = is_p.where(m, _c(m, 0)).reduce(Ops.REDUCE_SUM, (nd - 2,))
    row_j = _row(m, j)
    m = is_j.where(_bc(row_p, shape), is_p.where(_bc(row_j, shape), m))
    sign = p.alu(Ops.CMPEQ, _c(p, j)).where(sign, -sign)
    # eliminate below the pivot (skipped for a zero pivot: the column below is zero already)
    piv = _col(row_p, j)                                        # (..., 1, 1)
    col = _col(m, j)                                            # (..., n, 1)
    below = _c(rc, j).alu(Ops.CMPLT, rc).alu(Ops.AND, _bc(piv.alu(Ops.CMPNE, _c(piv, 0)), rc.shape))
    f = below.where(col.alu(Ops.DIV, _bc(piv, col.shape)), _c(col, 0))
    m = m - _bc(f, shape).alu(Ops.MUL, _bc(row_p, shape))
  return m, sign


def _diag(u: UOp) -> UOp:
  """The diagonal of the leading square block of u (..., n, m >= n) as (..., n, 1)."""
  n = u.shape[-2]
  u = u.slice([(0, s, 1) for s in u.shape[:-1]] + [(0, n, 1)])
  eye = UOp.iota(u.shape, u.ndim - 2, _I32).alu(Ops.CMPEQ, UOp.iota(u.shape, u.ndim - 1, _I32))
  return eye.where(u, _c(u, 0)).reduce(Ops.REDUCE_SUM, (u.ndim - 1,))


def _back_substitute(m: UOp, n: int) -> UOp:
  """X with U X = Y, for m = [U | Y] of shape (..., n, n + k) with U upper triangular."""
  nd = m.ndim
  lead = [(0, s, 1) for s in m.shape[:-1]]
  U = m.slice(lead + [(0, n, 1)])
  Y = m.slice(lead + [(n, m.shape[-1], 1)])
  X = _c(Y, 0)
  rows = UOp.iota(Y.shape, nd - 2, _I32)
  cols = UOp.iota(m.shape[:-2] + (1, n), nd - 1, _I32)
  for i in range(n - 1, -1, -1):
    u = _row(U, i)                                              # (..., 1, n)
    uii = _col(u, i)                                            # (..., 1, 1)
    if i < n - 1:
      u = _c(cols, i).alu(Ops.CMPLT, cols).where(u, _c(u, 0))
      ut = u.reshape(u.shape[:-2] + (n, 1))
      s = _bc(ut, X.shape).alu(Ops.MUL, X).reduce(Ops.REDUCE_SUM, (nd - 2,))
      yi = _row(Y, i) - s
    else:
      yi = _row(Y, i)
    xi = yi.alu(Ops.DIV, _bc(uii, yi.shape))
    X = rows.alu(Ops.CMPEQ, _c(rows, i)).where(_bc(xi, X.shape), X)
  return X


# ---- solve, inv, det, slogdet ----
def solve(a, b) -> Array:
  """The solution x of a @ x = b. b is a vector (shape (n,)) or a stack of matrices (..., n, k); batch axes broadcast.

  >>> tnp.linalg.solve(tnp.array([[2.0, 0.0], [0.0, 4.0]]), tnp.array([2.0, 2.0]))
  Array([1. , 0.5], dtype=float32)
  """
  return composite("solve", _solve, a, b)


def _solve(a, b) -> Array:
  (au, bu), dt = _inexact("solve", a, b)
  _square_check("solve", au)
  n = au.shape[-1]
  if bu.ndim == 0:
    raise ValueError(f"solve: b must have shape (n,) or (..., n, k), got a scalar for a of shape {fmt(au.shape)}")
  vec = bu.ndim == 1
  if vec: bu = bu.reshape(bu.shape + (1,))
  if bu.shape[-2] != n:
    raise ValueError(f"solve: a of shape {fmt(au.shape)} needs b of shape ({n},) or (..., {n}, k), "
                     f"got b of shape {fmt(bu.shape[:-1] if vec else bu.shape)}")
  batch = broadcast_shapes(au.shape[:-2], bu.shape[:-2], fn="solve")
  k = bu.shape[-1]
  m = UOp.concat([_bc(au, batch + (n, n)), _bc(bu, batch + (n, k))], len(batch) + 1)
  u, _ = _eliminate(m, n)
  x = _back_substitute(u, n)
  if vec: x = x.reshape(batch + (n,))
  return Array(x.cast(dt))


def inv(a) -> Array:
  """The inverse of a square matrix (or of each in a stack); singular matrices give inf/nan.

  >>> tnp.linalg.inv(tnp.array([[2.0, 0.0], [0.0, 4.0]]))
  Array([[0.5 , 0.  ],
         [0.  , 0.25]], dtype=float32)
  """
  return composite("inv", _inv, a)


def _inv(a) -> Array:
  (au,), dt = _inexact("inv", a)
  _square_check("inv", au)
  n = au.shape[-1]
  eye = UOp.iota((n, n), 0, _I32).alu(Ops.CMPEQ, UOp.iota((n, n), 1, _I32))
  eye = eye.where(UOp.const(au.dtype, 1, (n, n)), UOp.const(au.dtype, 0, (n, n)))
  m = UOp.concat([au, _bc(eye, au.shape)], au.ndim - 1)
  u, _ = _eliminate(m, n)
  return Array(_back_substitute(u, n).cast(dt))


def _lu_diag(fn: str, a) -> tuple[UOp, UOp, DType]:
  (au,), dt = _inexact(fn, a)
  _square_check(fn, au)
  u, sign = _eliminate(au, au.shape[-1])
  return _diag(u), sign, dt


def det(a) -> Array:
  """The determinant of a square matrix (or of each in a stack). Its derivative is the cofactor matrix, exact at
  singular matrices too.

  >>> tnp.linalg.det(tnp.array([[4.0, 2.0], [1.0, 3.0]]))
  Array(10., dtype=float32)
  """
  return composite("det", _det_of, a)


def _det_of(a) -> Array:
  (au,), dt = _inexact("det", a)
  _square_check("det", au)
  return Array(_det(Array(au)).uop.cast(dt))


@custom_jvp
def _det(a: Array) -> Array:
  u, sign = _eliminate(a.uop, a.shape[-1])
  d = _diag(u)
  return Array(d.reduce(Ops.REDUCE_PROD, (d.ndim - 2,)).alu(Ops.MUL, sign).reshape(a.shape[:-2]))


@_det.defjvp
def _det_jvp(primals, tangents):
  (a,), (t,) = primals, tangents
  return _det(a), (_cofactors(a) * t).sum((-2, -1))


def _cofactors(a: Array) -> Array:
  """C[..., i, j] = (-1)^(i+j) det(a without row i and column j): det(a) inv(a)^T when a is invertible, else from
  the minors (so the derivative of det is right at singular matrices)."""
  n = a.shape[-1]
  if n == 1: return Array(UOp.const(a.dtype, 1, a.shape))
  y = _det(a)[..., None, None]

  def by_minors(a):
    keep = np.array([[r for r in range(n) if r != i] for i in range(n)])
    minors = _det(a[..., keep[:, None, :, None], keep[None, :, None, :]])
    signs = np.where(np.add.outer(np.arange(n), np.arange(n)) % 2 == 0, 1.0, -1.0).astype(a.dtype.np)
    return minors * signs

  def by_inverse(a): return y * inv(a).swapaxes(-1, -2)

  return lax.cond((y == 0).any(), by_minors, by_inverse, a)


class SlogdetResult(NamedTuple):
  sign: Array
  logabsdet: Array


def slogdet(a, *, method=None) -> SlogdetResult:
  """The sign and natural log of the absolute value of the determinant: det = sign * exp(logabsdet).

  >>> tnp.linalg.slogdet(tnp.array([[1.0, 2.0], [3.0, 4.0]])).sign
  Array(-1., dtype=float32)
  """
  return composite("slogdet", _slogdet, a)


def _slogdet(a) -> SlogdetResult:
  d, sign, dt = _lu_diag("slogdet", a)
  batch, ax = d.shape[:-2], (d.ndim - 2,)
  dsign = _c(d, 0).alu(Ops.CMPLT, d).where(_c(d, 1), d.alu(Ops.CMPLT, _c(d, 0)).where(_c(d, -1), _c(d, 0)))
  dsign = d.alu(Ops.CMPNE, d).where(d, dsign)  # NaN stays NaN
  s = dsign.reduce(Ops.REDUCE_PROD, ax).alu(Ops.MUL, sign)
  logabs = _abs(d).alu(Ops.LOG2).reduce(Ops.REDUCE_SUM, ax).alu(Ops.MUL, UOp.const(d.dtype, _LN2, batch + (1, 1)))
  return SlogdetResult(Array(s.reshape(batch).cast(dt)), Array(logabs.reshape(batch).cast(dt)))


# ---- norms ----
def _keep(u: UOp, axes, keepdims: bool) -> UOp:
  """u reduced (sizes 1) on `axes`: drop those axes unless keepdims."""
  return u if keepdims else u.reshape(tuple(n for i, n in enumerate(u.shape) if i not in axes))


def _vector_norm(u: UOp, axes: tuple, ord) -> UOp:
  if ord is None or ord == 2:
    return u.alu(Ops.MUL, u).reduce(Ops.REDUCE_SUM, axes).alu(Ops.SQRT)
  if isinstance(ord, str): raise ValueError(f"norm: invalid ord {ord!r} for a vector norm")
  a = _abs(u)
  if ord == math.inf: return a.reduce(Ops.REDUCE_MAX, axes)
  if ord == -math.inf: return a.reduce(Ops.REDUCE_MIN, axes)
  if ord == 0: return u.alu(Ops.CMPNE, _c(u, 0)).where(_c(u, 1), _c(u, 0)).reduce(Ops.REDUCE_SUM, axes)
  if ord == 1: return a.reduce(Ops.REDUCE_SUM, axes)
  p = float(ord)
  s = a.alu(Ops.POW, _c(a, p)).reduce(Ops.REDUCE_SUM, axes)
  return s.alu(Ops.POW, _c(s, 1.0 / p))


def _matrix_norm(u: UOp, r: int, c: int, ord) -> UOp:
  if ord is None or ord == "fro":
    return u.alu(Ops.MUL, u).reduce(Ops.REDUCE_SUM, (r, c)).alu(Ops.SQRT)
  if ord in ("nuc", 2, -2):
    raise NotImplementedError(f"norm: ord={ord!r} needs singular values, which tracegrad does not compute yet; "
                              f"use 'fro', 1, -1, inf or -inf")
  if isinstance(ord, str) or ord not in (1, -1, math.inf, -math.inf):
    raise ValueError(f"norm: invalid ord {ord!r} for a matrix norm; use None, 'fro', 1, -1, inf or -inf")
  over, then = (r, c) if ord in (1, -1) else (c, r)
  s = _abs(u).reduce(Ops.REDUCE_SUM, (over,))
  return s.reduce(Ops.REDUCE_MAX if ord > 0 else Ops.REDUCE_MIN, (then,))


def norm(x, ord=None, axis=None, keepdims: bool = False) -> Array:
  """A vector norm (one axis) or matrix norm (two axes), as numpy.linalg.norm; 'nuc', 2 and -2 matrix norms
  are not supported.

  >>> tnp.linalg.norm(tnp.array([3.0, 4.0]))
  Array(5., dtype=float32)
  """
  (u,), dt = _inexact("norm", x)
  nd = u.ndim
  if axis is None:
    if ord is None:
      axes = tuple(range(nd))
      return Array(_keep(_vector_norm(u, axes, None), axes, keepdims).cast(dt))
    if nd not in (1, 2):
      raise ValueError(f"norm: ord={ord!r} with axis=None needs a 1-D or 2-D array, got shape {fmt(u.shape)}; "
                       f"pass axis")
    axis = tuple(range(nd))
  axes = (axis,) if isinstance(axis, int) or hasattr(axis, "__index__") else tuple(axis)
  axes = tuple(normalize_axis(operator.index(a), nd, "norm") for a in axes)
  if len(set(axes)) != len(axes): raise ValueError(f"norm: repeated axis in {axis}")
  if len(axes) == 1: out = _vector_norm(u, axes, ord)
  elif len(axes) == 2: out = _matrix_norm(u, axes[0], axes[1], ord)
  else: raise ValueError(f"norm: axis must name one or two axes, got {axis}")
  return Array(_keep(out, axes, keepdims).cast(dt))


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> Array:
  """The vector norm over `axis` (None: every axis, as one flat vector).

  >>> tnp.linalg.vector_norm(tnp.ones((2, 2)), ord=1)
  Array(4., dtype=float32)
  """
  (u,), dt = _inexact("vector_norm", x)
  axes = tuple(range(u.ndim)) if axis is None else (
    (axis,) if isinstance(axis, int) or hasattr(axis, "__index__") else tuple(axis))
  axes = tuple(sorted({normalize_axis(operator.index(a), u.ndim, "vector_norm") for a in axes}))
  return Array(_keep(_vector_norm(u, axes, ord), axes, keepdims).cast(dt))


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> Array:
  """The matrix norm over the last two axes.

  >>> tnp.linalg.matrix_norm(tnp.ones((2, 2)), ord=1)
  Array(2., dtype=float32)
  """
  (u,), dt = _inexact("matrix_norm", x)
  if u.ndim < 2: raise ValueError(f"matrix_norm: x must have at least two dimensions, got shape {fmt(u.shape)}")
  r, c = u.ndim - 2, u.ndim - 1
  return Array(_keep(_matrix_norm(u, r, c, ord), (r, c), keepdims).cast(dt))


# ---- aliases and compositions ----
def outer(x1, x2, /) -> Array:
  """The outer product of two 1-D arrays.

  >>> tnp.linalg.outer(tnp.ones(2), tnp.ones(3)).shape
  (2, 3)
  """
  for name, x in (("x1", x1), ("x2", x2)):
    if getattr(x, "ndim", None) is None: x = to_array(x, fn="linalg.outer")
    if x.ndim != 1: raise ValueError(f"linalg.outer: {name} must be 1-D, got shape {fmt(x.shape)}")
  return _outer(x1, x2)


def matrix_power(a, n: int) -> Array:
  """a raised to the integer power n by repeated squaring (n < 0 inverts first; n == 0 gives the identity).

  >>> tnp.linalg.matrix_power(tnp.array([[1, 1], [0, 1]]), 3)
  Array([[1, 3],
         [0, 1]], dtype=int32)
  """
  a = a if isinstance(a, Array) else to_array(a, fn="matrix_power")
  _square_check("matrix_power", a.uop)
  n = operator.index(n)
  if n == 0:
    m = a.shape[-1]
    eye = UOp.iota((m, m), 0, _I32).alu(Ops.CMPEQ, UOp.iota((m, m), 1, _I32))
    eye = eye.where(UOp.const(a.dtype, 1, (m, m)), UOp.const(a.dtype, 0, (m, m))) if not a.dtype.is_bool else eye
    return Array(_bc(eye, a.shape))
  return a if n == 1 else composite("matrix_power", _matrix_power, a, n=n)


def _matrix_power(a, *, n: int) -> Array:
  if n < 0: a, n = inv(a), -n
  out, base = None, a
  while n:
    if n & 1: out = base if out is None else matmul(out, base)
    n >>= 1
    if n: base = matmul(base, base)
  return out


def multi_dot(arrays, *, precision=None) -> Array:
  """The product of a chain of matrices (the first and last may be 1-D), left to right.

  >>> tnp.linalg.multi_dot([tnp.ones((2, 3)), tnp.ones((3, 4)), tnp.ones(4)]).shape
  (2,)
  """
  arrays = list(arrays)
  if len(arrays) < 2: raise ValueError(f"multi_dot: needs at least two arrays, got {len(arrays)}")
  out = arrays[0]
  for x in arrays[1:]: out = matmul(out, x)
  return out


def trace(x, /, *, offset: int = 0, dtype=None) -> Array:
  """The sum of the diagonal (shifted by `offset`) of the last two axes.

  >>> tnp.linalg.trace(tnp.ones((2, 3, 3)))
  Array([3., 3.], dtype=float32)
  """
  x = x if isinstance(x, Array) else to_array(x, fn="linalg.trace")
  if x.ndim < 2: raise ValueError(f"linalg.trace: x must have at least two dimensions, got shape {fmt(x.shape)}")
  dt = sum_dtype(x.dtype) if dtype is None else dtypes.canonicalize(dtypes.as_dtype(dtype, "linalg.trace"))
  u = x.uop.cast(acc_dtype(dt))
  nd = u.ndim
  mask = UOp.iota(u.shape, nd - 2, _I32).alu(Ops.ADD, UOp.const(_I32, offset, u.shape)).alu(
    Ops.CMPEQ, UOp.iota(u.shape, nd - 1, _I32))
  s = mask.where(u, _c(u, 0)).reduce(Ops.REDUCE_SUM, (nd - 2, nd - 1))
  return Array(s.reshape(u.shape[:-2]).cast(dt))


def cross(x1, x2, /, *, axis: int = -1) -> Array:
  """The cross product of the 3-vectors along `axis`, the other axes broadcast.

  >>> tnp.linalg.cross(tnp.array([0.0, 0.0, 1.0]), tnp.eye(3))
  Array([[ 0.,  1.,  0.],
         [-1.,  0.,  0.],
         [ 0.,  0.,  0.]], dtype=float32)
  """
  a, b = (x if isinstance(x, Array) else to_array(x, fn="linalg.cross") for x in (x1, x2))
  if a.ndim == 0 or b.ndim == 0 or not -min(a.ndim, b.ndim) <= axis < min(a.ndim, b.ndim):
    raise ValueError(f"linalg.cross: axis {axis} is out of range for shapes {fmt(a.shape)} and {fmt(b.shape)}")
  if a.shape[axis] != 3 or b.shape[axis] != 3:
    raise ValueError(f"linalg.cross: both arrays must have 3 components along axis {axis}, got shapes "
                     f"{fmt(a.shape)} and {fmt(b.shape)}")
  if axis >= 0 and a.ndim != b.ndim:
    raise ValueError(f"linalg.cross: a non-negative axis ({axis}) needs arrays of one rank, got shapes "
                     f"{fmt(a.shape)} and {fmt(b.shape)}")
  return _cross(a, b, axis=axis)


def diagonal(x, /, *, offset: int = 0) -> Array:
  """The diagonals (shifted by `offset`) of the matrices in the last two axes.

  >>> tnp.linalg.diagonal(tnp.arange(6).reshape(2, 3), offset=1)
  Array([1, 5], dtype=int32)
  """
  x = x if isinstance(x, Array) else to_array(x, fn="linalg.diagonal")
  if x.ndim < 2: raise ValueError(f"linalg.diagonal: x must have at least two dimensions, got shape {fmt(x.shape)}")
  return _diagonal(x, offset, -2, -1)

