"""Matrix decompositions and triangular solves, as jax.lax.linalg: each a LINALG primitive (ir/linalg.py) over the
last two axes, mapped over the leading ones, computed by LAPACK (devices/host_linalg.py). triangular_solve is
differentiated by the transforms' rule tables; the decompositions by the forward-mode rules here (custom_jvp), whose
transposes give reverse mode.

>>> l = lax.linalg.cholesky(tnp.array([[4.0, 2.0], [2.0, 5.0]]))
>>> l
Array([[2., 0.],
       [1., 2.]], dtype=float32)
"""
from __future__ import annotations

import numpy as np

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..transforms import build as B
from ..transforms.custom import custom_jvp
from . import complex_math as cm
from .control import fori_loop

__all__ = ["cholesky", "eig", "eigh", "lu", "lu_pivots_to_permutation", "qr", "svd", "triangular_solve"]


def _prim(kind: str, operands, **params) -> list[Array]:
  outs = UOp.multi(Ops.LINALG, tuple(a.uop for a in operands), (kind, tuple(sorted(params.items()))))
  return [Array(o) for o in outs]


def _matrix(fn: str, x, square: bool = False, complex_ok: bool = False) -> Array:
  a = to_array(x, fn=fn)
  if a.ndim < 2: raise ValueError(f"{fn}: x must have at least 2 dimensions (a batch of matrices), got shape {a.shape}")
  if not (a.dtype.is_float or complex_ok and a.dtype.is_complex):
    raise TypeError(f"{fn}: x must be floating point{' or complex' if complex_ok else ''}, got {a.dtype}; convert "
                    f"it with .astype(float32)")
  if square and a.shape[-1] != a.shape[-2]:
    raise ValueError(f"{fn}: x must be square in its last two axes, got shape {a.shape}")
  return a


# ---- matrices as Arrays, on the transforms' builders ----

def _t(a: Array) -> Array: return Array(B.mT(a.uop))
def _mm(a: Array, b: Array) -> Array: return Array(B.matmul(a.uop, b.uop))
def _tri(a: Array, lower: bool, k: int = 0) -> Array: return Array(B.triangle(a.uop, lower, k))
def _c(a: Array, v) -> Array: return Array(UOp.const(a.dtype, v, a.shape))


def _eye(n: int, like: Array, m: int | None = None) -> Array:
  shape = (*like.shape[:-2], n, n if m is None else m)
  return Array(B.eq(UOp.iota(shape, len(shape) - 2, dtypes.int32), UOp.iota(shape, len(shape) - 1, dtypes.int32))
               .cast(like.dtype))


def _diag(a: Array) -> Array:
  """The diagonal of the last two axes, as a vector (the matrices are square)."""
  return Array((a * _eye(a.shape[-1], a)).uop.reduce(Ops.REDUCE_SUM, (a.ndim - 1,)).reshape(a.shape[:-1]))


def _h(a: Array) -> Array: return Array(cm.conj(B.mT(a.uop))) if a.dtype.is_complex else _t(a)   # aᴴ
def _symmetrized(a: Array) -> Array: return (a + _h(a)) * _c(a, 0.5)


# ---- triangular solve ----

def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False) -> Array:
  """x with op(a) x = b (left_side) or x op(a) = b, op(a) = aᵀ when transpose_a (conjugated too when conjugate_a),
  reading only a's lower (or upper) triangle, its diagonal taken as ones when unit_diagonal; as
  lax.linalg.triangular_solve.

  >>> lax.linalg.triangular_solve(tnp.array([[2.0, 0.0], [1.0, 1.0]]), tnp.array([[2.0], [3.0]]), left_side=True,
  ...                             lower=True)
  Array([[1.],
         [2.]], dtype=float32)
  """
  a, b = _matrix("triangular_solve", a, square=True, complex_ok=True), to_array(b, fn="triangular_solve")
  if conjugate_a and a.dtype.is_complex: a = Array(cm.conj(a.uop))
  if b.ndim < 2:
    raise ValueError(f"triangular_solve: b must have at least 2 dimensions (a batch of matrices), got shape {b.shape}")
  if b.dtype is not a.dtype:
    raise TypeError(f"triangular_solve: a and b must have one dtype, got {a.dtype} and {b.dtype}")
  m, axis = a.shape[-1], (-2 if left_side else -1)
  if b.shape[axis] != m:
    raise ValueError(f"triangular_solve: with left_side={left_side}, b's axis {axis} must have a's size {m}; got a of "
                     f"shape {a.shape} and b of shape {b.shape}")
  batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
  a = Array(a.uop.broadcast((*batch, *a.shape[-2:]))) if a.shape[:-2] != batch else a
  b = Array(b.uop.broadcast((*batch, *b.shape[-2:]))) if b.shape[:-2] != batch else b
  return _prim("triangular_solve", (a, b), left_side=bool(left_side), lower=bool(lower),
               transpose_a=bool(transpose_a), unit_diagonal=bool(unit_diagonal))[0]


