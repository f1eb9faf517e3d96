"""The LINALG primitive's kinds (ir/linalg.py) on numpy arrays, through LAPACK as scipy.linalg calls it (numpy's
batched routines for stacks of small matrices): what the interp device evaluates and what the compiled devices call from their programs (a host call). Half
types are computed in float32. A matrix LAPACK cannot factor (not positive definite, not converging, non-finite)
gives NaNs in its results, as JAX does, not an exception."""
from __future__ import annotations

import numpy as np


def _wide(a: np.ndarray) -> np.ndarray: return a.astype(np.float32) if a.dtype.kind == "f" and a.dtype.itemsize < 4 else a


def _each(fn, arrays: list[np.ndarray], avals: list) -> list[np.ndarray]:
  """fn on the whole stack; where LAPACK fails on it, matrix by matrix, NaN for the ones that fail."""
  try:
    with np.errstate(all="ignore"): return [np.asarray(r) for r in fn(*arrays)]
  except np.linalg.LinAlgError:
    pass
  outs = [np.full(shape, np.nan, dtype.np) if dtype.is_inexact else np.zeros(shape, dtype.np) for shape, dtype in avals]
  batch = arrays[0].shape[:-2]
  for i in np.ndindex(*batch):
    try:
      with np.errstate(all="ignore"): rs = fn(*(a[i] for a in arrays))
    except np.linalg.LinAlgError:
      continue
    for o, r in zip(outs, rs): o[i] = r
  return outs


def _one(a: np.ndarray) -> bool:
  """Whether LAPACK is called matrix by matrix through scipy (large matrices, where scipy's drivers are faster than
  numpy.linalg's), rather than on the whole stack through numpy's batched routines."""
  return a.shape[-1] * a.shape[-2] >= 64 * 64 or a.ndim == 2


def _per_matrix(fn, a: np.ndarray, *rest):
  """fn on each matrix of the stack a (rest: arrays with the same leading axes), its results stacked."""
  if a.ndim == 2: return fn(a, *rest)
  outs = [fn(a[i], *(r[i] for r in rest)) for i in np.ndindex(*a.shape[:-2])]
  return tuple(np.stack(o).reshape(*a.shape[:-2], *o[0].shape) for o in zip(*outs))


def _cholesky(p, a):
  from scipy.linalg import lapack
  if not _one(a): return (np.linalg.cholesky(a),)
  potrf = lapack.get_lapack_funcs("potrf", (a,))

  def one(m):
    # row-major m is the column-major mᵀ, equal to m (the input is symmetrized): its upper factor Lᵀ, column-major,
    # is L row-major, so nothing is transposed on the way in or out (each a copy of the whole matrix at a stride)
    c, info = potrf(np.ascontiguousarray(m).T, lower=0, clean=1, overwrite_a=0)
    if info != 0: raise np.linalg.LinAlgError("not positive definite")
    return (c.T,)
  return _per_matrix(one, a)


def _triangular_solve(p, a, b):
  from scipy.linalg import blas
  trsm = blas.get_blas_funcs("trsm", (a, b))   # BLAS: a zero on the diagonal gives inf and NaN, as in JAX
  # row-major a and b are column-major aᵀ and bᵀ: solving for xᵀ flips the side and the triangle, and copies nothing
  side, lower, trans, diag = int(p["left_side"]), int(not p["lower"]), int(p["transpose_a"]), int(p["unit_diagonal"])

  def one(ai, bi):
    ai, bi = np.ascontiguousarray(ai), np.ascontiguousarray(bi)
    return (trsm(1.0, ai.T, bi.T, side=side, lower=lower, trans_a=trans, diag=diag).T,)
  return _per_matrix(one, a, b)


def _lu(p, a):
  from scipy.linalg import lapack
  m = a.shape[-2]
  getrf = lapack.get_lapack_funcs("getrf", (a,))

  def one(ai):
    f, pv, _ = getrf(ai)   # a singular matrix still factors (a zero on u's diagonal), as in JAX
    order = list(range(m))
    for j, k in enumerate(pv.tolist()): order[j], order[k] = order[k], order[j]
    return f, pv.astype(np.int32), np.array(order, np.int32)
  return _per_matrix(one, a)


