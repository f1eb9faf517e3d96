"""Special functions of one float dtype written on UOps through `V` (a UOp with arithmetic operators): erf, erfc and
erfcx, erf_inv, lgamma and digamma (Lanczos, g = 7, with reflection), the Hurwitz zeta function (Euler-Maclaurin)
and the exponentially scaled Bessel functions i0e and i1e (power series near 0, the asymptotic series beyond).
lax/special.py gives them lax's signatures and derivatives.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ..ir import Ops, UOp, dtypes
from . import float_math as fm


class V:
  """A UOp with + - * / and comparisons; a Python number takes the UOp's dtype and shape.

  >>> V(UOp.const(dtypes.float32, 1.0)) + 2
  V(UOp(Ops.ADD, f32[], src=(2)))
  """
  __slots__ = ("u",)

  def __init__(self, u: UOp): self.u = u
  def __repr__(self) -> str: return f"V({self.u!r})"
  def _o(self, o): return o.u if isinstance(o, V) else fm.k(self.u, o)

  def _bin(op, flip=False):
    def f(self, o):
      if not isinstance(o, (V, int, float)): return NotImplemented
      a, b = self.u, self._o(o)
      return V(op(b, a) if flip else op(a, b))
    return f

  __add__, __radd__ = _bin(fm.add), _bin(fm.add, True)
  __sub__, __rsub__ = _bin(fm.sub), _bin(fm.sub, True)
  __mul__, __rmul__ = _bin(fm.mul), _bin(fm.mul, True)
  __truediv__, __rtruediv__ = _bin(fm.div), _bin(fm.div, True)
  __lt__, __gt__ = _bin(fm.lt), _bin(fm.gt)
  del _bin

  def __neg__(self): return V(-self.u)
  def __le__(self, o): return (self < o) | self.eq(o)
  def __ge__(self, o): return (self > o) | self.eq(o)
  def __and__(self, o): return V(self.u.alu(Ops.AND, o.u))
  def __or__(self, o): return V(self.u.alu(Ops.OR, o.u))
  def __invert__(self): return V(self.u.alu(Ops.XOR, UOp.const(dtypes.bool_, True, self.u.shape)))
  def eq(self, o): return V(fm.eq(self.u, self._o(o)))
  def ne(self, o): return V(fm.ne(self.u, self._o(o)))
  @property
  def dtype(self): return self.u.dtype


def where(cond: V, a, b) -> V:
  """a where cond holds, else b (at least one of them a V)."""
  return V(fm.sel(cond.u, a.u if isinstance(a, V) else a, b.u if isinstance(b, V) else b))


def exp(v: V) -> V: return V(fm.exp(v.u))
def log(v: V) -> V: return V(fm.log(v.u))
def log1p(v: V) -> V: return V(fm.log1p(v.u))
def sqrt(v: V) -> V: return V(fm.sqrt(v.u))
def floor(v: V) -> V: return V(fm.floor(v.u))
def fabs(v: V) -> V: return V(fm.fabs(v.u))
def sin(v: V) -> V: return V(v.u.alu(Ops.SIN))
def cos(v: V) -> V: return V(v.u.alu(Ops.COS))
def isnan(v: V) -> V: return v.ne(v)
def sign(v: V) -> V: return where(v < 0, -1.0, where(v > 0, v * 0 + 1.0, v * 0))
def copysign(a: V, b: V) -> V: return V(fm.copysign(a.u, b.u))
def minimum(a: V, b) -> V: return V(a.u.alu(Ops.MIN, a._o(b)))
def maximum(a: V, b) -> V: return V(a.u.alu(Ops.MAX, a._o(b)))
def clip(a: V, lo, hi) -> V: return minimum(maximum(a, lo), hi)
def pow_pos(a: V, b: V) -> V: return V(a.u.alu(Ops.POW, b.u))  # a >= 0
def is64(v: V) -> bool: return v.dtype is dtypes.float64


def horner(coeffs, z: V) -> V:
  p = z * 0 + coeffs[0]
  for c in coeffs[1:]: p = V(fm.mul_add(p.u, z.u, c))
  return p


def tiny(v: V) -> V:
  """v kept away from 0, for the divisions of a modified Lentz continued fraction."""
  t = 1e-300 if is64(v) else 1e-30
  return where(fabs(v) < t, t, v)


# ---- the error function ----
_h = float.fromhex
# erf(x) = x p(x^2) on [0, 1]; 1 - exp(-x^2) q(x) / r(x) on [1, 4]: relative fits within 1.3e-9 and 7e-11 in exact
# arithmetic, within 2.6 ulp evaluated in float32.
_ERF_SMALL = tuple(map(_h, ("0x1.496b80p-14", "-0x1.a3f78ap-11", "0x1.5405c8p-8", "-0x1.b7f910p-6", "0x1.ce2cf8p-4",
                            "-0x1.81273ep-2", "0x1.20dd74p+0")))
_ERFC_NUM = tuple(map(_h, ("0x1.86c93cp-19", "0x1.80336ap-4", "0x1.d6f952p-2", "0x1.fc7e4cp-1", "0x1.fff344p-1")))
_ERFC_DEN = tuple(map(_h, ("0x1.54c496p-3", "0x1.a08cccp-1", "0x1.dafed4p+0", "0x1.0f7740p+1", "0x1p0")))
RSQRT_PI = 1 / math.sqrt(math.pi)
# erfc(x) = exp(-x^2) P(x) / Q(x) on [0.46875, 4] to about 1e-16 relative (float64): W. J. Cody's rational
# Chebyshev approximation (Math. Comp. 23, 1969), highest degree first
_ERFC64_NUM = (2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594, 6.61191906371416295e1,
               2.98635138197400131e2, 8.81952221241769090e2, 1.71204761263407058e3, 2.05107837782607147e3,
               1.23033935479799725e3)
_ERFC64_DEN = (1.0, 1.57449261107098347e1, 1.17693950891312499e2, 5.37181101862009858e2, 1.62138957456669019e3,
               3.29079923573345963e3, 4.36261909014324716e3, 3.43936767414372164e3, 1.23033935480374942e3)


def erfc_fraction(a: V, depth: int) -> V:
  """f with erfc(a) = exp(-a^2) / (sqrt(pi) f) for a >= 2: the continued fraction a + (1/2) / (a + (2/2) / ...)."""
  f = a
  for n in range(depth, 0, -1): f = a + (n / 2) / f
  return f


def erf(x: V, ex=exp) -> V:
  """Within 3 ulp for float32; float64 within 2e-15 relative: below |x| = 2 the series 2 / sqrt(pi) exp(-x^2)
  sum_n (2x^2)^n x / (1 * 3 * ... * (2n + 1)) (terms of one sign, 45 of them), above 1 - erfc by its continued
  fraction (50 deep). `ex` computes e^x."""
  if is64(x):
    a = minimum(fabs(x), 6.0)
    s = minimum(a, 2.0)
    z, term, total = 2 * s * s, s, s
    for n in range(1, 45):
      term = term * z / (2 * n + 1)
      total = total + term
    series = (2 * RSQRT_PI) * ex(-(s * s)) * total
    far = maximum(a, 2.0)
    r = where(a < 2.0, series, 1.0 - ex(-(far * far)) * RSQRT_PI / erfc_fraction(far, 50))
  else:
    a = fabs(x)
    small = a * horner(_ERF_SMALL, a * a)
    mid = 1.0 - ex(-(a * a)) * (horner(_ERFC_NUM, a) / horner(_ERFC_DEN, a))
    r = where(a < 1.0, small, where(a < 4.0, mid, 1.0))
  return where(isnan(x), x, copysign(r, x))


def erfcx_pos(a: V) -> V:
  """exp(a^2) erfc(a) for a >= 2 (float64) or a >= 4 (float32), where erfc's own value would underflow."""
  return RSQRT_PI / erfc_fraction(a, 50 if is64(a) else 20)


