"""The decompositions of jax.scipy.linalg and the solves on their factors, in scipy's conventions, on the LINALG
primitives of tracegrad.lax.linalg: cholesky, cho_factor, cho_solve, solve_triangular, lu, lu_factor, lu_solve, qr,
qr_multiply, eigh, eigh_tridiagonal, svd, polar and hessenberg.

>>> tracegrad.scipy.linalg.cholesky(tnp.array([[4.0, 2.0], [2.0, 5.0]]), lower=True)
Array([[2., 0.],
       [1., 2.]], dtype=float32)
"""
from __future__ import annotations

import warnings

from ... import lax
from ... import numpy as tnp
from ...array import Array
from ...ir import dtypes
from ...lax import linalg as lla

__all__ = ["cholesky", "cho_factor", "cho_solve", "solve_triangular", "lu", "lu_factor", "lu_solve", "qr",
           "qr_multiply", "eigh", "eigh_tridiagonal", "svd", "polar", "hessenberg"]


# ---- operands ----

def _inexact(*xs) -> list[Array]:
  """The operands as arrays of their common dtype, the default float when that is not floating (as JAX promotes)."""
  arrs = [tnp.asarray(x) for x in xs]
  dt = tnp.result_type(*arrs)
  if not dt.is_float: dt = dtypes.default_float()
  return [a if a.dtype is dt else a.astype(dt) for a in arrs]


def _matrices(fn: str, a: Array, name: str = "a", square: bool = True) -> Array:
  if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
    kind = "a square matrix or a stack of them (shape (..., n, n))" if square else "at least 2-dimensional"
    raise ValueError(f"{fn}: {name} must be {kind}, got shape {a.shape}")
  return a


def _rhs(fn: str, a: Array, b: Array) -> tuple[Array, bool]:
  """b as a stack of right-hand-side matrices, and whether it held vectors: b of shape (n,) is one vector; b of shape
  (..., n) with one axis fewer than a is a batch of vectors (deprecated in JAX, which warns too); else (..., n, k)."""
  n = a.shape[-1]
  if b.ndim == 0: raise ValueError(f"{fn}: b must have at least 1 dimension, got a scalar")
  vectors = b.ndim == 1
  if not vectors and a.ndim == b.ndim + 1 and b.shape[-1] == n:
    warnings.warn(f"{fn}: b of shape {b.shape} against a of shape {a.shape} is read as a batch of vectors, which "
                  f"JAX deprecates; pass b[..., None] and take [..., 0] of the result", FutureWarning, stacklevel=3)
    vectors = True
  bm = b[..., None] if vectors else b
  if bm.shape[-2] != n:
    raise ValueError(f"{fn}: b must have {n} rows, as a of shape {a.shape} has; got b of shape {b.shape}")
  return bm, vectors


def _broadcast(*xs: Array, core: tuple[int, ...]) -> list[Array]:
  """Arrays broadcast over their leading (batch) axes; x keeps its last core[i] axes."""
  batch = tnp.broadcast_shapes(*(x.shape[:x.ndim - c] for x, c in zip(xs, core)))
  return [tnp.broadcast_to(x, (*batch, *x.shape[x.ndim - c:])) for x, c in zip(xs, core)]


def _rows(x: Array, order: Array) -> Array:
  """x[..., order[...], :]: each matrix's rows taken in the order of its permutation."""
  return tnp.take_along_axis(x, order[..., :, None], axis=-2, mode="promise_in_bounds")


# ---- Cholesky ----

