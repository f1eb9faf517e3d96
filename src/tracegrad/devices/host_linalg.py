"""The LINALG primitive's kinds (ir/linalg.py) on numpy arrays, through LAPACK as numpy.linalg and scipy.linalg call
it: what the interp device evaluates and what the compiled devices call from their programs (a host call). Half
types are computed in float32. A matrix LAPACK cannot factor (not positive definite, not converging, non-finite)
gives NaNs in its results, as JAX does, not an exception."""
from __future__ import annotations

import numpy as np


def _wide(a: np.ndarray) -> np.ndarray: return a.astype(np.float32) if a.dtype.itemsize < 4 else a


def _each(fn, arrays: list[np.ndarray], avals: list) -> list[np.ndarray]:
  """fn on the whole stack; where LAPACK fails on it, matrix by matrix, NaN for the ones that fail."""
  try:
    with np.errstate(all="ignore"): return [np.asarray(r) for r in fn(*arrays)]
  except np.linalg.LinAlgError:
    pass
  outs = [np.full(shape, np.nan, dtype.np) if dtype.is_float else np.zeros(shape, dtype.np) for shape, dtype in avals]
  batch = arrays[0].shape[:-2]
  for i in np.ndindex(*batch):
    try:
      with np.errstate(all="ignore"): rs = fn(*(a[i] for a in arrays))
    except np.linalg.LinAlgError:
      continue
    for o, r in zip(outs, rs): o[i] = r
  return outs


def _cholesky(p, a): return (np.linalg.cholesky(a),)


def _triangular_solve(p, a, b):
  from scipy.linalg import solve_triangular
  left, t = p["left_side"], p["transpose_a"]
  out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
  for i in np.ndindex(*out.shape[:-2]):
    ai, bi = a[i if a.ndim > 2 else ()], b[i if b.ndim > 2 else ()]
    if left: out[i] = solve_triangular(ai, bi, trans=int(t), lower=p["lower"], unit_diagonal=p["unit_diagonal"],
                                       check_finite=False)
    else: out[i] = solve_triangular(ai, bi.T, trans=int(not t), lower=p["lower"], unit_diagonal=p["unit_diagonal"],
                                    check_finite=False).T
  return (out,)


def _lu(p, a):
  from scipy.linalg import lapack
  m, n = a.shape[-2:]
  lu, piv = np.empty_like(a), np.empty((*a.shape[:-2], min(m, n)), np.int32)
  perm = np.empty((*a.shape[:-2], m), np.int32)
  getrf = lapack.get_lapack_funcs("getrf", (a,))
  for i in np.ndindex(*a.shape[:-2]):
    f, pv, _ = getrf(a[i])   # a singular matrix still factors (a zero on u's diagonal), as in JAX
    lu[i], piv[i] = f, pv
    order = np.arange(m, dtype=np.int32)
    for j, k in enumerate(pv): order[[j, k]] = order[[k, j]]
    perm[i] = order
  return lu, piv, perm


def _qr(p, a): return np.linalg.qr(a, mode="complete" if p["full_matrices"] else "reduced")


def _eigh(p, a):
  w, v = np.linalg.eigh(a, UPLO="L" if p["lower"] else "U")
  return v, w


def _svd(p, a):
  if not p["compute_uv"]: return (np.linalg.svd(a, compute_uv=False),)
  u, s, vh = np.linalg.svd(a, full_matrices=p["full_matrices"])
  return s, u, vh


ROUTINES = {"cholesky": _cholesky, "triangular_solve": _triangular_solve, "lu": _lu, "qr": _qr, "eigh": _eigh,
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
        if o.ndim >= 2 and o.shape[-1] == o.shape[-2] and o.dtype.kind == "f": o[...] = np.eye(o.shape[-1])
    return outs
  outs = _each(lambda *a: fn(p, *a), ins, avals)
  if kind == "cholesky": outs[0] = np.tril(outs[0])   # a failed factor is NaN in its lower triangle only
  return [np.ascontiguousarray(o, dtype.np).reshape(shape) for o, (shape, dtype) in zip(outs, avals)]
