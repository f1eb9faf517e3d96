"""Least squares and what the singular values give, as jax.numpy.linalg: lstsq, pinv, matrix_rank; and the solves
of tensors reshaped into matrices, tensorsolve and tensorinv."""
from __future__ import annotations

import math
import operator

import numpy as np

from ..array import Array
from ..errors import ConcretizationTypeError
from ..ir import dtypes
from ..ir.shapes import fmt
from ..trace import composite
from ..transforms.custom import custom_jvp
from .core import arraylike
from .creation import zeros
from .dtype_api import finfo
from .elementwise import where
from .linalg_decomp import floats, inv, matrices, solve, svd
from .shape import moveaxis

__all__ = ["lstsq", "pinv", "matrix_rank", "tensorsolve", "tensorinv"]


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False) -> tuple[Array, Array, Array, Array]:
  """The x minimising ||b - a @ x|| (of least norm), from the SVD of a (m, n): (x, residuals, rank, s). b is (m,) or
  (m, k); singular values below rcond * s[0] count as zero (rcond None: eps * max(m, n)). residuals are the squared
  norms of b - a @ x's columns; numpy_resid=True gives an empty array instead where numpy does (rank < n or
  m <= n), which needs a concrete a.

  >>> x, resid, rank, s = tnp.linalg.lstsq(tnp.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), tnp.array([1.0, 2.0, 3.0]))
  >>> tnp.round(x, 4), rank
  (Array([1., 1.], dtype=float32), Array(2, dtype=int32))
  """
  a, b = arraylike(a, "lstsq"), arraylike(b, "lstsq", 1)
  if a.ndim != 2: raise TypeError(f"lstsq: a must be a matrix (2-D), got shape {fmt(a.shape)}")
  if b.ndim not in (1, 2): raise TypeError(f"lstsq: b must be 1-D or 2-D, got shape {fmt(b.shape)}")
  if a.shape[0] != b.shape[0]:
    raise ValueError(f"lstsq: a and b must have the same number of rows, got shapes {fmt(a.shape)} and "
                     f"{fmt(b.shape)}")
  args = (a, b) if rcond is None else (a, b, arraylike(rcond, "lstsq", 2))
  x, resid, rank, s = composite("lstsq", _lstsq, *args)
  m, n = a.shape
  if numpy_resid:
    if m <= n: return x, zeros(0, resid.dtype), rank, s
    if rank.is_traced:
      raise ConcretizationTypeError("lstsq: numpy_resid=True needs a concrete rank (the residuals' shape depends on "
                                    "it) when a has more rows than columns; call it outside jit or pass "
                                    "numpy_resid=False")
    if int(rank) < n: return x, zeros(0, resid.dtype), rank, s
  return x, resid, rank, s


def _h(x: Array) -> Array: return x.mT.conj() if x.dtype.is_complex else x.mT   # xᴴ


def _lstsq(a: Array, b: Array, rcond: Array | None = None):
  (a, b), dt = floats("lstsq", a, b, complex_ok=True)
  vec = b.ndim == 1
  if vec: b = b[:, None]
  m, n = a.shape
  eps = float(finfo(dt).eps)
  if a.size == 0:
    s, rank, x = zeros(0, a.dtype), zeros((), dtypes.default_int()), zeros((n, b.shape[1]), a.dtype)
  else:
    cut = eps * max(m, n) if rcond is None else where(rcond < 0, eps, rcond).astype(dt.real)
    u, s, vh = svd(a, full_matrices=False)
    keep = (s > 0) & (s >= cut * s[0])
    rank = keep.sum()
    s_inv = where(keep, 1 / where(keep, s, 1), 0)
    x = _h(vh) @ (s_inv[:, None] * (_h(u) @ b))
  r = b - a @ x
  resid = (r * r.conj()).real.sum(0) if dt.is_complex else (r * r).sum(0)
  if vec: x = x[:, 0]
  return x.astype(dt), resid.astype(dt.real), rank, s.astype(dt.real)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None) -> Array:
  """The Moore-Penrose pseudo-inverse of a matrix (or of each in a stack), from its SVD: singular values at most
  rtol times the largest count as zero (rtol None: 10 * max(m, n) * eps; rcond is its older name).

  >>> tnp.round(tnp.linalg.pinv(tnp.array([[1.0], [1.0]])), 4)
  Array([[0.5, 0.5]], dtype=float32)
  """
  if rcond is not None:
    if rtol is not None: raise ValueError("pinv: pass one of rtol and rcond (its older name), not both")
    rtol = rcond
  a = matrices("pinv", a)
  m, n = a.shape[-2:]
  if rtol is None:
    rtol = 10.0 * max(m, n) * float(finfo(floats("pinv", a, complex_ok=True)[1]).eps)
  return composite("pinv", _pinv_named, a, arraylike(rtol, "pinv", 1), hermitian=bool(hermitian))


