"""The integrals of special_integrals.py on `V`s (UOps of one float dtype with arithmetic): power series near 0 and
continued fractions beyond, unrolled to a depth fixed per dtype (deeper for float64), asymptotic forms far out, and for
Spence's function the dilogarithm's series in powers of log(1 - z) with Bernoulli-number coefficients.
"""
from __future__ import annotations

import decimal
import math
from fractions import Fraction

from ..lax import float_math as fm
from ..lax.special_math import (V, copysign, cos, fabs, floor, horner, is64, isnan, log, log1p, maximum, minimum, sin,
                                where)

EULER = 0.57721566490153286061
INF, NAN, HALF_PI, PI2_6 = math.inf, math.nan, math.pi / 2, math.pi ** 2 / 6


def clip(v: V, lo: float, hi: float) -> V: return minimum(maximum(v, lo), hi)
def _exp2(v: V) -> V: return V(fm.exp2(v.u))


def _ln2_split(bits: int) -> tuple[float, float]:
  """ln 2 = hi + lo, hi of `bits` significant bits so that n hi is exact for the n of a Cody-Waite reduction."""
  ln2 = Fraction(decimal.Context(prec=50).ln(decimal.Decimal(2)))
  hi = Fraction(math.floor(ln2 * 2 ** bits), 2 ** bits)
  return float(hi), float(ln2 - hi)


_LN2 = {True: _ln2_split(40), False: _ln2_split(16)}


def exp(x: V) -> V:
  """e^x within an ulp or two for large |x| too (the plain exp2(x log2 e) loses |x| ulp): 2^n e^r with n the integer
  nearest x / ln 2 and r = x - n ln 2 formed exactly; 2^n applied in two halves so that neither overflows early."""
  hi, lo = _LN2[is64(x)]
  lim = 800.0 if is64(x) else 110.0
  c = clip(x, -lim, lim)
  n = floor(c * (1 / math.log(2)) + 0.5)
  r = (c - n * hi) - n * lo
  h = floor(n * 0.5)
  return where(isnan(x), x, V(fm.exp(r.u)) * _exp2(h) * _exp2(n - h))


# ---- Dawson's integral ----
def dawsn(x: V) -> V:
  """F(x) = x / (1 + 2x^2 - 4x^2 / (3 + 2x^2 - 8x^2 / (5 + 2x^2 - ...))), the continued fraction of x 1F1(1; 3/2; -x^2)
  (32 deep for float32, 64 for float64: full precision at every x); 1/(2x) (1 + 1/(2x^2)) beyond 1e4 (1e8)."""
  a = fabs(x)
  big, depth = (1e8, 64) if is64(x) else (1e4, 32)
  s = minimum(a, big)
  q = 2.0 * s * s
  f = q + (2.0 * depth + 1.0)
  for n in range(depth, 0, -1): f = (q + (2.0 * n - 1.0)) - (2.0 * n) * q / f
  far = (0.5 / a) * (1.0 + 0.5 / (a * a))
  return where(isnan(x), x, copysign(where(a > big, far, s / f), x))


# ---- exponential integrals ----
def _en_fraction(n, x: V, depth: int) -> V:
  """f with E_n(x) = e^-x / f: x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...)), for x >= 1."""
  f = x + n + 2.0 * depth
  for i in range(depth, 0, -1): f = (x + n + 2.0 * (i - 1)) - i * (n + (i - 1.0)) / f
  return f


def _en_series(n, x: V, terms: int) -> V:
  """E_n(x) for 0 < x <= 1 and an integer n >= 1 (a V, or a Python int): (-x)^(n-1) / (n-1)! (psi(n) - log x) minus
  the sum over k != n - 1 of (-x)^k / ((k - n + 1) k!); psi(n) = -gamma + 1 + 1/2 + ... + 1/(n-1). The first part is
  below the series' last term for n > `terms`, and left out there."""
  t, total, lead, psi, log_x = x * 0 + 1.0, x * 0, x * 0, -EULER, log(x)
  for k in range(terms):
    if k:
      t = t * x * (-1.0 / k)
      psi += 1.0 / k
    if isinstance(n, V):
      hit = n.eq(k + 1.0)
      lead = where(hit, t * (psi - log_x), lead)
      total = total + where(hit, 0.0, t / where(hit, 1.0, (k + 1.0) - n))
    elif k + 1 == n:
      lead = t * (psi - log_x)
    else:
      total = total + t * (1.0 / (k + 1 - n))
  return lead - total


def _en_depths(x: V) -> tuple[int, int]: return (100, 22) if is64(x) else (32, 13)


