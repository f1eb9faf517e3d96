"""jax.numpy.linalg's solvers and decompositions on tracegrad.lax.linalg (LAPACK, batched over leading axes): solve,
inv, det and slogdet through LU; cholesky, qr, eigh, eigvalsh, svd and svdvals. Integer inputs promote to the default
float; float16 and bfloat16 compute in float32 and come back in their own dtype. Each function traces as one node
named after it; its size does not depend on the matrices' size.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..array import Array
from ..ir import broadcast_shapes, dtypes
from ..ir.dtypes import DType
from ..ir.shapes import fmt
from ..lax import linalg as lla
from ..trace import composite
from ..typing import Inexact, Matrices, Num, Shaped
from ..transforms.custom import custom_jvp
from .contract import acc_dtype
from .core import arraylike, promote
from .creation import eye, ones, zeros
from .elementwise import isfinite, log, sign, where
from .indexing import take_along_axis
from .shape import broadcast_to, concatenate, diagonal, flip
from .sorting import argsort

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "qr", "eig", "eigvals", "eigh", "eigvalsh", "svd", "svdvals",
           "SlogdetResult", "EigResult", "EighResult", "QRResult", "SVDResult"]


class SlogdetResult(NamedTuple):
  sign: Array
  logabsdet: Array


class EigResult(NamedTuple):
  eigenvalues: Array
  eigenvectors: Array


class EighResult(NamedTuple):
  eigenvalues: Array
  eigenvectors: Array


class QRResult(NamedTuple):
  Q: Array
  R: Array


class SVDResult(NamedTuple):
  U: Array
  S: Array
  Vh: Array


# ---- shared helpers ----

def floats(fn: str, *xs, complex_ok: bool = False) -> tuple[list[Array], DType]:
  """xs promoted together, integers and bools to the default float: (the arrays in the dtype LAPACK computes in,
  the dtype of the result). Complex matrices where complex_ok (the functions on LU), else a TypeError."""
  arrs, dt, _ = promote(fn, *xs)
  if dt.is_complex:
    if complex_ok: return [a.astype(dt) for a in arrs], dt
    raise TypeError(f"{fn}: complex matrices ({dt}) are not supported yet")
  if not dt.is_float: dt = dtypes.default_float()
  return [a.astype(acc_dtype(dt)) for a in arrs], dt


def matrices(fn: str, x, name: str = "a", square: bool = False, error: type = ValueError) -> Array:
  """x as an Array of at least two dimensions (square in the last two with square=True), else `error`."""
  a = arraylike(x, fn)
  if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
    what = "a square matrix or a stack of them (shape (..., n, n))" if square else \
      "a matrix or a stack of them (shape (..., m, n))"
    raise error(f"{fn}: {name} must be {what}, got shape {fmt(a.shape)}")
  return a


def mtrace(x: Array) -> Array: return diagonal(x, 0, -2, -1).sum(-1)


def _pivot_sign(piv: Array, dt: DType) -> Array:
  """The sign (±1) of the permutation that the row swaps piv make."""
  swaps = (piv != np.arange(piv.shape[-1], dtype=np.int32)).sum(-1)
  return (1 - 2 * (swaps % 2)).astype(dt)


def lu_solve(lu: Array, perm: Array, b: Array) -> Array:
  """x with a x = b for lu, perm = lax.linalg.lu(a) (b: (..., n, k), batch axes broadcast)."""
  batch = broadcast_shapes(lu.shape[:-2], b.shape[:-2])
  b = broadcast_to(b, (*batch, *b.shape[-2:]))
  pb = take_along_axis(b, perm[..., :, None], axis=-2)
  y = lla.triangular_solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
  return lla.triangular_solve(lu, y, left_side=True, lower=False)


# ---- solve and inv ----

def solve(a: Num[Matrices, "*#batch n n"], b: Num[Matrices, "..."]) -> Inexact[Array, "..."]:
  """The x with a @ x = b: b is a vector (n,) or a stack of matrices (..., n, k), the batch axes of a and b
  broadcast; LU with partial pivoting (a singular a gives inf/nan).

  >>> tnp.linalg.solve(tnp.array([[2.0, 0.0], [0.0, 4.0]]), tnp.array([2.0, 2.0]))
  Array([1. , 0.5], dtype=float32)
  """
  a, b = matrices("solve", a, square=True), arraylike(b, "solve", 1)
  n = a.shape[-1]
  if b.ndim == 0:
    raise ValueError(f"solve: b must have shape ({n},) or (..., {n}, k) for a of shape {fmt(a.shape)}, got a scalar")
  if b.ndim > 1 and a.ndim == b.ndim + 1 and b.shape[-1] == n != b.shape[-2]:
    raise ValueError(f"solve: a of shape {fmt(a.shape)} and b of shape {fmt(b.shape)} do not match: b is a stack of "
                     f"matrices (..., {n}, k), not of vectors; for a batch of vectors use "
                     f"solve(a, b[..., None])[..., 0]")
  vec = b.ndim == 1
  if b.shape[0 if vec else -2] != n:
    raise ValueError(f"solve: a of shape {fmt(a.shape)} needs b of shape ({n},) or (..., {n}, k), got b of shape "
                     f"{fmt(b.shape)}")
  if not vec: broadcast_shapes(a.shape[:-2], b.shape[:-2], fn="solve")
  return composite("solve", _solve, a, b, vec=vec)


def _solve(a: Array, b: Array, *, vec: bool) -> Array:
  (a, b), dt = floats("solve", a, b, complex_ok=True)
  if vec: b = b[:, None]
  x = _solve_matrix(a, b) if a.shape[-1] else zeros(broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                                                     a.dtype)
  return (x[..., 0] if vec else x).astype(dt)


@custom_jvp
def _solve_matrix(a: Array, b: Array) -> Array:
  lu, _, perm = lla.lu(a)
  return lu_solve(lu, perm, b)


@_solve_matrix.defjvp
def _solve_matrix_jvp(primals, tangents):
  (a, b), (da, db) = primals, tangents
  lu, _, perm = lla.lu(a)
  x = lu_solve(lu, perm, b)
  return x, lu_solve(lu, perm, db - da @ x)


def inv(a: Num[Matrices, "*batch n n"]) -> Inexact[Array, "*batch n n"]:
  """The inverse of a square matrix (or of each in a stack), by LU; a singular matrix gives inf/nan.

  >>> tnp.linalg.inv(tnp.array([[2.0, 0.0], [0.0, 4.0]]))
  Array([[0.5 , 0.  ],
         [0.  , 0.25]], dtype=float32)
  """
  return composite("inv", _inv, matrices("inv", a, square=True))


def _inv(a: Array) -> Array:
  (a,), dt = floats("inv", a, complex_ok=True)
  if not a.shape[-1]: return a.astype(dt)
  return _solve_matrix(a, broadcast_to(eye(a.shape[-1], dtype=a.dtype), a.shape)).astype(dt)


# ---- det and slogdet ----

def det(a: Num[Matrices, "*batch n n"]) -> Inexact[Array, "*batch"]:
  """The determinant of a square matrix (or of each in a stack): the product of LU's pivots, signed by the row swaps
  (a closed formula for n <= 3). Its derivative is the adjugate, right at matrices of rank n - 1 too.

  >>> tnp.linalg.det(tnp.array([[4.0, 2.0], [1.0, 3.0]]))
  Array(10., dtype=float32)
  """
  return composite("det", _det, matrices("det", a, square=True))


def _small_det(a: Array) -> Array:
  n = a.shape[-1]
  e = lambda i, j: a[..., i, j]  # noqa: E731
  if n == 0: return ones(a.shape[:-2], a.dtype)
  if n == 1: return e(0, 0)
  if n == 2: return e(0, 0) * e(1, 1) - e(0, 1) * e(1, 0)
  return (e(0, 0) * (e(1, 1) * e(2, 2) - e(1, 2) * e(2, 1)) - e(0, 1) * (e(1, 0) * e(2, 2) - e(1, 2) * e(2, 0))
          + e(0, 2) * (e(1, 0) * e(2, 1) - e(1, 1) * e(2, 0)))


def _det(a: Array) -> Array:
  (a,), dt = floats("det", a, complex_ok=True)
  return (_small_det(a) if a.shape[-1] <= 3 else _det_lu(a)).astype(dt)


@custom_jvp
def _det_lu(a: Array) -> Array:
  lu, piv, _ = lla.lu(a)
  return _pivot_sign(piv, a.dtype) * diagonal(lu, 0, -2, -1).prod(-1)


@_det_lu.defjvp
def _det_lu_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  d, adj_da = _adjugate_times(a, da)
  return d, mtrace(adj_da)


def _adjugate_times(a: Array, g: Array) -> tuple[Array, Array]:
  """(det(a), adj(a) @ g) from one LU, with adj(a) = det(a) a⁻¹ computed without dividing by u's last pivot (which
  is 0 when a has rank n - 1): u's corner is replaced by 1 / det(u without its last row and column). Where the other
  pivots hold a zero as well, the product is 0, as in JAX."""
  n = a.shape[-1]
  lu, piv, perm = lla.lu(a)
  d = diagonal(lu, 0, -2, -1)
  lead = _pivot_sign(piv, a.dtype) * d[..., :-1].prod(-1)
  full = lead * d[..., -1]
  corner = (np.arange(n)[:, None] == n - 1) & (np.arange(n) == n - 1)
  lu = where(corner, (1 / lead)[..., None, None], lu)
  probe = lla.triangular_solve(lu, ones((*lu.shape[:-1], 1), a.dtype), left_side=True, lower=False)
  bad = ~isfinite(probe).all((-2, -1), keepdims=True)
  x = where(bad, 0, g)
  x = lla.triangular_solve(lu, take_along_axis(x, perm[..., :, None], axis=-2), left_side=True, lower=True,
                           unit_diagonal=True)
  x = concatenate([x[..., :-1, :] * full[..., None, None], x[..., -1:, :]], axis=-2)
  x = lla.triangular_solve(lu, x, left_side=True, lower=False)
  return full, where(bad, 0, x)


def slogdet(a: Num[Matrices, "*batch n n"], *, method: str | None = None) -> SlogdetResult:
  """The sign and the natural log of the absolute value of the determinant (det = sign * exp(logabsdet)), from LU
  (method None or 'lu'; closed formulas for n <= 2) or from QR's diagonal (method 'qr').

  >>> tnp.linalg.slogdet(tnp.array([[1.0, 2.0], [3.0, 4.0]])).sign
  Array(-1., dtype=float32)

  Of a complex matrix, sign is the determinant's phase (complex) and logabsdet real.
  """
  a = matrices("slogdet", a, square=True)
  if method not in (None, "lu", "qr"):
    raise ValueError(f"slogdet: unknown method {method!r}; use None or 'lu' (LU factorisation) or 'qr'")
  return composite("slogdet", _slogdet_named, a, qr=method == "qr")


def _slogdet_named(a: Array, *, qr: bool) -> SlogdetResult:
  (a,), dt = floats("slogdet", a, complex_ok=True)
  s, logdet = _slogdet(a, qr)
  return SlogdetResult(s.astype(dt), logdet.astype(dt.real if dt.is_complex else dt))


def _slogdet_fun(a: Array, qr: bool) -> tuple[Array, Array]:
  n = a.shape[-1]
  if n == 0: return ones(a.shape[:-2], a.dtype), zeros(a.shape[:-2], a.dtype)
  lu, piv, _ = lla.lu(a) if qr or n > 2 else (None, None, None)
  if qr:
    r = diagonal(lla.qr(a, full_matrices=False)[1], 0, -2, -1)
    d = diagonal(lu, 0, -2, -1)
    s = where((d == 0).any(-1), 0, _pivot_sign(piv, a.dtype) * sign(d).prod(-1))
    return s, log(abs(r)).sum(-1)
  if n <= 2:
    d = _small_det(a)
    return sign(d), log(abs(d))
  d = diagonal(lu, 0, -2, -1)
  zero = (d == 0).any(-1)
  s = _pivot_sign(piv, a.dtype) * sign(d).prod(-1)   # of complex pivots, the product of their phases
  return where(zero, 0, s), where(zero, -np.inf, log(abs(d)).sum(-1))


_slogdet = custom_jvp(_slogdet_fun, nondiff_argnums=(1,))


@_slogdet.defjvp
def _slogdet_jvp(qr, primals, tangents):
  (a,), (da,) = primals, tangents
  s, logdet = _slogdet(a, qr)
  if not a.shape[-1]: return (s, logdet), (zeros(s.shape, s.dtype), zeros(s.shape, s.dtype))
  lu, _, perm = lla.lu(a)
  t = mtrace(lu_solve(lu, perm, da))   # the derivative of log det: its real part moves logabsdet, its imaginary the phase
  if a.dtype.is_complex: return (s, logdet), (s * (t - t.real), t.real)
  return (s, logdet), (zeros(s.shape, s.dtype), t)


# ---- decompositions ----

def cholesky(a: Num[Matrices, "*batch n n"], *, upper: bool = False, symmetrize_input: bool = True
             ) -> Inexact[Array, "*batch n n"]:
  """The Cholesky factor of a symmetric positive definite matrix: lower l with a = l lᵀ, or upper u = lᵀ with
  upper=True; NaN where a is not positive definite. a is first replaced by (a + aᵀ) / 2 unless symmetrize_input is
  False.

  >>> tnp.round(tnp.linalg.cholesky(tnp.array([[4.0, 2.0], [2.0, 5.0]]), upper=True), 4)
  Array([[2., 1.],
         [0., 2.]], dtype=float32)
  """
  a = matrices("cholesky", a, square=True, error=TypeError)
  return composite("cholesky", _cholesky, a, upper=bool(upper), symmetrize=bool(symmetrize_input))


def _cholesky(a: Array, *, upper: bool, symmetrize: bool) -> Array:
  (a,), dt = floats("cholesky", a, complex_ok=True)
  lo = lla.cholesky(a, symmetrize_input=symmetrize)
  return (lo.mT.conj() if upper else lo).astype(dt)


_QR_MODES = ("reduced", "complete", "r", "full")


def qr(a, mode: str = "reduced"):
  """The QR decomposition a = q r, q with orthonormal columns and r upper triangular: mode 'reduced' (q: (..., m, k),
  r: (..., k, n), k = min(m, n)), 'complete' (q square) or 'r' (r alone, as in 'reduced').

  >>> q, r = tnp.linalg.qr(tnp.array([[3.0, 0.0], [4.0, 5.0]]))
  >>> tnp.round(abs(r), 3)
  Array([[5., 4.],
         [0., 3.]], dtype=float32)
  """
  if mode == "raw":
    raise NotImplementedError("qr: mode='raw' (Householder reflectors and their scales) is not implemented; use "
                              "'reduced', 'complete' or 'r'")
  if mode not in _QR_MODES:
    raise ValueError(f"qr: unsupported mode {mode!r}; use 'reduced', 'complete' or 'r'")
  return composite("qr", _qr, matrices("qr", a, error=TypeError), mode=mode)


def _qr(a: Array, *, mode: str):
  (a,), dt = floats("qr", a, complex_ok=True)
  q, r = lla.qr(a, full_matrices=mode == "complete")
  return r.astype(dt) if mode == "r" else QRResult(q.astype(dt), r.astype(dt))


def _uplo(fn: str, UPLO) -> bool:
  if UPLO not in (None, "L", "U"): raise ValueError(f"{fn}: UPLO must be None, 'L' or 'U', got {UPLO!r}")
  return UPLO != "U"


def eigh(a: Num[Matrices, "*batch n n"], UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
  """The eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, read from its lower ('L', the
  default) or upper ('U') triangle; a is first replaced by (a + aᵀ) / 2 unless symmetrize_input is False.

  >>> w, v = tnp.linalg.eigh(tnp.array([[2.0, 1.0], [1.0, 2.0]]))
  >>> tnp.round(w, 4)
  Array([1., 3.], dtype=float32)
  """
  lower = _uplo("eigh", UPLO)
  a = matrices("eigh", a, square=True, error=TypeError)
  return composite("eigh", _eigh, a, lower=lower, symmetrize=bool(symmetrize_input))


def _eigh(a: Array, *, lower: bool, symmetrize: bool) -> EighResult:
  (a,), dt = floats("eigh", a, complex_ok=True)
  v, w = lla.eigh(a, lower=lower, symmetrize_input=symmetrize)
  return EighResult(w.astype(dt.real), v.astype(dt))


def _general(fn: str, a) -> Array:
  a = matrices(fn, a, square=True, error=TypeError)
  if a.dtype.is_complex: return a
  (a,), _ = floats(fn, a)
  return a


def eig(a: Num[Matrices, "*batch n n"]) -> EigResult:
  """The eigenvalues and right eigenvectors (columns, of unit length) of a general square matrix, both complex, as
  jnp.linalg.eig.

  >>> w, v = tnp.linalg.eig(tnp.array([[2.0, 0.0], [0.0, 3.0]]))
  >>> w
  Array([2.+0.j, 3.+0.j], dtype=complex64)
  """
  w, v = lla.eig(_general("eig", a), compute_left_eigenvectors=False)
  return EigResult(w, v)


def eigvals(a: Num[Matrices, "*batch n n"]) -> Shaped[Array, "*batch n"]:
  """The complex eigenvalues of a general square matrix, as jnp.linalg.eigvals.

  >>> tnp.linalg.eigvals(tnp.array([[0.0, -1.0], [1.0, 0.0]]))
  Array([0.+1.j, 0.-1.j], dtype=complex64)
  """
  return lla.eig(_general("eigvals", a), compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


def eigvalsh(a: Num[Matrices, "*batch n n"], UPLO: str | None = "L", *, symmetrize_input: bool = True
             ) -> Inexact[Array, "*batch n"]:
  """The eigenvalues (ascending) of a symmetric matrix, as eigh.

  >>> tnp.round(tnp.linalg.eigvalsh(tnp.array([[2.0, 1.0], [1.0, 2.0]])), 4)
  Array([1., 3.], dtype=float32)
  """
  lower = _uplo("eigvalsh", UPLO)
  a = matrices("eigvalsh", a, square=True, error=TypeError)
  return composite("eigvalsh", _eigvalsh, a, lower=lower, symmetrize=bool(symmetrize_input))


def _eigvalsh(a: Array, *, lower: bool, symmetrize: bool) -> Array:
  return _eigh(a, lower=lower, symmetrize=symmetrize).eigenvalues


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False, subset_by_index=None):
  """The singular value decomposition a = u @ (s[..., None] * vh), s descending: u (..., m, m) and vh (..., n, n), or
  (..., m, k) and (..., k, n) with full_matrices=False (k = min(m, n)); s alone without compute_uv. hermitian=True
  reads a as symmetric and takes it from eigh (u and vh then square).

  >>> tnp.round(tnp.linalg.svd(tnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False), 4)
  Array([4., 3.], dtype=float32)
  """
  if subset_by_index is not None:
    raise NotImplementedError("svd: subset_by_index is not implemented; slice the full result instead")
  a = matrices("svd", a, square=hermitian, error=TypeError)
  return composite("svd", _svd, a, full=bool(full_matrices), uv=bool(compute_uv), hermitian=bool(hermitian))


def _svd(a: Array, *, full: bool, uv: bool, hermitian: bool):
  (a,), dt = floats("svd", a, complex_ok=True)
  if dt.is_complex and not uv: return lla.svd(a, full_matrices=full, compute_uv=False)
  if dt.is_complex:
    u, s, vh = lla.svd(a, full_matrices=full)
    return SVDResult(u, s, vh)
  if hermitian:
    v, w = lla.eigh(a)
    s = abs(w)
    order = flip(argsort(s, axis=-1), -1)
    s = take_along_axis(s, order, -1)
    if not uv: return s.astype(dt)
    u = take_along_axis(v, order[..., None, :], -1)
    vh = (u * take_along_axis(sign(w), order, -1)[..., None, :]).mT
    return SVDResult(u.astype(dt), s.astype(dt), vh.astype(dt))
  if not uv: return lla.svd(a, full_matrices=full, compute_uv=False).astype(dt)
  u, s, vh = lla.svd(a, full_matrices=full)
  return SVDResult(u.astype(dt), s.astype(dt), vh.astype(dt))


def svdvals(x: Num[Matrices, "*batch m n"], /) -> Inexact[Array, "*batch k"]:
  """The singular values of a matrix (or of each in a stack), descending.

  >>> tnp.round(tnp.linalg.svdvals(tnp.array([[0.0, 2.0], [1.0, 0.0]])), 4)
  Array([2., 1.], dtype=float32)
  """
  return composite("svdvals", _svd, matrices("svdvals", x, name="x", error=TypeError), full=False, uv=False,
                   hermitian=False)