def exp_neg_sq(a: V) -> V:
  """exp(-a^2) for a >= 0, with a^2 split in two so that its rounding does not scale the result's error by a^2."""
  a = minimum(a, 64.0)
  hi = floor(a * 256.0) / 256.0
  return exp(-(hi * hi)) * exp(-(a - hi) * (a + hi))


def erfc_pos(a: V) -> V:
  """erfc(a) for a >= 0, accurate relative to itself in the tail."""
  if is64(a):   # 1 - erf(a) would cancel above 1/2 (1000 eps at 2)
    near, mid, far = minimum(a, 0.5), clip(a, 0.5, 4.0), maximum(a, 4.0)
    mid_r = exp_neg_sq(mid) * (horner(_ERFC64_NUM, mid) / horner(_ERFC64_DEN, mid))
    return where(a < 0.5, 1.0 - erf(near), where(a < 4.0, mid_r, exp_neg_sq(far) * erfcx_pos(far)))
  near, mid, far = minimum(a, 1.0), clip(a, 1.0, 4.0), maximum(a, 4.0)
  mid_r = exp_neg_sq(mid) * (horner(_ERFC_NUM, mid) / horner(_ERFC_DEN, mid))
  return where(a < 1.0, 1.0 - erf(near), where(a < 4.0, mid_r, exp_neg_sq(far) * erfcx_pos(far)))