def _pinv_named(a: Array, rtol: Array, *, hermitian: bool) -> Array:
  (a,), dt = floats("pinv", a, complex_ok=True)
  m, n = a.shape[-2:]
  if m == 0 or n == 0: return zeros((*a.shape[:-2], n, m), dt)
  return _pinv(a, rtol.astype(dt.real), hermitian).astype(dt)


def _pinv_fun(a: Array, rtol: Array, hermitian: bool) -> Array:
  u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
  cut = rtol[..., None] * s[..., :1]
  s = where(s > cut, s, np.inf)
  return _h(vh) @ (_h(u) / s[..., None])


_pinv = custom_jvp(_pinv_fun, nondiff_argnums=(2,))


@_pinv.defjvp
def _pinv_jvp(hermitian, primals, tangents):
  # Golub and Pereyra (1973): dp = -p da p + p pᴴ daᴴ (1 - a p) + (1 - p a) daᴴ pᴴ p
  (a, rtol), (da, _) = primals, tangents
  p = _pinv(a, rtol, hermitian)
  if hermitian: a, da = (a + _h(a)) / 2, (da + _h(da)) / 2
  ph, dah = _h(p), _h(da)
  if a.shape[-2] >= a.shape[-1]:
    s, t = (p @ ph) @ dah, (dah @ ph) @ p
    return p, -(p @ da) @ p + s - (s @ a) @ p + t - (p @ a) @ t
  s, t = p @ (ph @ dah), dah @ (ph @ p)
  return p, -p @ (da @ p) + s - s @ (a @ p) + t - p @ (a @ t)


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None) -> Array:
  """The number of singular values of a matrix (or of each in a stack) above a threshold: tol (rtol is the same
  threshold, compared with the singular values themselves as in jax.numpy.linalg), by default the largest singular
  value times max(m, n) * eps. A vector's rank is 1 unless it is all zeros.

  >>> tnp.linalg.matrix_rank(tnp.array([[1.0, 2.0], [2.0, 4.0]]))
  Array(1, dtype=int32)
  """
  if tol is not None:
    if rtol is not None: raise ValueError("matrix_rank: pass one of rtol and tol, not both")
    rtol = tol
  M = arraylike(M, "matrix_rank")
  args = (M,) if rtol is None else (M, arraylike(rtol, "matrix_rank", 1))
  return composite("matrix_rank", _matrix_rank, *args, hermitian=bool(hermitian))


def _matrix_rank(M: Array, rtol: Array | None = None, *, hermitian: bool) -> Array:
  (M,), dt = floats("matrix_rank", M, complex_ok=True)
  if M.ndim < 2: return (M != 0).any().astype(np.int32)
  s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
  if rtol is None: rtol = s.max(-1) * (max(M.shape[-2:]) * float(finfo(dt).eps))
  rtol = rtol.astype(s.dtype)
  return (s > rtol[..., None]).sum(-1)


def tensorinv(a, ind: int = 2) -> Array:
  """The inverse of a tensor under tensordot over `ind` axes: a's first ind axes, flattened, form a square matrix
  with the rest; the result has shape a.shape[ind:] + a.shape[:ind].

  >>> tnp.linalg.tensorinv(tnp.eye(4).reshape(4, 2, 2), ind=1).shape
  (2, 2, 4)
  """
  a = arraylike(a, "tensorinv")
  try:
    ind = operator.index(ind)
  except TypeError:
    raise TypeError(f"tensorinv: ind must be an integer, got {ind!r}") from None
  if ind <= 0: raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
  rows, cols = a.shape[:ind], a.shape[ind:]
  if math.prod(rows) != math.prod(cols):
    raise ValueError(f"tensorinv: the product of the first ind={ind} axes of a must equal that of the others, got "
                     f"shape {fmt(a.shape)}")
  return inv(a.reshape(math.prod(rows), math.prod(cols))).reshape(*cols, *rows)


def tensorsolve(a, b, axes=None) -> Array:
  """The x with tensordot(a, x, x.ndim) = b: a's first b.ndim axes match b, the rest are x's (axes: a's axes to move
  to its end first).

  >>> tnp.linalg.tensorsolve(2 * tnp.eye(6).reshape(2, 3, 6), tnp.ones((2, 3)))
  Array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], dtype=float32)
  """
  a, b = arraylike(a, "tensorsolve"), arraylike(b, "tensorsolve", 1)
  if axes is not None: a = moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
  out = a.shape[b.ndim:]
  if a.shape[:b.ndim] != b.shape:
    raise ValueError(f"tensorsolve: a's leading axes must match b's shape, got a of shape {fmt(a.shape)} (after "
                     f"moving axes) and b of shape {fmt(b.shape)}")
  if b.size != math.prod(out):
    raise ValueError(f"tensorsolve: a's trailing axes {fmt(out)} must hold as many elements as b's shape "
                     f"{fmt(b.shape)}")
  return solve(a.reshape(b.size, math.prod(out)), b.reshape(-1)).reshape(out)