def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Array:
  """The Cholesky factor of the symmetric positive definite a[..., n, n], as jax.scipy.linalg.cholesky: upper u with
  uᵀu = a (scipy's default), or lower l with l lᵀ = a; only that triangle of a is read; NaN where a is not positive
  definite.

  >>> tracegrad.scipy.linalg.cholesky(tnp.array([[4.0, 2.0], [2.0, 5.0]]))
  Array([[2., 1.],
         [0., 2.]], dtype=float32)
  """
  (a,) = _inexact(a)
  _matrices("cholesky", a)
  factor = lla.cholesky(a if lower else a.mT, symmetrize_input=False)
  return factor if lower else factor.mT


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Array, bool]:
  """(c, lower): the Cholesky factor of a (zeros in its other triangle) and which triangle it is, for cho_solve; as
  jax.scipy.linalg.cho_factor.

  >>> c, lower = tracegrad.scipy.linalg.cho_factor(tnp.array([[4.0, 2.0], [2.0, 5.0]]))
  >>> c, lower
  (Array([[2., 1.],
         [0., 2.]], dtype=float32), False)
  """
  return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple, b, overwrite_b: bool = False, check_finite: bool = True) -> Array:
  """x with a x = b, from a's Cholesky factor (c, lower) as cho_factor gives it; b of shape (n,) or (..., n, k); as
  jax.scipy.linalg.cho_solve.

  >>> c = tracegrad.scipy.linalg.cho_factor(tnp.array([[4.0, 2.0], [2.0, 5.0]]))
  >>> tracegrad.scipy.linalg.cho_solve(c, tnp.array([6.0, 7.0]))
  Array([1., 1.], dtype=float32)
  """
  c, lower = c_and_lower
  c, b = _inexact(c, b)
  _matrices("cho_solve", c, "c")
  bm, vectors = _rhs("cho_solve", c, b)
  # a = l lᵀ (lower) or uᵀ u: solve with the factor that multiplies first, then with the other
  y = lla.triangular_solve(c, bm, left_side=True, lower=lower, transpose_a=not lower)
  x = lla.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower)
  return x[..., 0] if vectors else x


# ---- triangular solve ----

_TRANS = {0: False, "N": False, 1: True, "T": True, 2: True, "C": True}


def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False, overwrite_b: bool = False,
                     debug=None, check_finite: bool = True) -> Array:
  """x with op(a) x = b, a triangular (only its lower or upper triangle is read, its diagonal taken as ones with
  unit_diagonal) and op(a) = a (trans 0 or 'N') or aᵀ (1, 'T', 2, 'C'); b of shape (n,) or (..., n, k); as
  jax.scipy.linalg.solve_triangular.

  >>> tracegrad.scipy.linalg.solve_triangular(tnp.array([[2.0, 0.0], [1.0, 1.0]]), tnp.array([2.0, 3.0]), lower=True)
  Array([1., 2.], dtype=float32)
  """
  if not isinstance(trans, (int, str)) or trans not in _TRANS:
    raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
  a, b = _inexact(a, b)
  _matrices("solve_triangular", a)
  bm, vectors = _rhs("solve_triangular", a, b)
  x = lla.triangular_solve(a, bm, left_side=True, lower=lower, transpose_a=_TRANS[trans], unit_diagonal=unit_diagonal)
  return x[..., 0] if vectors else x


# ---- LU ----

def _inverse_permutation(perm: Array) -> Array: return tnp.argsort(perm, axis=-1).astype(perm.dtype)


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """(p, l, u) with a = p l u for a[..., m, n]: p a permutation matrix, l[m, k] unit lower triangular, u[k, n] upper,
  k = min(m, n); (p l, u) with permute_l; as jax.scipy.linalg.lu (which takes a single matrix; here leading axes
  batch).

  >>> p, l, u = tracegrad.scipy.linalg.lu(tnp.array([[1.0, 2.0], [3.0, 4.0]]))
  >>> p
  Array([[0., 1.],
         [1., 0.]], dtype=float32)
  >>> u[0]
  Array([3., 4.], dtype=float32)
  """
  (a,) = _inexact(a)
  _matrices("lu", a, square=False)
  f, _, perm = lla.lu(a)
  m, n = a.shape[-2:]
  k = min(m, n)
  l = tnp.tril(f[..., :, :k], -1) + tnp.eye(m, k, dtype=a.dtype)
  u = tnp.triu(f[..., :k, :])
  if permute_l: return _rows(l, _inverse_permutation(perm)), u
  p = (perm[..., None, :] == tnp.arange(m, dtype=perm.dtype)[:, None]).astype(a.dtype)
  return p, l, u


