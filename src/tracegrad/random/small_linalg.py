"""The two factorisations tracegrad.random needs (tracegrad.numpy.linalg has neither): a Householder QR for
orthogonal and a Cholesky factor for multivariate_normal, each a short loop of array operations over the last two
axes, so they run eagerly, under jit and under vmap alike.

>>> q, r = qr(tnp.asarray([[3.0, 1.0], [4.0, 2.0]]))
>>> tnp.round(q @ r, 4)
Array([[3., 1.],
       [4., 2.]], dtype=float32)
"""
from __future__ import annotations

from .. import numpy as tnp
from ..array import Array


def _mT(a: Array) -> Array: return tnp.swapaxes(a, -1, -2)


def qr(a) -> Array:
  """The reduced QR factors of a (..., m, n) with m >= n: q (..., m, n) with orthonormal columns, r (..., n, n) upper
  triangular, by n Householder reflections."""
  a = tnp.asarray(a)
  m, n = a.shape[-2:]
  rows = tnp.arange(m)
  q = tnp.broadcast_to(tnp.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m))
  r = a
  for j in range(min(n, m - 1)):
    x = tnp.where(rows >= j, r[..., :, j], 0)
    head = x[..., j]
    alpha = -tnp.where(head < 0, -1.0, 1.0).astype(a.dtype) * tnp.sqrt(tnp.sum(x * x, axis=-1))
    v = x - tnp.where(rows == j, alpha[..., None], 0)
    vn = tnp.sqrt(tnp.sum(v * v, axis=-1))
    v = v / tnp.where(vn == 0, 1, vn)[..., None]
    r = r - 2 * v[..., :, None] * tnp.sum(v[..., :, None] * r, axis=-2)[..., None, :]
    q = q - 2 * tnp.sum(q * v[..., None, :], axis=-1)[..., :, None] * v[..., None, :]
  return q[..., :, :n], r[..., :n, :]


def cholesky(a) -> Array:
  """The lower triangular l with l @ l^T = a for symmetric positive definite a (..., n, n), column by column;
  nan where a is not positive definite."""
  a = tnp.asarray(a)
  n = a.shape[-1]
  rows = tnp.arange(n)
  low = tnp.zeros_like(a)
  for j in range(n):
    s = a[..., :, j] - tnp.sum(low * low[..., j:j + 1, :], axis=-1)
    d = tnp.sqrt(s[..., j:j + 1])
    col = tnp.where(rows > j, s / d, tnp.where(rows == j, d, 0))
    low = low + col[..., :, None] * (rows == j).astype(a.dtype)
  return low
