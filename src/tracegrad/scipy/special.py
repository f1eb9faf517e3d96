"""Special functions, as jax.scipy.special.

>>> tracegrad.scipy.special.erf(tnp.asarray([0.0, 1.0]))
Array([0.       , 0.84270...], dtype=float32)
"""
from __future__ import annotations


import math

from .. import numpy as tnp
from .. import lax
from ..transforms import custom_jvp
from ..array import Array
from ..ir import dtypes
from ..trace import composite

__all__ = ["erf", "erfc", "logsumexp", "gammaln", "betaln", "xlogy", "xlog1py", "ndtr", "log_ndtr", "ndtri",
           "gammainc", "gammaincc", "betainc"]

_h = float.fromhex
# erf(x) = x p(x^2) on [0, 1]; 1 - exp(-x^2) q(x) / r(x) on [1, 4]; 1 beyond. Fits within 1.3e-9 and 7e-11
# (relative) in exact arithmetic, within 2.6 ulp evaluated in float32.
_SMALL = tuple(map(_h, ("0x1.496b80p-14", "-0x1.a3f78ap-11", "0x1.5405c8p-8", "-0x1.b7f910p-6", "0x1.ce2cf8p-4",
                        "-0x1.81273ep-2", "0x1.20dd74p+0")))
_NUM = tuple(map(_h, ("0x1.86c93cp-19", "0x1.80336ap-4", "0x1.d6f952p-2", "0x1.fc7e4cp-1", "0x1.fff344p-1")))
_DEN = tuple(map(_h, ("0x1.54c496p-3", "0x1.a08cccp-1", "0x1.dafed4p+0", "0x1.0f7740p+1", "0x1p0")))


def _horner(coeffs, z):
  p = tnp.zeros_like(z) + coeffs[0]
  for c in coeffs[1:]: p = p * z + c
  return p


def erf(x) -> Array:
  """The error function, as jax.scipy.special.erf (see _erf); its derivative is 2 / sqrt(pi) * exp(-x^2) exactly."""
  return composite("erf", _erf_of, tnp.asarray(x))


def _erf_of(x):
  return _erf_smooth(x if x.dtype.is_float else x.astype(tnp.float32))


@custom_jvp
def _erf_smooth(x):
  return _erf(x)


@_erf_smooth.defjvp
def _erf_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return _erf(x), (2 / math.sqrt(math.pi)) * tnp.exp(-(x * x)) * t


def _erf(x, exp=tnp.exp) -> Array:
  """The error function, 2 / sqrt(pi) * integral of exp(-t^2) from 0 to x: within 3 ulp for float32 (half types
  compute in float32), within 2e-15 relative for float64 (see _erf64). `exp` computes e^x (tracegrad.random passes
  one that rounds alike on every device)."""
  x = tnp.asarray(x)
  d = x.dtype if x.dtype.is_float else dtypes.float32
  if d is dtypes.float64: return _erf64(x, exp)
  a = tnp.abs(x.astype(tnp.float32))
  small = a * _horner(_SMALL, a * a)
  big = 1.0 - exp(-(a * a)) * (_horner(_NUM, a) / _horner(_DEN, a))
  r = tnp.where(a < 1.0, small, tnp.where(a < 4.0, big, 1.0))
  return tnp.where(tnp.isnan(a), a, tnp.copysign(r, x.astype(tnp.float32))).astype(d)


def _erf64(x: Array, exp=tnp.exp) -> Array:
  """Below |x| = 2 the series 2 / sqrt(pi) * exp(-x^2) * sum_n (2x^2)^n x / (1 * 3 * ... * (2n + 1)), whose terms
  share x's sign and so cancel nothing (45 terms); above, 1 - erfc(x) with erfc's continued fraction
  exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + (2/2) / (x + ...))) taken 50 deep; from 6 on, +-1 to the last bit."""
  a = tnp.minimum(tnp.abs(x), 6.0)
  s = tnp.minimum(a, 2.0)
  z, term, total = 2 * s * s, s, s
  for n in range(1, 45):
    term = term * z / (2 * n + 1)
    total = total + term
  series = (2 / math.sqrt(math.pi)) * exp(-(s * s)) * total
  c = tnp.maximum(a, 2.0)
  f = c
  for k in range(50, 0, -1): f = c + (k / 2) / f
  tail = 1.0 - exp(-(c * c)) / (math.sqrt(math.pi) * f)
  r = tnp.where(a < 2.0, series, tail)
  return tnp.where(tnp.isnan(x), x, tnp.copysign(r, x))