def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Array, Array]:
  """(lu, piv): l (unit diagonal, below) and u (on and above) of a's LU factorization in one matrix, and the row
  swaps (row i with piv[i], in turn), for lu_solve; as jax.scipy.linalg.lu_factor.

  >>> lu, piv = tracegrad.scipy.linalg.lu_factor(tnp.array([[1.0, 2.0], [3.0, 4.0]]))
  >>> piv
  Array([1, 1], dtype=int32)
  """
  (a,) = _inexact(a)
  _matrices("lu_factor", a, square=False)
  f, piv, _ = lla.lu(a)
  return f, piv


def _lu_solve(f: Array, perm: Array, b: Array, trans: int) -> Array:
  """x with a x = b (trans 0) or aᵀ x = b, where f holds l and u of a[perm] = l u; b a stack of matrices."""
  f, perm, b = _broadcast(f, perm, b, core=(2, 1, 2))
  if trans == 0:
    y = lla.triangular_solve(f, _rows(b, perm), left_side=True, lower=True, unit_diagonal=True)
    return lla.triangular_solve(f, y, left_side=True, lower=False)
  y = lla.triangular_solve(f, b, left_side=True, lower=False, transpose_a=True)
  y = lla.triangular_solve(f, y, left_side=True, lower=True, transpose_a=True, unit_diagonal=True)
  return _rows(y, _inverse_permutation(perm))


def lu_solve(lu_and_piv: tuple, b, trans: int = 0, overwrite_b: bool = False, check_finite: bool = True) -> Array:
  """x with a x = b (trans 0) or aᵀ x = b (trans 1 or 2), from lu_factor's (lu, piv); b of shape (n,) or
  (..., n, k); as jax.scipy.linalg.lu_solve.

  >>> f = tracegrad.scipy.linalg.lu_factor(tnp.array([[2.0, 1.0], [4.0, 3.0]]))
  >>> tracegrad.scipy.linalg.lu_solve(f, tnp.array([3.0, 7.0]))
  Array([1., 1.], dtype=float32)
  """
  if trans not in (0, 1, 2) or isinstance(trans, bool):
    raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans!r}")
  f, piv = lu_and_piv
  f, b = _inexact(f, b)
  _matrices("lu_solve", f, "lu")
  bm, vectors = _rhs("lu_solve", f, b)
  x = _lu_solve(f, lla.lu_pivots_to_permutation(piv, f.shape[-1]), bm, trans)
  return x[..., 0] if vectors else x


# ---- QR ----

def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True) -> tuple:
  """(q, r) with a = q r for a[..., m, n], q orthogonal and r upper triangular, as jax.scipy.linalg.qr: q is m×m
  (mode 'full') or m×min(m, n) ('economic'); mode 'r' gives (r,) alone. Column pivoting is not implemented.

  >>> q, r = tracegrad.scipy.linalg.qr(tnp.array([[3.0, 1.0], [4.0, 2.0], [0.0, 0.0]]), mode="economic")
  >>> q.shape, r.shape
  ((3, 2), (2, 2))
  """
  if mode not in ("full", "r", "economic"):
    raise ValueError(f"qr: mode must be 'full', 'r' or 'economic', got {mode!r}")
  if pivoting: raise NotImplementedError("qr: pivoting=True (column-pivoted QR) is not implemented")
  (a,) = _inexact(a)
  _matrices("qr", a, square=False)
  q, r = lla.qr(a, full_matrices=mode != "economic")
  return (r,) if mode == "r" else (q, r)


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple[Array, Array]:
  """(q c, r) (mode 'left') or (c q, r) ('right') with q, r a's economic QR factors, as
  jax.scipy.linalg.qr_multiply; a vector c is taken as a column (left) or a row (right), and the product is flat.

  >>> cq, r = tracegrad.scipy.linalg.qr_multiply(tnp.array([[3.0], [4.0]]), tnp.array([1.0, 0.0]))
  >>> abs(cq)
  Array([0.6], dtype=float32)
  """
  if mode not in ("right", "left"): raise ValueError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
  if pivoting: raise NotImplementedError("qr_multiply: pivoting=True (column-pivoted QR) is not implemented")
  a, c = _inexact(a, c)
  _matrices("qr_multiply", a, square=False)
  flat = c.ndim == 1
  if flat: c = c[:, None] if mode == "left" else c[None, :]
  m, n = a.shape[-2:]
  k = min(m, n)
  if mode == "left" and c.shape[-2] != k:
    raise ValueError(f"qr_multiply: q of a (shape {a.shape}) has {k} columns, so c must have {k} rows for q c; got c "
                     f"of shape {c.shape}")
  if mode == "right" and c.shape[-1] != m:
    raise ValueError(f"qr_multiply: q of a (shape {a.shape}) has {m} rows, so c must have {m} columns for c q; got c "
                     f"of shape {c.shape}")
  a, c = _broadcast(a, c, core=(2, 2))
  q, r = lla.qr(a, full_matrices=False)
  out = q @ c if mode == "left" else c @ q
  return (out.reshape(-1) if flat else out), r