# ---- Cholesky ----

def cholesky(x, *, symmetrize_input: bool = True) -> Array:
  """The lower Cholesky factor l of the symmetric (Hermitian) positive definite x (l lᴴ = x), NaN where x is not
  positive definite; as lax.linalg.cholesky (symmetrize_input: x is first replaced by (x + xᴴ) / 2).

  >>> lax.linalg.cholesky(tnp.array([[1.0, 0.0], [0.0, 9.0]]))
  Array([[1., 0.],
         [0., 3.]], dtype=float32)
  """
  a = _matrix("cholesky", x, square=True, complex_ok=True)
  return _cholesky(_symmetrized(a) if symmetrize_input else a)


@custom_jvp
def _cholesky(a: Array) -> Array: return _prim("cholesky", (a,))[0]


@_cholesky.defjvp
def _cholesky_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  l = _cholesky(a)
  # dl = l Φ(l⁻¹ da l⁻ᴴ), Φ keeping the strict lower triangle and half the diagonal
  inner = triangular_solve(l, triangular_solve(l, da, left_side=False, lower=True, transpose_a=True, conjugate_a=True),
                           left_side=True, lower=True)
  phi = _tri(inner, True, -1) + _tri(_tri(inner, True), False) * _c(inner, 0.5)
  return l, _mm(l, phi)


# ---- LU ----

def lu(x) -> tuple[Array, Array, Array]:
  """(lu, pivots, permutation) of x[..., m, n] with partial pivoting, as lax.linalg.lu: p x = l u with l unit lower
  triangular (lu's strict lower triangle) and u upper (lu's upper triangle); row i was swapped with pivots[i], and
  x[permutation] = p x.

  >>> lu_, piv, perm = lax.linalg.lu(tnp.array([[1.0, 2.0], [3.0, 4.0]]))
  >>> perm
  Array([1, 0], dtype=int32)
  """
  return tuple(_lu(_matrix("lu", x, complex_ok=True)))


@custom_jvp
def _lu(a: Array):
  return tuple(_prim("lu", (a,)))


@_lu.defjvp
def _lu_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  f, piv, perm = _lu(a)
  m, n = a.shape[-2:]
  k = min(m, n)
  pda = _rows(da, perm)
  l = _pad_to(_tri(Array(f.uop.slice(_full(f.shape, -1, 0, k))), True, -1), (m, m)) + _eye(m, f)
  u = _pad_to(_tri(Array(f.uop.slice(_full(f.shape, -2, 0, k))), False), (n, n))
  if n > k: u = u + _pad_below(_eye(n - k, f), k, n)
  la = triangular_solve(l, pda, left_side=True, lower=True, unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, lower=False)
  df = _mm(l, _tri(lau, True, -1)) + _mm(_tri(lau, False), u)
  return (f, piv, perm), (df, Array(UOp.const(piv.dtype, 0, piv.shape)), Array(UOp.const(perm.dtype, 0, perm.shape)))


def _full(shape, axis: int, lo: int, hi: int) -> tuple:
  return tuple((lo, hi, 1) if i == len(shape) + axis else (0, n, 1) for i, n in enumerate(shape))


def _pad_to(a: Array, mn: tuple[int, int]) -> Array:
  pads = [(0, 0)] * (a.ndim - 2) + [(0, mn[0] - a.shape[-2]), (0, mn[1] - a.shape[-1])]
  return Array(a.uop.pad(pads))


def _pad_below(e: Array, k: int, n: int) -> Array:
  """An (n - k)-identity placed in the bottom right corner of an n×n matrix."""
  pads = [(0, 0)] * (e.ndim - 2) + [(k, 0), (k, 0)]
  return Array(e.uop.pad(pads))


