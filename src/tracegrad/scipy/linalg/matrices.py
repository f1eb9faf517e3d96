"""The special matrices of jax.scipy.linalg. Those built from arrays (toeplitz, hankel, circulant, leslie, companion,
fiedler, fiedler_companion, convolution_matrix) gather their entries with a fixed index matrix and map over leading
axes; those of a size alone (hilbert, invhilbert, pascal, invpascal, helmert, hadamard) are constants, computed
exactly where their entries are integers. And block_diag.

>>> tracegrad.scipy.linalg.toeplitz(tnp.array([1, 2, 3]))
Array([[1, 2, 3],
       [2, 1, 2],
       [3, 2, 1]], dtype=int32)
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ... import numpy as tnp
from ...array import Array
from ...ir import dtypes
from .factor import _inexact

__all__ = ["block_diag", "toeplitz", "hankel", "circulant", "leslie", "companion", "fiedler", "fiedler_companion",
           "convolution_matrix", "hilbert", "invhilbert", "pascal", "invpascal", "helmert", "hadamard"]


def _vectors(*xs) -> list[Array]:
  """The arguments as arrays of at least one axis, of their common dtype, broadcast over all but their last axis."""
  arrs = [tnp.atleast_1d(tnp.asarray(x)) for x in xs]
  dt = tnp.result_type(*arrs)
  batch = tnp.broadcast_shapes(*(a.shape[:-1] for a in arrs))
  return [tnp.broadcast_to(a.astype(dt), (*batch, a.shape[-1])) for a in arrs]


def _gather(vals: Array, index: np.ndarray) -> Array:
  """The matrices out[..., i, j] = vals[..., index[i, j]]."""
  return tnp.take(vals, tnp.asarray(index.astype(np.int32)), axis=-1)


def block_diag(*arrs) -> Array:
  """The block-diagonal matrix of the arguments (scalars and vectors taken as one-row matrices), as
  jax.scipy.linalg.block_diag.

  >>> tracegrad.scipy.linalg.block_diag(tnp.array([[1, 2]]), 3)
  Array([[1, 2, 0],
         [0, 0, 3]], dtype=int32)
  """
  if not arrs: return tnp.zeros((1, 0))
  arrs = [tnp.asarray(a) for a in arrs]
  for i, a in enumerate(arrs):
    if a.ndim > 2: raise ValueError(f"block_diag: argument {i} has shape {a.shape}; the blocks have at most 2 axes")
  dt = tnp.result_type(*arrs)
  blocks = [tnp.atleast_2d(a).astype(dt) for a in arrs]
  width, left, rows = sum(b.shape[1] for b in blocks), 0, []
  for b in blocks:
    rows.append(tnp.pad(b, ((0, 0), (left, width - left - b.shape[1]))))
    left += b.shape[1]
  return tnp.concatenate(rows, axis=0)


def toeplitz(c, r=None) -> Array:
  """The matrix with first column c and first row r (r[0] ignored; r = c when not given), constant along its
  diagonals, as jax.scipy.linalg.toeplitz; leading axes of c and r map.

  >>> tracegrad.scipy.linalg.toeplitz(tnp.array([1.0, 2.0]), tnp.array([0.0, 5.0, 6.0]))
  Array([[1., 5., 6.],
         [2., 1., 5.]], dtype=float32)
  """
  c, r = _vectors(c, c if r is None else r)
  m, n = c.shape[-1], r.shape[-1]
  if m == 0 or n == 0: return tnp.zeros((*c.shape[:-1], m, n), c.dtype)
  vals = tnp.concatenate([tnp.flip(c, axis=-1), r[..., 1:]], axis=-1)
  return _gather(vals, m - 1 - np.arange(m)[:, None] + np.arange(n))


def hankel(c, r=None) -> Array:
  """The matrix with first column c and last row r (r[0] ignored; zeros when not given), constant along its
  anti-diagonals, as jax.scipy.linalg.hankel; leading axes of c and r map.

  >>> tracegrad.scipy.linalg.hankel(tnp.array([1, 2, 3]))
  Array([[1, 2, 3],
         [2, 3, 0],
         [3, 0, 0]], dtype=int32)
  """
  for name, x in (("c", c), ("r", r)):
    if x is not None and tnp.ndim(x) == 0: raise ValueError(f"hankel: {name} must have at least 1 axis, got a scalar")
  c, r = _vectors(c, tnp.zeros_like(tnp.asarray(c)) if r is None else r)
  m, n = c.shape[-1], r.shape[-1]
  if m == 0 or n == 0: return tnp.zeros((*c.shape[:-1], m, n), c.dtype)
  return _gather(tnp.concatenate([c, r[..., 1:]], axis=-1), np.arange(m)[:, None] + np.arange(n))


def circulant(c) -> Array:
  """The matrix whose columns are c rotated down by their index, as jax.scipy.linalg.circulant.

  >>> tracegrad.scipy.linalg.circulant(tnp.array([1, 2, 3]))
  Array([[1, 3, 2],
         [2, 1, 3],
         [3, 2, 1]], dtype=int32)
  """
  (c,) = _vectors(c)
  n = c.shape[-1]
  return _gather(c, (np.arange(n)[:, None] - np.arange(n)) % n)


def leslie(f, s) -> Array:
  """The Leslie matrix of fecundities f[n] (its first row) and survival rates s[n - 1] (its subdiagonal), as
  jax.scipy.linalg.leslie.

  >>> tracegrad.scipy.linalg.leslie(tnp.array([0.0, 2.0]), tnp.array([0.5]))
  Array([[0. , 2. ],
         [0.5, 0. ]], dtype=float32)
  """
  f, s = tnp.atleast_1d(tnp.asarray(f)), tnp.atleast_1d(tnp.asarray(s))
  if f.shape[-1] < 2:
    raise ValueError(f"leslie: f must have at least 2 entries along its last axis, got shape {f.shape}")
  if s.shape[-1] != f.shape[-1] - 1:
    raise ValueError(f"leslie: s must have one entry fewer than f along the last axis; got shapes {f.shape} and "
                     f"{s.shape}")
  f, s = _vectors(f, s)
  n = f.shape[-1]
  vals = tnp.concatenate([f, s, tnp.zeros((*f.shape[:-1], 1), f.dtype)], axis=-1)
  index = np.full((n, n), 2 * n - 1)
  index[0] = np.arange(n)
  index[np.arange(1, n), np.arange(n - 1)] = n + np.arange(n - 1)
  return _gather(vals, index)


def companion(a) -> Array:
  """The companion matrix of the polynomial with coefficients a (highest degree first): first row -a[1:] / a[0], ones
  below the diagonal, as jax.scipy.linalg.companion.

  >>> tracegrad.scipy.linalg.companion(tnp.array([1.0, -3.0, 2.0]))
  Array([[ 3., -2.],
         [ 1.,  0.]], dtype=float32)
  """
  (a,) = _inexact(tnp.atleast_1d(tnp.asarray(a)))
  if a.shape[-1] < 2: raise ValueError(f"companion: a must have at least 2 entries along its last axis, got {a.shape}")
  m = a.shape[-1] - 1
  vals = tnp.concatenate([-a[..., 1:] / a[..., :1], tnp.ones((*a.shape[:-1], 1), a.dtype),
                          tnp.zeros((*a.shape[:-1], 1), a.dtype)], axis=-1)
  index = np.full((m, m), m + 1)
  index[0] = np.arange(m)
  index[np.arange(1, m), np.arange(m - 1)] = m
  return _gather(vals, index)


def fiedler(a) -> Array:
  """The symmetric matrix |a[i] - a[j]|, as jax.scipy.linalg.fiedler.

  >>> tracegrad.scipy.linalg.fiedler(tnp.array([1, 4, 2]))
  Array([[0, 3, 1],
         [3, 0, 2],
         [1, 2, 0]], dtype=int32)
  """
  a = tnp.atleast_1d(tnp.asarray(a))
  return tnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a) -> Array:
  """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients a (highest degree first): its
  eigenvalues are the polynomial's roots, as jax.scipy.linalg.fiedler_companion.

  >>> tracegrad.scipy.linalg.fiedler_companion(tnp.array([1.0, -3.0, 2.0]))
  Array([[ 3., -2.],
         [ 1.,  0.]], dtype=float32)
  """
  (a,) = _inexact(tnp.atleast_1d(tnp.asarray(a)))
  if a.shape[-1] == 0: raise ValueError(f"fiedler_companion: a must not be empty along its last axis, got {a.shape}")
  n = a.shape[-1] - 1
  if n == 0: return tnp.zeros((*a.shape[:-1], 0, 0), a.dtype)
  a = a / a[..., :1]
  one, zero = n + 1, n + 2   # the positions of 1 and 0 in vals, after -a[0..n]
  vals = tnp.concatenate([-a, tnp.ones((*a.shape[:-1], 1), a.dtype), tnp.zeros((*a.shape[:-1], 1), a.dtype)], axis=-1)
  index = np.full((n, n), zero)
  index[0, 0] = 1
  if n > 1: index[1, 0] = one
  for i in range(0, n, 2):   # even rows: -a on the superdiagonal and the subdiagonal, 1 two places right
    if i + 1 < n: index[i, i + 1] = min(i + 2, n)
    if i + 2 < n: index[i, i + 2] = one
    if i >= 2: index[i, i - 1] = min(i + 1, n)
  for i in range(3, n, 2): index[i, i - 2] = one   # odd rows: 1 two places left
  return _gather(vals, index)


def convolution_matrix(a, n: int, mode: str = "full") -> Array:
  """The matrix A with A @ v = numpy.convolve(a, v, mode) for v of length n, as jax.scipy.linalg.convolution_matrix;
  mode 'full' (m + n - 1 rows), 'same' (max(m, n)) or 'valid' (max(m, n) - min(m, n) + 1).

  >>> tracegrad.scipy.linalg.convolution_matrix(tnp.array([1, 2]), 2)
  Array([[1, 0],
         [2, 1],
         [0, 2]], dtype=int32)
  """
  n = operator.index(n)
  if n <= 0: raise ValueError(f"convolution_matrix: n must be a positive integer, got {n}")
  if mode not in ("full", "same", "valid"):
    raise ValueError(f"convolution_matrix: mode must be 'full', 'same' or 'valid', got {mode!r}")
  a = tnp.asarray(a)
  if a.ndim == 0: raise ValueError("convolution_matrix: a must have at least 1 axis, got a scalar")
  m = a.shape[-1]
  if m < 1: raise ValueError(f"convolution_matrix: a must not be empty along its last axis, got shape {a.shape}")
  trim = {"full": (0, 0), "same": ((min(m, n) - 1) // 2, min(m, n) - 1 - (min(m, n) - 1) // 2),
          "valid": (min(m, n) - 1, min(m, n) - 1)}[mode]
  rows = np.arange(trim[0], m + n - 1 - trim[1])[:, None] - np.arange(n)   # the index into a, where in range
  index = np.where((rows >= 0) & (rows < m), rows, m)
  return _gather(tnp.concatenate([a, tnp.zeros((*a.shape[:-1], 1), a.dtype)], axis=-1), index)


# ---- matrices of a size alone ----

def _const(values, dtype=None) -> Array:
  """A square matrix of Python numbers (exact integers, possibly huge) as an array of the default float dtype (or
  dtype), ±inf past its range."""
  def f(v):
    try:
      return float(v)
    except OverflowError:
      return math.copysign(math.inf, v)
  n = len(values)
  return tnp.asarray(np.array([[f(v) for v in row] for row in values], np.float64).reshape(n, n),
                     dtype=dtype or dtypes.default_float())


def hilbert(n: int) -> Array:
  """The Hilbert matrix 1 / (i + j + 1), as jax.scipy.linalg.hilbert.

  >>> tracegrad.scipy.linalg.hilbert(2)
  Array([[1.        , 0.5       ],
         [0.5       , 0.33333334]], dtype=float32)
  """
  i = np.arange(n)
  return tnp.asarray(1.0 / (i[:, None] + i + 1.0), dtype=dtypes.default_float())


def invhilbert(n: int) -> Array:
  """The inverse of the Hilbert matrix of size n, from its exact integer entries, as jax.scipy.linalg.invhilbert.

  >>> tracegrad.scipy.linalg.invhilbert(2)
  Array([[ 4., -6.],
         [-6., 12.]], dtype=float32)
  """
  c = math.comb
  return _const([[(-1) ** (i + j) * (i + j + 1) * c(n + i, n - j - 1) * c(n + j, n - i - 1) * c(i + j, i) ** 2
                  for j in range(n)] for i in range(n)])


def _pascal_kind(fn: str, kind):
  kind = "symmetric" if kind is None else kind
  if kind not in ("symmetric", "lower", "upper"):
    raise ValueError(f"{fn}: kind must be 'symmetric', 'lower' or 'upper', got {kind!r}")
  return kind


def pascal(n: int, kind=None) -> Array:
  """Pascal's matrix of binomial coefficients: C(i + j, i) (kind 'symmetric', the default), C(i, j) ('lower') or its
  transpose ('upper'); float32 as in JAX.

  >>> tracegrad.scipy.linalg.pascal(3)
  Array([[1., 1., 1.],
         [1., 2., 3.],
         [1., 3., 6.]], dtype=float32)
  """
  kind = _pascal_kind("pascal", kind)
  entry = {"symmetric": lambda i, j: math.comb(i + j, i), "lower": math.comb, "upper": lambda i, j: math.comb(j, i)}
  return _const([[entry[kind](i, j) for j in range(n)] for i in range(n)], dtypes.float32)


def invpascal(n: int, kind=None) -> Array:
  """The inverse of pascal(n, kind), as jax.scipy.linalg.invpascal.

  >>> tracegrad.scipy.linalg.invpascal(3, kind="lower")
  Array([[ 1.,  0.,  0.],
         [-1.,  1.,  0.],
         [ 1., -2.,  1.]], dtype=float32)
  """
  kind = _pascal_kind("invpascal", kind)
  low = [[math.comb(i, j) * (-1) ** ((i - j) % 2) for j in range(n)] for i in range(n)]
  if kind == "symmetric":   # (L lᵀ)⁻¹ = L⁻ᵀ L⁻¹, in exact integers
    low = [[sum(low[k][i] * low[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
  elif kind == "upper":
    low = [list(col) for col in zip(*low)]
  return _const(low)


def helmert(n: int, full: bool = False) -> Array:
  """The Helmert matrix: n - 1 orthonormal rows orthogonal to the ones vector (its normalized first row on top with
  full), as jax.scipy.linalg.helmert.

  >>> tracegrad.scipy.linalg.helmert(2, full=True)
  Array([[ 0.70710677,  0.70710677],
         [ 0.70710677, -0.70710677]], dtype=float32)
  """
  if n < 1: raise ValueError(f"helmert: n must be a positive integer, got {n}")
  k = np.arange(1, n, dtype=np.float64)[:, None]
  j = np.arange(n)
  h = np.where(j < k, 1.0, np.where(j == k, -k, 0.0)) / np.sqrt(k * (k + 1))
  if full: h = np.concatenate([np.full((1, n), 1 / math.sqrt(n)), h])
  return tnp.asarray(h, dtype=dtypes.default_float())


def hadamard(n: int, dtype=int) -> Array:
  """The Hadamard matrix of size n (a power of 2), entries ±1, by Sylvester's construction, as
  jax.scipy.linalg.hadamard.

  >>> tracegrad.scipy.linalg.hadamard(2)
  Array([[ 1,  1],
         [ 1, -1]], dtype=int32)
  """
  if n < 1 or n & (n - 1): raise ValueError(f"hadamard: n must be a positive power of 2, got {n}")
  h = np.ones((1, 1))
  while h.shape[0] < n: h = np.block([[h, h], [h, -h]])
  return tnp.asarray(h).astype(dtype)


def dft(n: int, scale: str | None = None) -> Array:
  """The discrete Fourier transform matrix m[j, k] = exp(-2 pi i jk / n) (divided by sqrt(n) or n with scale 'sqrtn'
  or 'n'), so that m @ x is fft(x), as jax.scipy.linalg.dft.

  >>> tracegrad.scipy.linalg.dft(2)
  Array([[ 1.+0.j,  1.+0.j],
         [ 1.+0.j, -1.+0.j]], dtype=complex64)
  """
  n = operator.index(n)
  if n < 0: raise ValueError(f"dft: n must be non-negative, got {n}")
  if scale not in (None, "sqrtn", "n"): raise ValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}")
  jk = np.outer(np.arange(n), np.arange(n)) % max(n, 1)   # reduced first: exact angles for large n
  m = np.exp(-2j * np.pi * jk / max(n, 1))
  m.real[np.abs(m.real) < 1e-15], m.imag[np.abs(m.imag) < 1e-15] = 0.0, 0.0   # exact at multiples of pi / 2
  if scale: m = m / (math.sqrt(n) if scale == "sqrtn" else n)
  return tnp.asarray(m)