def _inexact(x: Array) -> Array:
  return x if x.dtype.is_float else x.astype(tnp.float32)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False, where=None):
  """log(sum(b * exp(a))) along axis without overflow, as jax.scipy.special.logsumexp (and jax.nn.logsumexp): b
  scales each term, `where` keeps only some; with return_sign=True, (log|sum|, sign(sum)), else NaN for a negative
  sum.

  >>> tracegrad.scipy.special.logsumexp(tnp.asarray([0.0, 0.0]), b=tnp.asarray([2.0, -1.0]))
  Array(0., dtype=float32)
  """
  axis = tuple(axis) if isinstance(axis, list) else axis
  args = [tnp.asarray(a)] + [tnp.asarray(v) for v in (b, where) if v is not None]
  return composite("logsumexp", _logsumexp, *args, axis=axis, keepdims=keepdims, return_sign=return_sign,
                   given=(b is not None, where is not None))


def _logsumexp(x, *rest, axis, keepdims, return_sign, given):
  it = iter(rest)
  b = next(it) if given[0] else None
  where = next(it) if given[1] else None
  x = _inexact(x)
  if b is not None:
    b = _inexact(b)
    x, b = tnp.broadcast_arrays(*(v.astype(tnp.result_type(x, b)) for v in (x, b)))
    x = tnp.where(b != 0, x, -tnp.inf)
  if where is not None: x = tnp.where(where, x, -tnp.inf)
  m = lax.stop_gradient(tnp.max(x, axis=axis, keepdims=True))   # the shift's derivative cancels: none computed
  m = tnp.where(tnp.isfinite(m), m, 0)
  e = tnp.exp(x - m)
  if b is not None: e = e * b
  total = tnp.sum(e, axis=axis, keepdims=True)
  out = tnp.log(tnp.abs(total)) + m
  sign = tnp.sign(total)
  if not keepdims: out, sign = tnp.squeeze(out, axis=axis), tnp.squeeze(sign, axis=axis)
  if return_sign: return out, sign
  return out if b is None else tnp.where(sign < 0, tnp.nan, out)


def _float(*xs) -> list[Array]:
  """The arguments as arrays of one floating dtype (float32 for integers), as JAX promotes to inexact types."""
  d = tnp.result_type(*xs)
  d = d if d.is_float else tnp.float32
  return [tnp.asarray(x).astype(d) for x in xs]


def _erfc_fraction(a: Array, depth: int) -> Array:
  """f with erfc(a) = exp(-a^2) / (sqrt(pi) f) for a >= 2: the continued fraction a + (1/2) / (a + (2/2) / ...)."""
  f = a
  for k in range(depth, 0, -1): f = a + (k / 2) / f
  return f


def _erfc_pos(a: Array) -> Array:
  """erfc(a) for a >= 0, accurate relative to itself in the tail (where 1 - erf(a) would round to 0)."""
  if a.dtype is dtypes.float64:
    near = tnp.minimum(a, 2.0)
    far = tnp.maximum(a, 2.0)
    far_r = tnp.exp(-(far * far)) / (math.sqrt(math.pi) * _erfc_fraction(far, 50))
    return tnp.where(a < 2.0, 1.0 - _erf64(near), far_r)
  near, mid, far = tnp.minimum(a, 1.0), tnp.clip(a, 1.0, 4.0), tnp.maximum(a, 4.0)
  mid_r = tnp.exp(-(mid * mid)) * (_horner(_NUM, mid) / _horner(_DEN, mid))
  far_r = tnp.exp(-(far * far)) / (math.sqrt(math.pi) * _erfc_fraction(far, 20))
  return tnp.where(a < 1.0, 1.0 - _erf(near), tnp.where(a < 4.0, mid_r, far_r))


def erfc(x) -> Array:
  """1 - erf(x), as jax.scipy.special.erfc, without losing the tail to rounding.

  >>> float(tracegrad.scipy.special.erfc(tnp.asarray(5.0))) > 0
  True
  """
  (x,) = _float(x)
  r = _erfc_pos(tnp.abs(x))
  return tnp.where(x < 0, 2.0 - r, r)


def ndtr(x) -> Array:
  """The standard normal CDF, as jax.scipy.special.ndtr.

  >>> tracegrad.scipy.special.ndtr(tnp.asarray([0.0]))
  Array([0.5], dtype=float32)
  """
  (x,) = _float(x)
  return 0.5 * erfc(-x / math.sqrt(2))