# ---- symmetric eigenproblems ----

def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1, check_finite: bool = True, *,
         subset_by_index=None):
  """(w, v): the ascending eigenvalues w and eigenvectors (columns of v) of the symmetric a[..., n, n], w alone with
  eigvals_only; as jax.scipy.linalg.eigh (a is symmetrized first; the generalized problem (b), eigvals and
  subset_by_index are not implemented, as in JAX).

  >>> tracegrad.scipy.linalg.eigh(tnp.array([[2.0, 1.0], [1.0, 2.0]]), eigvals_only=True)
  Array([1., 3.], dtype=float32)
  """
  if b is not None: raise NotImplementedError("eigh: the generalized problem (b given) is not implemented")
  if type != 1: raise NotImplementedError(f"eigh: only type=1 is implemented, got type={type!r}")
  if eigvals is not None or subset_by_index is not None:
    raise NotImplementedError("eigh: a subset of the eigenvalues (eigvals, subset_by_index) is not implemented; take "
                              "a slice of all of them")
  (a,) = _inexact(a)
  _matrices("eigh", a)
  v, w = lla.eigh(a, lower=lower)
  return w if eigvals_only else (w, v)


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a", select_range=None, tol=None, key=None):
  """The ascending eigenvalues (and, unless eigvals_only, the eigenvectors as columns) of the symmetric tridiagonal
  matrix with diagonal d[n] and off-diagonal e[n - 1], as jax.scipy.linalg.eigh_tridiagonal; select 'a' (all) or
  'i' (indices select_range[0] to select_range[1], both included). The matrix is formed and handed to eigh.

  >>> tracegrad.scipy.linalg.eigh_tridiagonal(tnp.array([2.0, 2.0]), tnp.array([1.0]), eigvals_only=True)
  Array([1., 3.], dtype=float32)
  """
  d, e = tnp.asarray(d), tnp.asarray(e)
  if d.dtype is not e.dtype:
    raise TypeError(f"eigh_tridiagonal: d and e must have one dtype, got {d.dtype} and {e.dtype}")
  if d.dtype not in (dtypes.float32, dtypes.float64):
    raise TypeError(f"eigh_tridiagonal: d and e must be float32 or float64, got {d.dtype}")
  if d.ndim != 1 or e.shape != (max(d.shape[0] - 1, 0),):
    raise ValueError(f"eigh_tridiagonal: d must be a vector (n,) and e one of n - 1; got shapes {d.shape} and "
                     f"{e.shape}")
  n = d.shape[0]
  lo, hi = 0, n - 1
  if select == "i":
    if select_range is None: raise ValueError("eigh_tridiagonal: select='i' needs select_range=(first, last)")
    lo, hi = (int(i) for i in select_range)
    if lo > hi: raise ValueError(f"eigh_tridiagonal: select_range {tuple(select_range)} is empty")
  elif select == "v":
    raise NotImplementedError("eigh_tridiagonal: select='v' (eigenvalues in a range of values) is not implemented")
  elif select != "a":
    raise ValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got {select!r}")
  if n <= 1: return d if eigvals_only else (d, tnp.eye(n, dtype=d.dtype))
  v, w = lla.eigh(tnp.diag(d) + tnp.diag(e, 1) + tnp.diag(e, -1), symmetrize_input=False)
  w, v = w[lo:hi + 1], v[:, lo:hi + 1]
  return w if eigvals_only else (w, v)