def erfc(x: V) -> V:
  r = erfc_pos(fabs(x))
  return where(isnan(x), x, where(x < 0, 2.0 - r, r))


# Giles' single-precision polynomials for erf_inv in w = -log(1 - u^2): below w = 5 in w - 2.5, above in sqrt(w) - 3.
_ERFINV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                 -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                 0.00943887047, 1.00167406, 2.83297682)


def erf_inv(u: V) -> V:
  """Giles' polynomials (float32); for float64 they start two Halley steps on erf (|u| <= 1/2) or erfc (beyond,
  where 1 - |u| is exact). +-inf at +-1, NaN beyond."""
  a = fabs(u)
  w = -log1p(-(a * a))
  central = w < 5.0
  z = where(central, w - 2.5, sqrt(maximum(w, 5.0)) - 3.0)
  x = where(central, horner(_ERFINV_SMALL, z), horner(_ERFINV_LARGE, z)) * a
  if is64(u):
    inner = a <= 0.5
    for _ in range(2):
      f = where(inner, erf(x) - a, (1.0 - a) - erfc_pos(x))
      d = (2 * RSQRT_PI) * exp(-(x * x))
      x = x - f / (d + x * f)
  x = where(a.eq(1.0), math.inf, x)
  return where((a > 1.0) | isnan(u), math.nan, copysign(x, u))


# ---- gamma, digamma, zeta ----
_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
LOG_PI, HALF_LOG_2PI = math.log(math.pi), 0.5 * math.log(2 * math.pi)


def _lanczos_log_t(z: V) -> V: return math.log(_G + 0.5) + log1p(z / (_G + 0.5))  # log(z + g + 1/2), accurate


def _sin_pi_reduced(x: V) -> V:
  """|sin(pi x)| computed on the distance of |x| to its nearest integer (exact), so it is 0 exactly at integers."""
  a = fabs(x)
  frac = a - floor(a)
  return sin(math.pi * minimum(frac, 1.0 - frac))


def lgamma(x: V) -> V:
  """log|Gamma(x)|: Lanczos' sum for x >= 1/2, reflection below; inf at 0, the negative integers and +-inf."""
  reflect = x < 0.5
  z = where(reflect, -x, x - 1.0)
  s = z * 0 + _LANCZOS[0]
  for i, c in enumerate(_LANCZOS[1:], 1): s = s + c / (z + i)
  t = z + (_G + 0.5)
  log_t = _lanczos_log_t(z)
  right = HALF_LOG_2PI + log(s) + (z + 0.5 - t / log_t) * log_t   # (z + 1/2) log t - t without overflowing
  left = LOG_PI - log(_sin_pi_reduced(x)) - right
  r = where(reflect, left, right)
  return where(fabs(x).eq(math.inf), math.inf, r)