def log_ndtr(x) -> Array:
  """log(ndtr(x)), as jax.scipy.special.log_ndtr, finite far into the lower tail.

  >>> round(float(tracegrad.scipy.special.log_ndtr(tnp.asarray(-20.0))), 2)
  -203.92
  """
  (x,) = _float(x)
  z = -x / math.sqrt(2)
  near, far = tnp.clip(z, 0.0, 5.0), tnp.maximum(z, 5.0)
  log_lower = math.log(0.5) + tnp.where(z < 5.0, tnp.log(_erfc_pos(near)),
                                         -(far * far) - tnp.log(math.sqrt(math.pi) * _erfc_fraction(far, 20)))
  upper = tnp.log1p(-0.5 * _erfc_pos(tnp.maximum(-z, 0.0)))
  return tnp.where(z > 0, log_lower, upper)


_ACKLAM_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
             -3.066479806614716e+01, 2.506628277459239e+00)
_ACKLAM_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
             -1.328068155288572e+01, 1.0)
_ACKLAM_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
             4.374664141464968e+00, 2.938163982698783e+00)
_ACKLAM_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00, 1.0)


def ndtri(p) -> Array:
  """The inverse of ndtr, as jax.scipy.special.ndtri: rational fits of relative error 1.2e-9 (Acklam's), refined by
  one Halley step for float64; -inf at 0, inf at 1, NaN outside [0, 1].

  >>> tracegrad.scipy.special.ndtri(tnp.asarray([0.5, 0.975])).round(3)
  Array([0.  , 1.96], dtype=float32)
  """
  (p,) = _float(p)
  low = 0.02425
  inner = tnp.clip(p, low, 1 - low) - 0.5
  r = inner * inner
  central = _horner(_ACKLAM_A, r) * inner / _horner(_ACKLAM_B, r)
  tail_p = tnp.clip(tnp.minimum(p, 1 - p), 1e-300 if p.dtype is dtypes.float64 else 1e-38, low)
  q = tnp.sqrt(-2 * tnp.log(tail_p))
  tail = _horner(_ACKLAM_C, q) / _horner(_ACKLAM_D, q)
  x = tnp.where(p < low, tail, tnp.where(p > 1 - low, -tail, central))
  if p.dtype is dtypes.float64:
    e = ndtr(x) - p
    u = e * math.sqrt(2 * math.pi) * tnp.exp(x * x / 2)
    x = x - u / (1 + x * u / 2)
  x = tnp.where(p == 0, -tnp.inf, tnp.where(p == 1, tnp.inf, x))
  return tnp.where((p < 0) | (p > 1) | tnp.isnan(p), tnp.nan, x)


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma_right(z: Array) -> Array:
  """log Gamma(z) for z >= 0.5 (Lanczos, g = 7)."""
  z = z - 1
  s = tnp.zeros_like(z) + _LANCZOS[0]
  for i, c in enumerate(_LANCZOS[1:], 1): s = s + c / (z + i)
  t = z + 7.5
  return 0.5 * math.log(2 * math.pi) + (z + 0.5) * tnp.log(t) - t + tnp.log(s)


def gammaln(x) -> Array:
  """log|Gamma(x)|, as jax.scipy.special.gammaln (inf at 0 and the negative integers).

  >>> tracegrad.scipy.special.gammaln(tnp.asarray([1.0, 5.0])).round(4)
  Array([0.    , 3.1781], dtype=float32)
  """
  (x,) = _float(x)
  right = _lgamma_right(tnp.maximum(x, 0.5))
  left_x = tnp.minimum(x, 0.5)
  reflected = math.log(math.pi) - tnp.log(tnp.abs(tnp.sin(math.pi * left_x))) - _lgamma_right(1 - left_x)
  return tnp.where(x >= 0.5, right, reflected)


def betaln(a, b) -> Array:
  """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b).

  >>> tracegrad.scipy.special.betaln(tnp.asarray(1.0), tnp.asarray(2.0)).round(4)
  Array(-0.6931, dtype=float32)
  """
  a, b = _float(a, b)
  return gammaln(a) + gammaln(b) - gammaln(a + b)


def xlogy(x, y) -> Array:
  """x * log(y), 0 where x is 0 (whatever y).

  >>> tracegrad.scipy.special.xlogy(tnp.asarray([0.0, 2.0]), tnp.asarray([0.0, 1.0]))
  Array([0., 0.], dtype=float32)
  """
  x, y = _float(x, y)
  zero = x == 0
  return tnp.where(zero, 0, x * tnp.log(tnp.where(zero, 1, y)))