def expn(n: V, x: V) -> V:
  """E_n(x) = int_1^inf e^(-x t) / t^n dt: the series below x = 1, the continued fraction above (it also gives real
  orders n there); e^-x / x for n = 0; 1/(n - 1) (n > 1) or inf at x = 0; 0 at x = inf; NaN for n < 0, x < 0, and for
  an order that is not an integer at 0 < x <= 1."""
  depth, terms = _en_depths(x)
  pos = where(x > 0.0, x, 1.0)
  sn = maximum(where(isnan(n), 1.0, n), 1.0)
  near = _en_series(sn, minimum(pos, 1.0), terms)
  far = maximum(pos, 1.0)
  r = where(x > 1.0, exp(-far) / _en_fraction(maximum(n, 0.0), far, depth), near)
  r = where(n.eq(0.0), exp(-pos) / pos, r)
  r = where(x.eq(0.0), where(n > 1.0, 1.0 / where(n > 1.0, n - 1.0, 1.0), INF), r)
  frac_n = floor(n).ne(n) & (x > 0.0) & (x <= 1.0)
  return where((n < 0.0) | (x < 0.0) | isnan(n) | isnan(x) | frac_n, NAN, r)


def exp1(x: V) -> V:
  """E_1(x), as expn with n = 1: inf at 0, 0 at inf, NaN for x < 0."""
  depth, terms = _en_depths(x)
  pos = where(x > 0.0, x, 1.0)
  far = maximum(pos, 1.0)
  r = where(x > 1.0, exp(-far) / _en_fraction(1.0, far, depth), _en_series(1, minimum(pos, 1.0), terms))
  return where((x < 0.0) | isnan(x), NAN, where(x.eq(0.0), INF, r))


def expi(x: V) -> V:
  """Ei(x): -E_1(-x) for x < 0; gamma + log x + sum_k x^k / (k k!) up to x = 22 (40 for float64), where the asymptotic
  series e^x / x sum_k k! / x^k, cut at its smallest term, takes over. -inf at 0."""
  a = fabs(x)
  switch, terms = (40.0, 110) if is64(x) else (22.0, 70)
  s = minimum(where(a > 0.0, a, 1.0), switch)
  t, total = s * 0 + 1.0, s * 0
  for k in range(1, terms):
    t = t * s * (1.0 / k)
    total = total + t * (1.0 / k)
  near = (EULER + log(s)) + total
  f = clip(a, switch, 1000.0)
  t, total = f * 0 + 1.0, f * 0 + 1.0
  for k in range(1, int(switch)):
    t = t * k / f
    total = total + t
  h = exp(f * 0.5)
  far = where(a.eq(INF), INF, h * (h / f) * total)
  r = where(x < 0.0, -exp1(a), where(a < switch, near, far))
  return where(isnan(x), x, where(x.eq(0.0), -INF, r))


# ---- sine and cosine integrals ----
def sici(x: V) -> tuple[V, V]:
  """(Si(x), Ci(|x|)): their power series below |x| = 2 (4 for float64); above, -E_1(ix) = Ci(x) + i (Si(x) - pi/2)
  from e^-ix times the continued fraction of E_1 at the imaginary point ix (complex arithmetic on pairs), and
  (1/x^2 - i/x) for it past 1e4 (1e8). Si(+-inf) = +-pi/2; Ci(0) = -inf, Ci(inf) = 0, Ci(-inf) = NaN."""
  a = fabs(x)
  switch, terms, depth, big = (4.0, 18, 64, 1e8) if is64(x) else (2.0, 9, 40, 1e4)
  s = minimum(a, switch)
  q = s * s
  ts, si_near, tc, ci_near = s, s, s * 0 + 1.0, s * 0
  for k in range(1, terms):
    ts = -(ts * q) * (1.0 / ((2 * k) * (2 * k + 1)))
    si_near = si_near + ts * (1.0 / (2 * k + 1))
    tc = -(tc * q) * (1.0 / ((2 * k - 1) * (2 * k)))
    ci_near = ci_near + tc * (1.0 / (2 * k))
  ci_near = (EULER + log(s)) + ci_near
  f = clip(a, switch, big)
  fr, fi = f * 0 + (2.0 * depth + 1.0), f
  for i in range(depth, 0, -1):
    d = fr * fr + fi * fi
    fr, fi = (2.0 * i - 1.0) - (i * i) * fr / d, f + (i * i) * fi / d
  d = fr * fr + fi * fi
  wr, wi = where(a > big, (1.0 / a) / a, fr / d), where(a > big, -1.0 / a, -fi / d)
  c, sn = cos(a), sin(a)
  si = where(a < switch, si_near, HALF_PI + wi * c - wr * sn)
  ci = where(a < switch, ci_near, -(wr * c + wi * sn))
  inf = a.eq(INF)
  si, ci = where(inf, HALF_PI, si), where(inf, 0.0, ci)
  return where(isnan(x), x, copysign(si, x)), where(isnan(x) | x.eq(-INF), NAN, ci)


