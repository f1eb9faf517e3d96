"""Linear systems, inverses and determinants of jax.scipy.linalg on LU and Cholesky factors: solve, inv and det. Their
derivatives are rules on the factors (dx = a⁻¹ (db - da x), d det = det tr(a⁻¹ da)), not the factorizations' own.

>>> tracegrad.scipy.linalg.det(tnp.array([[2.0, 0.0, 0.0, 0.0], [0.0, 3.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0],
...                                       [0.0, 0.0, 0.0, 1.0]]))
Array(6., dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ...array import Array
from ...lax import linalg as lla
from ...transforms.custom import custom_jvp
from .factor import _broadcast, _inexact, _lu_solve, _matrices

__all__ = ["solve", "inv", "det"]

_ASSUME = ("gen", "sym", "her", "pos")


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False, debug: bool = False,
          check_finite: bool = True, assume_a: str = "gen") -> Array:
  """x with a x = b for a[..., n, n], as jax.scipy.linalg.solve: by LU with partial pivoting, or by Cholesky reading
  a's lower (or upper) triangle for assume_a='pos'. b is a vector (n,) or matrices (..., n, k) ('pos' also takes
  a batch of vectors (..., n) with one axis fewer than a, as JAX does).

  >>> tracegrad.scipy.linalg.solve(tnp.array([[2.0, 1.0], [1.0, 3.0]]), tnp.array([3.0, 4.0]))
  Array([1., 1.], dtype=float32)
  """
  if assume_a not in _ASSUME: raise ValueError(f"solve: assume_a must be one of {_ASSUME}, got {assume_a!r}")
  a, b = _inexact(a, b)
  _matrices("solve", a)
  n = a.shape[-1]
  if assume_a == "pos":
    if b.ndim not in (a.ndim, a.ndim - 1):
      raise ValueError(f"solve: with assume_a='pos', b must have as many axes as a (shape {a.shape}) or one fewer, "
                       f"got b of shape {b.shape}")
    vectors = b.ndim == a.ndim - 1
  else:
    if b.ndim > 1 and a.ndim == b.ndim + 1 and b.shape[-1] == n and b.shape[-2] != n:
      raise ValueError(f"solve: b of shape {b.shape} against a of shape {a.shape} is ambiguous (JAX no longer reads it "
                       f"as a batch of vectors); pass b[..., None] and take [..., 0] of the result")
    vectors = b.ndim == 1
  if b.ndim == 0 or (b[..., None] if vectors else b).shape[-2] != n:
    raise ValueError(f"solve: b must have {n} rows, as a of shape {a.shape} has; got b of shape {b.shape}")
  a, bm = _broadcast(a, b[..., None] if vectors else b, core=(2, 2))
  x = _solve_pos(a, bm, bool(lower)) if assume_a == "pos" else _solve_lu(a, bm)
  return x[..., 0] if vectors else x


@custom_jvp
def _solve_lu(a: Array, b: Array) -> Array:
  f, _, perm = lla.lu(a)
  return _lu_solve(f, perm, b, 0)


@_solve_lu.defjvp
def _solve_lu_jvp(primals, tangents):
  (a, b), (da, db) = primals, tangents
  f, _, perm = lla.lu(a)
  x = _lu_solve(f, perm, b, 0)
  return x, _lu_solve(f, perm, db - da @ x, 0)


def _cho_solve(c: Array, b: Array, lower: bool) -> Array:
  y = lla.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower)
  return lla.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower)


def _cho(a: Array, lower: bool) -> Array:
  factor = lla.cholesky(a if lower else a.mT, symmetrize_input=False)
  return factor if lower else factor.mT


def _solve_pos_fun(a: Array, b: Array, lower: bool) -> Array: return _cho_solve(_cho(a, lower), b, lower)


_solve_pos = custom_jvp(_solve_pos_fun, nondiff_argnums=(2,))


@_solve_pos.defjvp
def _solve_pos_jvp(lower, primals, tangents):
  (a, b), (da, db) = primals, tangents
  c = _cho(a, lower)
  x = _cho_solve(c, b, lower)
  return x, _cho_solve(c, db - da @ x, lower)


def inv(a, overwrite_a: bool = False, check_finite: bool = True) -> Array:
  """The inverse of a[..., n, n] (inf or NaN where a is singular), as jax.scipy.linalg.inv.

  >>> tracegrad.scipy.linalg.inv(tnp.array([[2.0, 0.0], [0.0, 4.0]]))
  Array([[0.5 , 0.  ],
         [0.  , 0.25]], dtype=float32)
  """
  (a,) = _inexact(a)
  _matrices("inv", a)
  return _solve_lu(a, tnp.broadcast_to(tnp.eye(a.shape[-1], dtype=a.dtype), a.shape))


def det(a, overwrite_a: bool = False, check_finite: bool = True) -> Array:
  """The determinant of a[..., n, n], as jax.scipy.linalg.det: tracegrad.numpy.linalg.det (by formula up to 3×3,
  else from the LU factors; its derivative is the adjugate, singular matrices included).

  >>> tracegrad.scipy.linalg.det(tnp.array([[1.0, 2.0], [3.0, 4.0]]))
  Array(-2., dtype=float32)
  """
  (a,) = _inexact(a)
  _matrices("det", a)
  return tnp.linalg.det(a)