def _rows(a: Array, perm: Array) -> Array:
  """a[..., perm[...], :]: each matrix's rows in the order of its permutation."""
  m = a.shape[-2]
  onehot = B.eq(perm.uop.reshape((*perm.shape, 1)).broadcast((*perm.shape, m)),
                UOp.iota((*perm.shape, m), perm.ndim, dtypes.int32)).cast(a.dtype)
  return _mm(Array(onehot), a)


def lu_pivots_to_permutation(pivots, permutation_size: int) -> Array:
  """The permutation that the row swaps `pivots` (row i with pivots[i], in order) make of range(permutation_size),
  as lax.linalg.lu_pivots_to_permutation.

  >>> lax.linalg.lu_pivots_to_permutation(tnp.array([2, 2, 2], dtype=tnp.int32), 3)
  Array([2, 0, 1], dtype=int32)
  """
  p = to_array(pivots, fn="lu_pivots_to_permutation")
  if not p.dtype.is_int or p.ndim < 1:
    raise TypeError(f"lu_pivots_to_permutation: pivots must be an integer array of at least 1 dimension, got "
                    f"{p.aval_str()}")
  k = p.shape[-1]
  if permutation_size < k:
    raise ValueError(f"lu_pivots_to_permutation: permutation_size {permutation_size} is smaller than the number of "
                     f"pivots {k}")
  shape = (*p.shape[:-1], permutation_size)
  pos = UOp.iota(shape, len(shape) - 1, dtypes.int32)
  steps = UOp.iota(p.shape, p.ndim - 1, dtypes.int32)
  piv = p.uop.cast(dtypes.int32)

  def pick(mask: UOp, v: UOp) -> UOp:   # v's entry where mask holds, broadcast back over the last axis
    return mask.where(v, UOp.const(dtypes.int32, 0, v.shape)).reduce(Ops.REDUCE_SUM, (v.ndim - 1,)).broadcast(shape)

  def swap(i, perm: Array) -> Array:   # entries i and pivots[i] trade places (a loop: the graph does not grow with k)
    i = to_array(i, fn="lu_pivots_to_permutation").uop.cast(dtypes.int32)
    at_i, at_j = B.eq(pos, i.broadcast(shape)), B.eq(pos, pick(B.eq(steps, i.broadcast(steps.shape)), piv))
    return Array(at_i.where(pick(at_j, perm.uop), at_j.where(pick(at_i, perm.uop), perm.uop)))
  return fori_loop(0, k, swap, Array(pos))


# ---- QR ----

def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None) -> tuple[Array, Array]:
  """(q, r) with x = q r, q orthonormal columns and r upper triangular (with a real diagonal for complex x), as
  lax.linalg.qr (full_matrices: q square).

  >>> q, r = lax.linalg.qr(tnp.array([[3.0, 0.0], [4.0, 5.0]]))
  >>> abs(r[0, 0])
  Array(5., dtype=float32)
  """
  if pivoting: raise NotImplementedError("qr: pivoting=True (column-pivoted QR) is not implemented")
  return tuple(_qr(_matrix("qr", x, complex_ok=True), bool(full_matrices)))


def _qr_fun(a: Array, full: bool): return tuple(_prim("qr", (a,), full_matrices=full))


_qr = custom_jvp(_qr_fun, nondiff_argnums=(1,))


@_qr.defjvp
def _qr_jvp(full, primals, tangents):
  (a,), (da,) = primals, tangents
  q, r = _qr(a, full)
  m, n = a.shape[-2:]
  if m < n or (full and m != n):
    raise NotImplementedError(f"qr: the derivative is defined for m >= n with full_matrices=False (or square), got "
                              f"shape {a.shape} with full_matrices={full}")
  dx_rinv = triangular_solve(r, da, left_side=False, lower=False)
  qt = _mm(_h(q), dx_rinv)   # qᴴ dq (skew-Hermitian) plus dr r⁻¹ (upper triangular)
  low = _tri(qt, True, -1)
  do = low - _h(low)
  if qt.dtype.is_complex:   # r's diagonal is real, so the imaginary part of qt's diagonal is qᴴ dq's
    do = do + _eye(n, qt) * Array(cm.cx(UOp.const(qt.dtype.real, 0.0, qt.shape), cm.im(qt.uop)))
  return (q, r), (_mm(q, do - qt) + dx_rinv, _mm(qt - do, r))


# ---- symmetric eigendecomposition ----