# ---- Fresnel integrals ----
def half_pi_square(a: V) -> V:
  """(pi/2) a^2 reduced mod 2 pi, for a >= 0: with n = floor(a) and g = a - n, a^2 = n^2 + 2 n g + g^2 where n^2 mod 4
  is n mod 2 and n g is exact (n and g share a's significant bits), so only g^2 and the final sum round."""
  n = floor(a)
  g = a - n
  t = (n * g) * 2.0
  r = (n - 2.0 * floor(n * 0.5)) + (t - 4.0 * floor(t * 0.25)) + g * g
  return HALF_PI * (r - 4.0 * floor(r * 0.25))


def fresnel(x: V) -> tuple[V, V]:
  """(S(x), C(x)): their power series below |x| = 1.5; above, C + iS = (1 + i)/2 - x e^(i pi x^2/2) / h with h the
  continued fraction 1 - i pi x^2 - 1*2 / (5 - i pi x^2 - 3*4 / (9 - i pi x^2 - ...)) (of erfc at (1 - i) sqrt(pi)/2 x),
  and 1/h = i / (pi x^2) past 1e4 (1e8). +-1/2 at +-inf."""
  a = fabs(x)
  switch, terms, depth, big = (1.5, 16, 80, 1e8) if is64(x) else (1.5, 10, 24, 1e4)
  s = minimum(a, switch)
  u = HALF_PI * s * s
  u2 = u * u
  tc, c_near, ts = s, s, s * u
  s_near = ts * (1.0 / 3.0)
  for k in range(1, terms):
    tc = -(tc * u2) * (1.0 / ((2 * k - 1) * (2 * k)))
    c_near = c_near + tc * (1.0 / (4 * k + 1))
    ts = -(ts * u2) * (1.0 / ((2 * k) * (2 * k + 1)))
    s_near = s_near + ts * (1.0 / (4 * k + 3))
  f = clip(a, switch, big)
  p = math.pi * f * f
  hr, hi = f * 0 + (4.0 * depth + 1.0), -p
  for j in range(depth, 0, -1):
    m, d = float((2 * j - 1) * (2 * j)), hr * hr + hi * hi
    hr, hi = (4.0 * j - 3.0) - m * hr / d, m * hi / d - p
  d = hr * hr + hi * hi
  wr, wi = where(a > big, a * 0, hr / d), where(a > big, 1.0 / (math.pi * a * a), -hi / d)
  ph = half_pi_square(a)
  c, sn = cos(ph), sin(ph)
  s_far, c_far = 0.5 - a * (wr * sn + wi * c), 0.5 - a * (wr * c - wi * sn)
  inf = a.eq(INF)
  sv = where(inf, 0.5, where(a < switch, s_near, s_far))
  cv = where(inf, 0.5, where(a < switch, c_near, c_far))
  neg = x < 0.0
  return where(isnan(x), x, where(neg, -sv, sv)), where(isnan(x), x, where(neg, -cv, cv))


# ---- Spence's function ----
def _bernoulli_over_factorial(count: int) -> list[float]:
  """B_2k / (2k + 1)! for k = 1 .. count."""
  b = [Fraction(1)]
  for m in range(1, 2 * count + 1):
    b.append(-sum(math.comb(m + 1, j) * b[j] for j in range(m)) / (m + 1))
  return [float(b[2 * k] / math.factorial(2 * k + 1)) for k in range(1, count + 1)]


_LI2 = _bernoulli_over_factorial(10)


def _li2(u: V) -> V:
  """Li2(z) from u = -log(1 - z), |u| <= log 2: u - u^2/4 + sum_k B_2k u^(2k+1) / (2k+1)!."""
  q = u * u
  coeffs = _LI2[:10 if is64(u) else 5]
  return u * ((1.0 - 0.25 * u) + q * horner(coeffs[::-1], q))


def spence(x: V) -> V:
  """spence(x) = Li2(1 - x) for x >= 0: the series in u = -log x on [1/2, 2]; below, the reflection
  pi^2/6 - log x log(1 - x) - Li2(x); above, spence(x) = -log(x)^2 / 2 - spence(1/x). NaN for x < 0 and at inf."""
  y = where(x > 2.0, 1.0 / where(x > 2.0, x, 1.0), x)
  mid = _li2(-log(clip(y, 0.5, 2.0)))
  low = where(y > 0.0, minimum(y, 0.5), 0.5)
  low = PI2_6 - log(low) * log1p(-low) - _li2(-log1p(-low))
  r = where(y < 0.5, low, mid)
  r = where(x > 2.0, -0.5 * log(x) * log(x) - r, r)
  r = where(x.eq(0.0), PI2_6, where(x.eq(1.0), 0.0, r))   # +0 at 1, where u = -log 1 is -0
  return where((x < 0.0) | isnan(x) | x.eq(INF), NAN, r)


def spence_deriv(x: V) -> V:
  """log(x) / (1 - x), -1 at x = 1."""
  one = x.eq(1.0)
  return where(one, -1.0, log(x) / where(one, 2.0, 1.0 - x))