# ---- singular values and what is built on them ----

def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False, check_finite: bool = True,
        lapack_driver: str = "gesdd"):
  """(u, s, vh) with a = u diag(s) vh for a[..., m, n], s descending (s alone without compute_uv; u and vh square
  with full_matrices, else k = min(m, n) columns and rows); as jax.scipy.linalg.svd.

  >>> tracegrad.scipy.linalg.svd(tnp.array([[0.0, 2.0], [1.0, 0.0]]), compute_uv=False)
  Array([2., 1.], dtype=float32)
  """
  (a,) = _inexact(a)
  _matrices("svd", a, square=False)
  return lla.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None) -> tuple[Array, Array]:
  """(u, p): a = u p (side 'right') or p u ('left') with u[m, n] of orthonormal columns (or rows) and p symmetric
  positive semidefinite, as jax.scipy.linalg.polar. Both methods compute it from the SVD (JAX's 'qdwh' iterates to
  the same factors); eps and max_iterations are accepted and unused.

  >>> u, p = tracegrad.scipy.linalg.polar(tnp.array([[0.0, 2.0], [3.0, 0.0]]))
  >>> p
  Array([[3., 0.],
         [0., 2.]], dtype=float32)
  """
  if side not in ("right", "left"): raise ValueError(f"polar: side must be 'right' or 'left', got {side!r}")
  if method not in ("qdwh", "svd"): raise ValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}")
  (a,) = _inexact(a)
  _matrices("polar", a, square=False)
  u, s, vh = lla.svd(a, full_matrices=False)
  if side == "right": return u @ vh, (vh.mT * s[..., None, :]) @ vh
  return u @ vh, (u * s[..., None, :]) @ u.mT


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True):
  """h, zero below the first subdiagonal, with a = q h qᵀ for a[..., n, n] and q orthogonal ((h, q) with calc_q), as
  jax.scipy.linalg.hessenberg: Householder reflections in LAPACK's convention, one per column, in a loop.

  >>> h = tracegrad.scipy.linalg.hessenberg(tnp.array([[1.0, 0.0, 0.0], [0.0, 1.0, 2.0], [0.0, 2.0, 1.0]]))
  >>> h
  Array([[1., 0., 0.],
         [0., 1., 2.],
         [0., 2., 1.]], dtype=float32)
  """
  (a,) = _inexact(a)
  _matrices("hessenberg", a)
  n = a.shape[-1]
  rows = tnp.arange(n)
  eye = tnp.broadcast_to(tnp.eye(n, dtype=a.dtype), a.shape)

  def reflect(k, hq):
    h, q = hq
    col = tnp.sum(tnp.where(rows == k, h, 0), axis=-1)   # h[..., :, k]
    alpha = tnp.sum(tnp.where(rows == k + 1, col, 0), axis=-1, keepdims=True)
    below = tnp.where(rows > k + 1, col, 0)
    xnorm = tnp.sqrt(tnp.sum(below * below, axis=-1, keepdims=True))
    moves = xnorm > 0   # else the column is already reduced and the reflection is the identity
    beta = -tnp.copysign(tnp.hypot(alpha, xnorm), alpha)
    tau = tnp.where(moves, (beta - alpha) / tnp.where(moves, beta, 1), 0)
    v = tnp.where(rows == k + 1, 1, below / tnp.where(moves, alpha - beta, 1))
    tv = (tau * v)[..., :, None]
    h = h - tv * (v[..., None, :] @ h)
    h = h - (h @ v[..., :, None]) * tv.mT
    return h, q - (q @ v[..., :, None]) * tv.mT
  h, q = lax.fori_loop(0, max(n - 2, 0), reflect, (a, eye))
  h = tnp.triu(h, -1)
  return (h, q) if calc_q else h