def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues: bool = True,
         subset_by_index=None) -> tuple[Array, Array]:
  """(v, w): eigenvectors (columns of v) and ascending eigenvalues w of the symmetric (Hermitian) x, as
  lax.linalg.eigh; w is real.

  >>> v, w = lax.linalg.eigh(tnp.array([[2.0, 0.0], [0.0, 1.0]]))
  >>> w
  Array([1., 2.], dtype=float32)
  """
  if subset_by_index is not None: raise NotImplementedError("eigh: subset_by_index is not implemented")
  a = _matrix("eigh", x, square=True, complex_ok=True)
  return tuple(_eigh(_symmetrized(a) if symmetrize_input else a, bool(lower)))


_eigh = custom_jvp(lambda a, lower: tuple(_prim("eigh", (a,), lower=lower)), nondiff_argnums=(1,))


@_eigh.defjvp
def _eigh_jvp(lower, primals, tangents):
  (a,), (da,) = primals, tangents
  v, w = _eigh(a, lower)
  n = a.shape[-1]
  eye = _eye(n, a)
  wr = Array(w.uop.reshape((*w.shape[:-1], 1, n)).broadcast(a.shape))
  gaps = wr - _t(wr)   # w_j - w_i
  real_eye = _eye(n, wr)
  f = Array(UOp.const(w.dtype, 1, a.shape)) / (gaps + real_eye) - real_eye
  vdv = _mm(_h(v), _mm(da, v))
  dw = _diag(vdv)
  return (v, w), (_mm(v, f.astype(vdv.dtype) * vdv), Array(cm.re(dw.uop)) if dw.dtype.is_complex else dw)


# ---- singular value decomposition ----

def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None):
  """(u, s, vh) with x = u diag(s) vh and s descending (s alone without compute_uv), as lax.linalg.svd.

  >>> lax.linalg.svd(tnp.array([[3.0, 0.0], [0.0, 4.0]]), compute_uv=False)
  Array([4., 3.], dtype=float32)
  """
  if subset_by_index is not None: raise NotImplementedError("svd: subset_by_index is not implemented")
  a = _matrix("svd", x, complex_ok=True)
  if not compute_uv: return _svd_values(a)
  s, u, vh = _svd(a, bool(full_matrices))
  return u, s, vh


@custom_jvp
def _svd_values(a: Array) -> Array: return _prim("svd", (a,), full_matrices=False, compute_uv=False)[0]


@_svd_values.defjvp
def _svd_values_jvp(primals, tangents):
  (a,), (da,) = primals, tangents
  s, u, vh = _svd(a, False)
  return s, _real(_diag(_mm(_h(u), _mm(da, _h(vh)))))


def _real(x: Array) -> Array: return Array(cm.re(x.uop)) if x.dtype.is_complex else x


_svd = custom_jvp(lambda a, full: tuple(_prim("svd", (a,), full_matrices=full, compute_uv=True)), nondiff_argnums=(1,))


@_svd.defjvp
def _svd_jvp(full, primals, tangents):
  (a,), (da,) = primals, tangents
  m, n = a.shape[-2:]
  if full and m != n:
    raise NotImplementedError(f"svd: the derivative with full_matrices=True needs a square matrix, got shape {a.shape}; "
                              f"pass full_matrices=False")
  s, u, vh = _svd(a, full)
  v = _h(vh)
  k = s.shape[-1]
  row = Array(s.uop.reshape((*s.shape[:-1], 1, k)).broadcast((*s.shape[:-1], k, k)))
  eye = _eye(k, row)
  diffs = (row + _t(row)) * (row - _t(row))   # s_j² - s_i²
  one = Array(UOp.const(s.dtype, 1, diffs.shape))
  f = (one / (diffs + eye) - eye).astype(a.dtype)
  ds_mat = _mm(_h(u), _mm(da, v))   # uᴴ du s + ds - s vᴴ dv, uᴴ du and vᴴ dv skew-Hermitian
  dss, sds = row.astype(a.dtype) * ds_mat, _t(row).astype(a.dtype) * ds_mat
  du = _mm(u, f * (dss + _h(dss)))
  dv = _mm(v, f * (sds + _h(sds)))
  zero = Array(B.eq(s.uop, UOp.const(s.dtype, 0, s.shape)).cast(s.dtype))
  s_inv = Array(UOp.const(s.dtype, 1, s.shape)) / (s + zero) - zero
  inv_row = Array(s_inv.uop.reshape((*s.shape[:-1], 1, k))).astype(a.dtype)
  ds = _diag(ds_mat)
  if a.dtype.is_complex:   # the phase a pair of singular vectors share is free: its change goes to u's
    imag = Array(cm.cx(UOp.const(s.dtype, 0.0, ds.shape), cm.im(ds.uop)))
    du = du + u * Array((imag * s_inv.astype(a.dtype)).uop.reshape((*s.shape[:-1], 1, k)).broadcast(u.shape[:-1] + (k,)))
  if m > n:
    dav = _mm(da, v)
    du = du + (dav - _mm(u, _mm(_h(u), dav))) * Array(inv_row.uop.broadcast(dav.shape))
  if n > m:
    dau = _mm(_h(da), u)
    dv = dv + (dau - _mm(v, _mm(vh, dau))) * Array(inv_row.uop.broadcast(dau.shape))
  return (s, u, vh), (_real(ds), du, _h(dv))