def _qr(p, a):
  full, rows = p["full_matrices"], a.shape[-2] if p["full_matrices"] else min(a.shape[-2:])
  if not p.get("q", True):   # r alone: LAPACK forms no q
    if not _one(a): return (np.linalg.qr(a, mode="r")[..., :rows, :] if not full else _full_r(a),)
    from scipy.linalg import qr
    return _per_matrix(lambda m: (qr(m, mode="r", check_finite=False)[0][:rows],), a)
  mode = "full" if full else "economic"
  if not _one(a): return np.linalg.qr(a, mode="complete" if full else "reduced")
  from scipy.linalg import qr
  return _per_matrix(lambda m: qr(m, mode=mode, check_finite=False), a)


def _full_r(a: np.ndarray) -> np.ndarray:
  """The m x n r of full_matrices QR from numpy's min(m, n) x n one (zero rows below)."""
  r = np.linalg.qr(a, mode="r")
  return np.concatenate([r, np.zeros((*a.shape[:-2], a.shape[-2] - r.shape[-2], a.shape[-1]), r.dtype)], -2)


def _eigh(p, a):
  vectors, uplo = p.get("vectors", True), "L" if p["lower"] else "U"
  if not _one(a):
    if not vectors: return (np.linalg.eigvalsh(a, UPLO=uplo),)
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return v, w
  from scipy.linalg import eigh
  if not vectors:
    return _per_matrix(lambda m: (eigh(m, lower=p["lower"], eigvals_only=True, driver="evd", check_finite=False),), a)
  return _per_matrix(lambda m: eigh(m, lower=p["lower"], driver="evd", check_finite=False)[::-1], a)


def _svd(p, a):
  if not _one(a):
    if not p["compute_uv"]: return (np.linalg.svd(a, compute_uv=False),)
    u, s, vh = np.linalg.svd(a, full_matrices=p["full_matrices"])
    return s, u, vh
  from scipy.linalg import svd
  if not p["compute_uv"]: return _per_matrix(lambda m: (svd(m, compute_uv=False, check_finite=False),), a)

  def one(m):
    u, s, vh = svd(m, full_matrices=p["full_matrices"], check_finite=False)
    return s, u, vh
  return _per_matrix(one, a)


def _eig(p, a):
  if not p["left"] and a.ndim > 2 and not _one(a):
    w, v = np.linalg.eig(a)
    return (w, v) if p["right"] else (w,)
  from scipy.linalg import eig

  def one(m):
    r = eig(m, left=p["left"], right=p["right"], check_finite=False)
    return r if isinstance(r, tuple) else (r,)
  return _per_matrix(one, a)


ROUTINES = {"eig": _eig, "cholesky": _cholesky, "triangular_solve": _triangular_solve, "lu": _lu, "qr": _qr, "eigh": _eigh,
            "svd": _svd}


def run(kind: str, params: tuple, vals: list[np.ndarray], avals: list) -> list[np.ndarray]:
  """The results of LINALG kind on vals, in the dtypes of avals ((shape, DType) per result)."""
  p, fn = dict(params), ROUTINES[kind]
  ins = [_wide(np.asarray(v)) for v in vals]
  if any(0 in v.shape for v in ins):
    outs = [np.zeros(shape, dtype.np) for shape, dtype in avals]
    if kind == "lu": outs[2][...] = np.arange(avals[2][0][-1], dtype=np.int32)
    if kind in ("qr", "svd", "eigh"):   # identities where the factors are square
      for o in outs:
        if o.ndim >= 2 and o.shape[-1] == o.shape[-2] and o.dtype.kind in "fc": o[...] = np.eye(o.shape[-1])
    return outs
  outs = _each(lambda *a: fn(p, *a), ins, avals)
  if kind == "cholesky" and np.isnan(outs[0]).any(): outs[0] = np.tril(outs[0])   # NaN in the lower triangle only
  return [np.ascontiguousarray(o, dtype.np).reshape(shape) for o, (shape, dtype) in zip(outs, avals)]
