"""Polynomials as coefficient arrays, highest power first (along the first axis): poly, polyadd, polysub, polymul,
polydiv, polyder, polyint, polyval, polyfit (least squares on linalg.lstsq) and roots (the eigenvalues of the
companion matrix)."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ..array import Array, to_array
from ..errors import ConcretizationTypeError
from ..lax import scan
from ._support import inexact, static_int
from .core import promote
from ..ir import dtypes
from .creation import eye, full, ones, zeros
from .elementwise import negative, sqrt, true_divide
from .linalg_decomp import eigvals, inv
from .linalg_lstsq import lstsq
from .misc import convolve, trim_zeros, vander
from .shape import atleast_1d, broadcast_shapes, concatenate

__all__ = ["poly", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint", "polyval", "polyfit", "roots"]


def _order(m, fn: str) -> int:
  if isinstance(m, Array) and m.is_traced:
    raise ConcretizationTypeError(f"{fn}: m must be a concrete integer, got a traced value")
  return static_int(m, fn, "m")


def _coefficients(fn: str, error: type, **arrays: Array) -> None:
  """Each argument must have an axis of coefficients; a scalar raises `error` (the type jax.numpy raises there)."""
  for name, x in arrays.items():
    if x.ndim == 0:
      raise error(f"{fn}: {name} must be an array of coefficients (at least one-dimensional), got a scalar; wrap "
                  f"it as [{name}]")


def poly(seq_of_zeros) -> Array:
  """The coefficients of the monic polynomial with the given roots.

  >>> tnp.poly(tnp.array([1.0, 2.0]))
  Array([ 1., -3.,  2.], dtype=float32)
  """
  z, = inexact("poly", seq_of_zeros)
  z = atleast_1d(z)
  if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0]:
    return poly(eigvals(z))   # the characteristic polynomial, complex as JAX's (numpy's is real for a real matrix)
  if z.ndim != 1:
    raise ValueError(f"poly: seq_of_zeros must be a 1-d array or a non-empty square 2-d array, got shape {z.shape}")
  if z.shape[0] == 0: return ones((), z.dtype)
  a, zero = ones((1,), z.dtype), zeros((1,), z.dtype)
  for k in range(z.shape[0]):
    a = concatenate([a, zero]) - z[k] * concatenate([zero, a])
  return a


def _add(fn: str, a1: Array, a2: Array) -> Array:
  long, short = (a1, a2) if a2.shape[0] <= a1.shape[0] else (a2, a1)
  n, k = long.shape[0], short.shape[0]
  if k == 0 and n:
    raise ValueError(f"{fn}: an empty polynomial (shape {short.shape}) cannot be added to one of shape {long.shape}")
  return concatenate([long[:n - k], long[n - k:] + short]) if k else long + short


def _numbers(fn: str, a1, a2) -> tuple[Array, Array]:
  (x, y), dt, _ = promote(fn, a1, a2)
  _coefficients(fn, IndexError, a1=x, a2=y)
  if dt.is_bool: raise TypeError(f"{fn}: a1 and a2 must be numbers, got bool arrays; cast them to an integer type")
  return x, y


def polyadd(a1, a2) -> Array:
  """The sum of two polynomials (the shorter one aligned with the longer one's end).

  >>> tnp.polyadd(tnp.array([1, 2]), tnp.array([1, 0, 0]))
  Array([1, 1, 2], dtype=int32)
  """
  return _add("polyadd", *_numbers("polyadd", a1, a2))


def polysub(a1, a2) -> Array:
  """The difference a1 - a2 of two polynomials.

  >>> tnp.polysub(tnp.array([3.0, 2.0]), tnp.array([1.0, 1.0, 1.0]))
  Array([-1.,  2.,  1.], dtype=float32)
  """
  x, y = _numbers("polysub", a1, a2)
  return _add("polysub", x, negative(y))


def polymul(a1, a2, *, trim_leading_zeros: bool = False) -> Array:
  """The product of two polynomials (leading zeros dropped first with trim_leading_zeros, on concrete inputs).

  >>> tnp.polymul(tnp.array([1.0, 1.0]), tnp.array([1.0, -1.0]))
  Array([ 1.,  0., -1.], dtype=float32)
  """
  x, y = inexact("polymul", a1, a2)
  if trim_leading_zeros and (x.size > 1 or y.size > 1):
    if x.is_traced or y.is_traced:
      raise ConcretizationTypeError("polymul: trim_leading_zeros=True needs concrete a1 and a2 (the result's length "
                                    "depends on their values); pass trim_leading_zeros=False under a transform")
    x, y = trim_zeros(x, trim="f"), trim_zeros(y, trim="f")
  _coefficients("polymul", TypeError, a1=x, a2=y)
  if x.shape[0] == 0: x = zeros(1, y.dtype)
  if y.shape[0] == 0: y = zeros(1, x.dtype)
  return convolve(x, y, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False) -> tuple[Array, Array]:
  """The quotient and remainder of u / v (the remainder's near-zero leading terms dropped with trim_leading_zeros,
  on concrete inputs).

  >>> tnp.polydiv(tnp.array([1.0, 3.0, 2.0]), tnp.array([1.0, 1.0]))
  (Array([1., 2.], dtype=float32), Array([0., 0., 0.], dtype=float32))
  """
  num, den = inexact("polydiv", u, v)
  _coefficients("polydiv", TypeError, u=num, v=den)
  m, n = num.shape[0] - 1, den.shape[0] - 1
  scale = 1.0 / den[0]
  q = zeros(max(m - n + 1, 1), num.dtype)
  for k in range(m - n + 1):
    d = scale * num[k]
    q = q.at[k].set(d)
    num = num.at[k:k + n + 1].add(-d * den)
  if trim_leading_zeros:
    if num.is_traced:
      raise ConcretizationTypeError("polydiv: trim_leading_zeros=True needs concrete u and v (the remainder's length "
                                    "depends on its values); pass trim_leading_zeros=False under a transform")
    small = np.abs(np.asarray(num).astype(np.float64)) < math.sqrt(float(ml_dtypes.finfo(num.dtype.np).eps))
    num = num[int(np.argmin(small)):] if not small.all() else zeros(0, num.dtype)
  return q, num


def polyder(p, m: int = 1) -> Array:
  """The m-th derivative of a polynomial.

  >>> tnp.polyder(tnp.array([1.0, 1.0, 1.0, 1.0]), 2)
  Array([6., 2.], dtype=float32)
  """
  m = _order(m, "polyder")
  x, = inexact("polyder", p)
  _coefficients("polyder", TypeError, p=x)
  if m < 0: raise ValueError(f"polyder: the order of the derivative m must be non-negative, got {m}")
  if m == 0: return x
  if x.shape[0] <= m: return x[:0]
  powers = np.arange(m, x.shape[0], dtype=np.float64)
  coeff = np.prod([powers - j for j in range(m)], axis=0)   # i (i-1) ... (i-m+1) for the power i
  return x[:-m] * to_array(coeff[::-1].astype(x.dtype.np), fn="polyder")


def polyint(p, m: int = 1, k=None) -> Array:
  """The m-th antiderivative of a polynomial, with integration constants k (a scalar or m values, highest first).

  >>> tnp.polyint(tnp.array([3.0, 2.0, 1.0]), k=5.0)
  Array([1., 1., 1., 5.], dtype=float32)
  """
  m = _order(m, "polyint")
  x, kk = inexact("polyint", p, 0 if k is None else k)
  _coefficients("polyint", TypeError, p=x)
  if m < 0: raise ValueError(f"polyint: the order of the integral m must be non-negative, got {m}")
  kk = atleast_1d(kk)
  if kk.shape == (1,): kk = full((m,), kk[0], kk.dtype)
  if kk.shape != (m,):
    raise ValueError(f"polyint: k must be a scalar or a 1-d array of length 1 or m={m}, got shape {kk.shape}")
  if m == 0: return x
  if x.ndim != 1: raise TypeError(f"polyint: p must be one-dimensional (with m > 0), got shape {x.shape}")
  # the coefficient of x**P is divided by P (P-1) ... (P-m+1), factors below 1 counting as 1
  grid = np.maximum(1, np.arange(x.shape[0] + m)[None] - np.arange(m)[:, None]).astype(np.float64)
  coeff = grid.prod(0)[::-1].astype(x.dtype.np)
  return true_divide(concatenate([x, kk]), to_array(coeff, fn="polyint"))


UNROLLED = 64   # polyval's Horner steps in one kernel at least (when p has that many): each chunk is a pass over x


def polyval(p, x, *, unroll: int = 16) -> Array:
  """The polynomial p evaluated at x by Horner's rule (p's first axis holds its coefficients; the rest broadcast
  with x): a scan over p in chunks of at least unroll and up to UNROLLED coefficients (True: all of them), each
  chunk's steps one kernel.

  >>> tnp.polyval(tnp.array([1.0, 0.0, -1.0]), tnp.array([2.0, 3.0]))
  Array([3., 8.], dtype=float32)
  """
  (c, xa), _, _ = promote("polyval", p, x)
  _coefficients("polyval", IndexError, p=c)
  try:
    shape = broadcast_shapes(c.shape[1:], xa.shape)
  except ValueError:
    raise ValueError(f"polyval: p's shape {c.shape} past its first axis does not broadcast with x's shape "
                     f"{xa.shape}") from None
  n = c.shape[0]
  if not isinstance(unroll, bool) and static_int(unroll, "polyval", "unroll") < 1:
    raise ValueError(f"polyval: unroll must be a positive int or a bool, got {unroll}")
  k = n if unroll is True else max(int(unroll), min(n, UNROLLED))
  # leading zero coefficients keep y at zero, so the chunks can all be k long
  c = concatenate([zeros(((-n) % k, *c.shape[1:]), c.dtype), c]).reshape((-1, k, *c.shape[1:]))

  def steps(y, cs):
    for j in range(k): y = y * xa + cs[j]
    return y, None
  y0 = zeros(shape, xa.dtype)
  return steps(y0, c[0])[0] if c.shape[0] == 1 else scan(steps, y0, c)[0]


def polyfit(x, y, deg: int, rcond: float | None = None, full: bool = False, w=None, cov=False):
  """The coefficients (highest power first) of the polynomial of degree deg that fits y at x in least squares, each
  point weighted by w; y may hold several data sets as columns. full=True returns (coefficients, residuals, rank,
  singular values, rcond) of the scaled Vandermonde system; cov=True returns (coefficients, covariance), the
  covariance scaled by the residuals over len(x) - deg - 1 unless cov='unscaled'.

  >>> tnp.round(tnp.polyfit(tnp.array([0.0, 1.0, 2.0, 3.0]), tnp.array([3.0, 6.0, 11.0, 18.0]), 2), 3)
  Array([1., 2., 3.], dtype=float32)
  """
  if isinstance(deg, Array) and deg.is_traced:
    raise ConcretizationTypeError("polyfit: deg must be a concrete integer, got a traced value")
  deg = int(deg)
  if deg < 0: raise ValueError(f"polyfit: deg must be >= 0, got {deg}")
  xa, = inexact("polyfit", x)
  ya, = inexact("polyfit", y)
  if xa.ndim != 1 or xa.shape[0] == 0:
    raise TypeError(f"polyfit: x must be a non-empty 1-d array, got shape {xa.shape}")
  if ya.ndim not in (1, 2): raise TypeError(f"polyfit: y must be a 1-d or 2-d array, got shape {ya.shape}")
  if ya.shape[0] != xa.shape[0]:
    raise TypeError(f"polyfit: x and y must have the same length, got shapes {xa.shape} and {ya.shape}")
  n, order = xa.shape[0], deg + 1
  if rcond is None: rcond = n * float(ml_dtypes.finfo(xa.dtype.np).eps)
  elif isinstance(rcond, Array) and rcond.is_traced:
    raise ConcretizationTypeError("polyfit: rcond must be a concrete number, got a traced value")
  rcond = float(rcond)
  lhs, rhs = vander(xa, order), ya
  if w is not None:
    wa, = inexact("polyfit", w)
    if wa.ndim != 1 or wa.shape[0] != n:
      raise TypeError(f"polyfit: w must be a 1-d array as long as x ({n}), got shape {wa.shape}")
    lhs, rhs = lhs * wa[:, None], rhs * (wa[:, None] if rhs.ndim == 2 else wa)
  scale = sqrt((lhs * lhs).sum(0))
  lhs = lhs / scale
  c, resids, rank, s = lstsq(lhs, rhs, rcond)
  c = (c.T / scale).T
  if full: return c, resids, rank, s, to_array(rcond, fn="polyfit")
  if not cov: return c
  vbase = inv(lhs.T @ lhs) / (scale[:, None] * scale[None, :])
  if isinstance(cov, str) and cov == "unscaled": fac = to_array(1.0, fn="polyfit")
  else:
    if n <= order:
      raise ValueError(f"polyfit: scaling the covariance needs more data points ({n}) than coefficients ({order}); "
                       f"pass cov='unscaled'")
    fac = resids / (n - order)
  if ya.ndim == 1: return c, vbase * atleast_1d(fac)[None]
  return c, vbase[:, :, None] * atleast_1d(fac)[None, None, :]


def roots(p, *, strip_zeros: bool = True) -> Array:
  """The complex roots of the polynomial with coefficients p (highest power first), as the eigenvalues of its
  companion matrix, as jnp.roots. strip_zeros drops leading zeros (and gives a zero root per trailing zero), which
  needs p's values, so under jit pass strip_zeros=False (a leading zero then gives nan roots).

  >>> tnp.roots(tnp.array([1.0, -3.0, 2.0]))
  Array([2.+0.j, 1.+0.j], dtype=complex64)
  """
  p, = inexact("roots", p)
  if p.ndim != 1: raise ValueError(f"roots: p must be a 1-d array of coefficients, got shape {p.shape}")
  zero_roots = 0
  if strip_zeros:
    if p.is_traced:
      raise ConcretizationTypeError("roots: strip_zeros=True needs p's values; under jit pass strip_zeros=False")
    nz = np.flatnonzero(np.asarray(p))
    if nz.size == 0: return zeros((0,), dtypes.complex_of(p.dtype))
    zero_roots = p.shape[0] - 1 - int(nz[-1])
    p = p[int(nz[0]):int(nz[-1]) + 1]
  n = p.shape[0] - 1
  found = zeros((0,), dtypes.complex_of(p.dtype))
  if n >= 1:
    first = (-p[1:] / p[0])[None]
    found = eigvals(concatenate([first, eye(n - 1, n, dtype=p.dtype)]) if n > 1 else first)
  return concatenate([found, zeros((zero_roots,), found.dtype)])