# ---- general eigendecomposition ----

def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        use_magma=None, enable_eigvec_derivs: bool = False) -> list[Array]:
  """[w, vl, vr] (vl, vr as asked): the complex eigenvalues of a general square x and its left and right eigenvectors
  (columns of unit length), as lax.linalg.eig. The right eigenvectors are differentiated only with
  enable_eigvec_derivs=True (their derivative assumes distinct eigenvalues and ignores LAPACK's choice of phase).

  >>> w, = lax.linalg.eig(tnp.array([[0.0, 1.0], [-1.0, 0.0]]), compute_left_eigenvectors=False,
  ...                     compute_right_eigenvectors=False)
  >>> w
  Array([0.+1.j, 0.-1.j], dtype=complex64)
  """
  a = to_array(x, fn="eig")
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"eig: x must be square in its last two axes, got shape {a.shape}")
  if not a.dtype.is_inexact:
    raise TypeError(f"eig: x must be floating point or complex, got {a.dtype}; convert it with .astype(float32)")
  return list(_eig(a, bool(compute_left_eigenvectors), bool(compute_right_eigenvectors), bool(enable_eigvec_derivs)))


_eig = custom_jvp(lambda a, left, right, derivs: tuple(_prim("eig", (a,), left=left, right=right)),
                  nondiff_argnums=(1, 2, 3))


@_eig.defjvp
def _eig_jvp(left, right, derivs, primals, tangents):
  """With V⁻¹ = diag(1 / (vlᴴ vr)ᵢᵢ) vlᴴ and M = V⁻¹ dA V: dw = diag(M), and dV = V (F ∘ M), F = 1 / (wⱼ - wᵢ) off the
  diagonal, less its component along V that would change each column's length."""
  if left:
    raise NotImplementedError("eig: the derivative of the left eigenvectors is not implemented (nor in JAX); pass "
                              "compute_left_eigenvectors=False")
  if right and not derivs:
    raise NotImplementedError("eig: derivatives of non-symmetric eigenvectors hold only for distinct eigenvalues, "
                              "which cannot be checked; pass enable_eigvec_derivs=True to opt in, or "
                              "compute_right_eigenvectors=False for the eigenvalues' derivative")
  (a,), (da,) = primals, tangents
  w, vl, vr = (x.uop for x in _prim("eig", (a,), left=True, right=True))
  da = da.uop.cast(w.dtype)
  vlh = B.mT(cm.conj(vl))
  n = w.shape[-1]
  eye = _eye(n, Array(vr)).uop
  scale = (B.matmul(vlh, vr) * eye).reduce(Ops.REDUCE_SUM, (vr.ndim - 1,))   # (..., n, 1): (vlᴴ vr)ᵢᵢ
  m = B.div(B.matmul(vlh, B.matmul(da, vr)), scale.broadcast(vr.shape))
  dw = (m * eye).reduce(Ops.REDUCE_SUM, (m.ndim - 1,)).reshape(w.shape)
  outs, touts = [Array(w)], [Array(dw)]
  if right:
    wr = w.reshape((*w.shape[:-1], 1, n)).broadcast(vr.shape)
    f = B.div(UOp.const(w.dtype, 1, vr.shape), wr - B.mT(wr) + eye) - eye
    dv = B.matmul(vr, f * m)
    along = cm.re((cm.conj(vr) * dv).reduce(Ops.REDUCE_SUM, (vr.ndim - 2,))).cast(vr.dtype)
    outs.append(Array(vr))
    touts.append(Array(dv - vr * along.broadcast(vr.shape)))
  return tuple(outs), tuple(touts)
