"""tracegrad.numpy.linalg, as jax.numpy.linalg: solvers and decompositions on tracegrad.lax.linalg (LAPACK, batched
over leading axes; linalg_decomp.py), norms and condition numbers (linalg_norms.py), least squares, pseudo-inverse
and rank (linalg_lstsq.py), and here matrix powers, chained products and the array API's aliases. eig and eigvals
(complex results) are not here.

>>> tnp.linalg.det(tnp.array([[1.0, 2.0], [3.0, 4.0]]))
Array(-2., dtype=float32)
"""
from __future__ import annotations

import operator

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import fmt
from ..trace import composite
from .contract import acc_dtype, matmul, matrix_transpose, tensordot, vecdot
from .contract import cross as _cross
from .contract import outer as _outer
from .core import arraylike, sum_dtype
from .linalg_decomp import (EigResult, EighResult, QRResult, SlogdetResult, SVDResult, cholesky, det, eig, eigh,
                            eigvals, eigvalsh, inv, qr, slogdet, solve, svd, svdvals)
from .linalg_lstsq import lstsq, matrix_rank, pinv, tensorinv, tensorsolve
from .linalg_norms import cond, matrix_norm, norm, vector_norm
from .shape import diagonal as _diagonal

__all__ = ["cholesky", "cond", "det", "eig", "eigvals", "EigResult", "eigh", "eigvalsh", "inv", "lstsq", "matrix_rank", "pinv", "qr", "slogdet",
           "solve", "svd", "svdvals", "tensorinv", "tensorsolve", "norm", "vector_norm", "matrix_norm", "matmul",
           "matrix_transpose", "outer", "tensordot", "vecdot", "matrix_power", "multi_dot", "trace", "cross",
           "diagonal", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]

_I32 = dtypes.int32


def _c(u: UOp, v) -> UOp: return UOp.const(u.dtype, v, u.shape)


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
  a = arraylike(a, "matrix_power")
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise TypeError(f"matrix_power: a must be a square matrix or a stack of them (shape (..., n, n)), got shape "
                    f"{fmt(a.shape)}")
  try:
    n = operator.index(n)
  except TypeError:
    raise TypeError(f"matrix_power: the exponent n must be an integer, got {n!r}") from None
  if n == 0:
    m = a.shape[-1]
    eye = UOp.iota((m, m), 0, _I32).alu(Ops.CMPEQ, UOp.iota((m, m), 1, _I32))
    eye = eye.where(UOp.const(a.dtype, 1, (m, m)), UOp.const(a.dtype, 0, (m, m))) if not a.dtype.is_bool else eye
    return Array(eye.broadcast(a.shape))
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
  """The product of a chain of matrices, the first and last of which may be vectors, in the order of multiplications
  that costs the fewest operations.

  >>> tnp.linalg.multi_dot([tnp.ones((2, 3)), tnp.ones((3, 4)), tnp.ones(4)]).shape
  (2,)
  """
  arrs = [arraylike(x, "multi_dot", i) for i, x in enumerate(arrays)]
  if len(arrs) < 2: raise ValueError(f"multi_dot: needs at least two arrays, got {len(arrs)}")
  shapes = [x.shape for x in arrs]
  if arrs[0].ndim not in (1, 2) or arrs[-1].ndim not in (1, 2) or any(x.ndim != 2 for x in arrs[1:-1]):
    raise ValueError(f"multi_dot: the arrays must be 2-D, the first and last 1-D or 2-D; got shapes {shapes}")
  mats = [arrs[0][None] if arrs[0].ndim == 1 else arrs[0], *arrs[1:-1],
          arrs[-1][:, None] if arrs[-1].ndim == 1 else arrs[-1]]
  dims = [mats[0].shape[0]] + [x.shape[1] for x in mats]
  if any(x.shape[0] != d for x, d in zip(mats[1:], dims[1:])):
    raise ValueError(f"multi_dot: each array's last axis must match the next one's first, got shapes {shapes}")
  out = _chain(mats, _chain_order(dims), 0, len(mats) - 1)
  if arrs[0].ndim == 1: out = out[0]
  return out[..., 0] if arrs[-1].ndim == 1 else out


def _chain_order(dims: list[int]) -> dict:
  """The split of each sub-chain i..j that minimises the multiplications (the textbook dynamic programme)."""
  n, cost, split = len(dims) - 1, {}, {}
  for i in range(n): cost[i, i] = 0
  for length in range(1, n):
    for i in range(n - length):
      j = i + length
      cost[i, j], split[i, j] = min((cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                                    for k in range(i, j))
  return split


def _chain(mats: list[Array], split: dict, i: int, j: int) -> Array:
  if i == j: return mats[i]
  k = split[i, j]
  return matmul(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


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

