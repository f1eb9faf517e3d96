"""The LINALG primitive's kinds: for each, its operands and the (shape, dtype) of its results. Every kind maps over
leading (batch) axes; `params` is a tuple of (name, value) pairs.

cholesky(a[..., n, n]) -> l: the lower Cholesky factor of the symmetric positive definite a (its lower triangle
  read), NaN where a is not positive definite
triangular_solve(a[..., m, m], b[..., m, k] or b[..., k, m]; left_side, lower, transpose_a, unit_diagonal) -> x:
  op(a) x = b (left_side) or x op(a) = b, op(a) = a or aᵀ, only a's `lower` (or upper) triangle read, its diagonal
  taken as ones when unit_diagonal
lu(a[..., m, n]) -> lu, pivots (int32[..., min(m, n)]), permutation (int32[..., m]): p a = l u, l unit lower in lu's
  strict lower triangle, u in its upper triangle; row i was swapped with pivots[i]; permutation lists a's rows in p a
qr(a[..., m, n]; full_matrices, q) -> q[..., m, m or k] (unless q is False), r[..., m or k, n], k = min(m, n)
eigh(a[..., n, n]; lower, vectors) -> v[..., n, n] (unless vectors is False), w[..., n]: a v = v diag(w), w
  ascending, a's `lower` triangle read
svd(a[..., m, n]; full_matrices, compute_uv) -> s[..., k] descending, then (compute_uv) u[..., m, m or k],
  vh[..., n or k, n]
eig(a[..., n, n] real or complex; left, right) -> w[..., n], then (left) vl[..., n, n], then (right) vr[..., n, n],
  all complex: a vr = vr diag(w), vlᴴ a = diag(w) vlᴴ, each eigenvector of unit length (LAPACK's geev)
"""
from __future__ import annotations

from .dtypes import complex_of, int32
from .ops import Ops


COMPLEX_KINDS = frozenset({"eig", "lu", "triangular_solve", "cholesky", "eigh", "qr", "svd"})   # the kinds that take complex matrices


def _err(kind: str, msg: str) -> ValueError: return ValueError(f"linalg {kind}: {msg}")


def _float_matrix(kind: str, a, name: str = "a", square: bool = False) -> tuple[int, int]:
  if len(a.shape) < 2: raise _err(kind, f"{name} must have at least 2 dimensions, got shape {a.shape}")
  if not (a.dtype.is_float or kind in COMPLEX_KINDS and a.dtype.is_complex):
    raise _err(kind, f"{name} must be floating point{' or complex' if kind in COMPLEX_KINDS else ''}, got {a.dtype}")
  m, n = a.shape[-2:]
  if square and m != n: raise _err(kind, f"{name} must be square in its last two axes, got shape {a.shape}")
  return m, n


def _cholesky(src, p):
  (a,) = src
  _float_matrix("cholesky", a, square=True)
  return [(a.shape, a.dtype)]


def _triangular_solve(src, p):
  a, b = src
  m, _ = _float_matrix("triangular_solve", a, square=True)
  _float_matrix("triangular_solve", b, "b")
  if b.dtype is not a.dtype: raise _err("triangular_solve", f"a and b must have one dtype, got {a.dtype} and {b.dtype}")
  axis = -2 if p["left_side"] else -1
  if b.shape[axis] != m or b.shape[:-2] != a.shape[:-2]:
    raise _err("triangular_solve", f"b of shape {b.shape} does not match a of shape {a.shape} (left_side="
                                   f"{p['left_side']}: b's axis {axis} must be {m}, and the batch axes equal)")
  return [(b.shape, b.dtype)]


def _lu(src, p):
  (a,) = src
  m, n = _float_matrix("lu", a)
  batch = a.shape[:-2]
  return [(a.shape, a.dtype), ((*batch, min(m, n)), int32), ((*batch, m), int32)]


def _qr(src, p):
  (a,) = src
  m, n = _float_matrix("qr", a)
  k, batch = min(m, n), a.shape[:-2]
  c = m if p["full_matrices"] else k
  r = ((*batch, c, n), a.dtype)
  return [((*batch, m, c), a.dtype), r] if p.get("q", True) else [r]


def _eigh(src, p):
  (a,) = src
  _, n = _float_matrix("eigh", a, square=True)
  w = ((*a.shape[:-2], n), a.dtype.real)   # a Hermitian matrix's eigenvalues are real
  return [(a.shape, a.dtype), w] if p.get("vectors", True) else [w]


def _svd(src, p):
  (a,) = src
  m, n = _float_matrix("svd", a)
  k, batch = min(m, n), a.shape[:-2]
  out = [((*batch, k), a.dtype.real)]   # singular values are real
  if p["compute_uv"]:
    full = p["full_matrices"]
    out += [((*batch, m, m if full else k), a.dtype), ((*batch, n if full else k, n), a.dtype)]
  return out


def _eig(src, p):
  (a,) = src
  _, n = _float_matrix("eig", a, square=True)
  c = complex_of(a.dtype)
  return [((*a.shape[:-2], n), c)] + [(a.shape, c)] * (bool(p["left"]) + bool(p["right"]))


KINDS = {"eig": _eig, "cholesky": _cholesky, "triangular_solve": _triangular_solve, "lu": _lu, "qr": _qr, "eigh": _eigh,
         "svd": _svd}


def linalg_avals(src, arg) -> list:
  """The (shape, dtype) of each result of LINALG(*src; arg=(kind, params))."""
  kind, params = arg
  if kind not in KINDS: raise ValueError(f"{Ops.LINALG.name.lower()}: unknown kind {kind!r}; one of {sorted(KINDS)}")
  return KINDS[kind](src, dict(params))