def digamma(x: V) -> V:
  """The logarithmic derivative of Gamma: Lanczos' sum differentiated for x >= 1/2, reflection
  psi(1 - x) - pi / tan(pi x) below; NaN at 0, the negative integers and -inf."""
  reflect = x < 0.5
  z = where(reflect, -x, x - 1.0)
  num, den = z * 0, z * 0 + _LANCZOS[0]
  for i, c in enumerate(_LANCZOS[1:], 1):
    num = num - c / ((z + i) * (z + i))
    den = den + c / (z + i)
  t = z + (_G + 0.5)
  right = _lanczos_log_t(z) + num / den - _G / t
  r = x - floor(x + 0.5)   # in [-1/2, 1/2]: pi / tan(pi x) has period 1
  left = right - math.pi * cos(math.pi * r) / sin(math.pi * r)
  out = where(reflect, left, right)
  out = where(x.eq(math.inf), math.inf, out)
  return where(((x <= 0) & floor(x).eq(x)) | isnan(x), math.nan, out)


def _bernoulli_even(n: int) -> list[Fraction]:
  """B_2, B_4, ..., B_2n."""
  b = [Fraction(1)]
  for m in range(1, 2 * n + 1):
    b.append(-sum(math.comb(m + 1, j) * b[j] for j in range(m)) / (m + 1))
  return b[2::2]


_ZETA_TERMS = 16
_ZETA_TAIL = [float(b / math.factorial(2 * j)) for j, b in enumerate(_bernoulli_even(12), 1)]   # B_2j / (2j)!


def zeta(x: V, q: V) -> V:
  """The Hurwitz zeta function sum_k (q + k)^-x: sixteen terms (so accurate for q > -7), then Euler-Maclaurin's tail
  with twelve Bernoulli terms. inf at x = 1 and at the nonpositive integers q; NaN for x < 1, and for q < 0 with x
  not an integer."""
  x_int = floor(x).eq(x)
  odd = x_int & (x - 2.0 * floor(x * 0.5)).eq(1.0)
  s = x * 0
  for n in range(_ZETA_TERMS):
    b = q + float(n)
    p = pow_pos(fabs(b), -x)
    s = s + where((b < 0) & odd, -p, p)
  w = q + float(_ZETA_TERMS)
  wx = pow_pos(w, -x)
  s = s + w * wx / (x - 1.0) + 0.5 * wx
  term = x * wx / w   # x (x + 1) ... (x + 2j - 2) w^(-x - 2j + 1)
  for j, c in enumerate(_ZETA_TAIL, 1):
    s = s + c * term
    term = term * ((x + (2 * j - 1)) / w) * ((x + 2 * j) / w)
  s = where((q <= 0) & floor(q).eq(q), math.inf, s)
  s = where(x.eq(1.0), math.inf, s)
  return where((x < 1.0) | ((q < 0) & ~x_int) | isnan(x) | isnan(q), math.nan, s)


# ---- exponentially scaled Bessel functions of order 0 and 1 ----
def _bessel_ie(x: V, order: int) -> V:
  """exp(-|x|) I_order(|x|): the power series sum (x/2)^(2k + order) / (k! (k + order)!) below the switch, above it
  the asymptotic series 1 / sqrt(2 pi x) sum_k prod_{j <= k} ((2j - 1)^2 - 4 order^2) / (8 j x)."""
  a = fabs(x)
  switch, series_n, asym_n = (20.0, 48, 36) if is64(x) else (9.0, 24, 17)
  s = minimum(a, switch)
  q = s * s * 0.25
  term = s * 0.5 if order else s * 0 + 1.0
  total = term
  for j in range(1, series_n):
    term = term * q / (j * (j + order))
    total = total + term
  near = total * exp(-s)
  f = maximum(a, switch)
  mu = 4.0 * order * order
  term, total = f * 0 + 1.0, f * 0 + 1.0
  for j in range(1, asym_n):
    term = term * ((2 * j - 1) ** 2 - mu) / (8.0 * j) / f
    total = total + term
  far = total / sqrt(2 * math.pi * f)
  r = where(a < switch, near, where(a.eq(math.inf), 0.0, far))
  return where(isnan(x), x, copysign(r, x) if order else r)


def bessel_i0e(x: V) -> V: return _bessel_ie(x, 0)
def bessel_i1e(x: V) -> V: return _bessel_ie(x, 1)