def xlog1py(x, y) -> Array:
  """x * log1p(y), 0 where x is 0 (whatever y).

  >>> tracegrad.scipy.special.xlog1py(tnp.asarray([0.0]), tnp.asarray([-1.0]))
  Array([0.], dtype=float32)
  """
  x, y = _float(x, y)
  zero = x == 0
  return tnp.where(zero, 0, x * tnp.log1p(tnp.where(zero, 0, y)))


def _tiny(v: Array) -> Array:
  t = 1e-300 if v.dtype is dtypes.float64 else 1e-30
  return tnp.where(tnp.abs(v) < t, t, v)


def _gamma_parts(a, x) -> tuple[Array, Array]:
  """(P, Q), the regularized incomplete gamma functions: the series of P below x = a + 1, the continued fraction of
  Q (modified Lentz) above."""
  a, x = tnp.broadcast_arrays(*_float(a, x))
  series = x < a + 1
  xs, xc = tnp.minimum(x, a + 1), tnp.maximum(x, a + 1)
  total = term = 1 / a
  for n in range(1, 120):
    term = term * xs / (a + n)
    total = total + term
  p_series = total * tnp.exp(-xs + xlogy(a, xs) - gammaln(a))
  b = xc + 1 - a
  c, d = 1 / _tiny(tnp.zeros_like(b)), 1 / b
  h = d
  for i in range(1, 60):
    an = -i * (i - a)
    b = b + 2
    d = 1 / _tiny(an * d + b)
    c = _tiny(b + an / c)
    h = h * d * c
  q_frac = tnp.exp(-xc + xlogy(a, xc) - gammaln(a)) * h
  p = tnp.where(series, p_series, 1 - q_frac)
  q = tnp.where(series, 1 - p_series, q_frac)
  bad = (a <= 0) | (x < 0) | tnp.isnan(a) | tnp.isnan(x)
  return tnp.where(bad, tnp.nan, tnp.where(x == 0, 0, p)), tnp.where(bad, tnp.nan, tnp.where(x == 0, 1, q))


def gammainc(a, x) -> Array:
  """The regularized lower incomplete gamma function P(a, x), as jax.scipy.special.gammainc.

  >>> tracegrad.scipy.special.gammainc(tnp.asarray(1.0), tnp.asarray([0.0, 1.0])).round(4)
  Array([0.    , 0.6321], dtype=float32)
  """
  return _gamma_parts(a, x)[0]


def gammaincc(a, x) -> Array:
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), as jax.scipy.special.gammaincc.

  >>> tracegrad.scipy.special.gammaincc(tnp.asarray(1.0), tnp.asarray([1.0])).round(4)
  Array([0.3679], dtype=float32)
  """
  return _gamma_parts(a, x)[1]


def _beta_fraction(a: Array, b: Array, x: Array, depth: int = 80) -> Array:
  """The continued fraction of I_x(a, b) (modified Lentz), converging fast for x < (a + 1) / (a + b + 2)."""
  c = tnp.ones_like(x)
  d = 1 / _tiny(1 - (a + b) * x / (a + 1))
  h = d
  for m in range(1, depth):
    for aa in (m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
               -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))):
      d = 1 / _tiny(1 + aa * d)
      c = _tiny(1 + aa / c)
      h = h * d * c
  return h


def betainc(a, b, x) -> Array:
  """The regularized incomplete beta function I_x(a, b), as jax.scipy.special.betainc.

  >>> tracegrad.scipy.special.betainc(tnp.asarray(2.0), tnp.asarray(3.0), tnp.asarray([0.0, 0.5, 1.0])).round(4)
  Array([0.    , 0.6875, 1.    ], dtype=float32)
  """
  a, b, x = tnp.broadcast_arrays(*_float(a, b, x))
  swap = x > (a + 1) / (a + b + 2)
  p, q, y = tnp.where(swap, b, a), tnp.where(swap, a, b), tnp.where(swap, 1 - x, x)
  y_in = tnp.clip(y, 0, 1)
  front = tnp.exp(xlogy(p, y_in) + xlog1py(q, -y_in) - betaln(p, q))
  r = front * _beta_fraction(p, q, y_in) / p
  out = tnp.where(swap, 1 - r, r)
  bad = (a <= 0) | (b <= 0) | (x < 0) | (x > 1) | tnp.isnan(x)
  return tnp.where(bad, tnp.nan, out)
