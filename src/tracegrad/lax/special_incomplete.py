"""The regularized incomplete gamma and beta functions on `V`s: P(a, x) by its power series below x = a + 1 and
Q(a, x) by its continued fraction above (modified Lentz), each summed a fixed number of terms (accurate for a up to
about 500 in float64, 1000 in float32), and I_x(a, b) by its continued fraction. The derivative in a of P runs the
same sums on dual numbers.
"""
from __future__ import annotations

import math

from .special_math import V, digamma, exp, fabs, is64, isnan, lgamma, log, log1p, maximum, minimum, where

SERIES_TERMS, FRACTION_TERMS, BETA_TERMS = 200, 100, 100


class Dual:
  """A value and its derivative in one variable, for the recurrences of P's and Q's sums."""
  __slots__ = ("v", "d")

  def __init__(self, v, d=0.0): self.v, self.d = v, d
  @staticmethod
  def of(o) -> "Dual": return o if isinstance(o, Dual) else Dual(o)
  def __add__(self, o): o = Dual.of(o); return Dual(self.v + o.v, self.d + o.d)
  __radd__ = __add__
  def __sub__(self, o): o = Dual.of(o); return Dual(self.v - o.v, self.d - o.d)
  def __rsub__(self, o): return Dual.of(o) - self
  def __mul__(self, o): o = Dual.of(o); return Dual(self.v * o.v, self.d * o.v + self.v * o.d)
  __rmul__ = __mul__
  def __neg__(self): return Dual(-self.v, -self.d)

  def __truediv__(self, o):
    o = Dual.of(o)
    q = self.v / o.v
    return Dual(q, (self.d - q * o.d) / o.v)

  def __rtruediv__(self, o): return Dual.of(o) / self


def _tiny(v):
  """v kept away from 0 (a Dual's derivative is 0 where it is), for the divisions of a modified Lentz fraction."""
  val = v.v if isinstance(v, Dual) else v
  t = 1e-300 if is64(val) else 1e-30
  small = fabs(val) < t
  if not isinstance(v, Dual): return where(small, t, val)
  return Dual(where(small, t, val), where(small, 0.0, v.d) if isinstance(v.d, V) else v.d)


def _p_series(a, x):
  """sum_n x^n / (a (a + 1) ... (a + n)), so that P(a, x) = x^a e^-x / Gamma(a) times it."""
  r, c, total = a, a * 0 + 1.0, a * 0 + 1.0
  for _ in range(SERIES_TERMS):
    r = r + 1.0
    c = c * x / r
    total = total + c
  return total / a


def _q_fraction(a, x):
  """The continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)), so that Q(a, x) =
  x^a e^-x / Gamma(a) times it."""
  b = x + 1.0 - a
  c, d = b * 0 + (1e300 if is64(x) else 1e30), 1.0 / _tiny(b)
  h = d
  for i in range(1, FRACTION_TERMS):
    an = (a - float(i)) * float(i)
    b = b + 2.0
    d = 1.0 / _tiny(an * d + b)
    c = _tiny(b + an / c)
    h = h * d * c
  return h


def _log_prefactor(a: V, x: V) -> V: return a * log(x) - x - lgamma(a)   # log(x^a e^-x / Gamma(a))


def _domain(a: V, x: V):
  """(safe a, safe x, NaN mask, series mask): the sums run on a point inside the domain where the result is set."""
  bad = (a < 0) | (x < 0) | isnan(a) | isnan(x) | a.eq(math.inf)
  edge = bad | a.eq(0.0) | x.eq(0.0) | x.eq(math.inf)
  sa, sx = where(edge, 1.0, a), where(edge, 1.0, x)
  return sa, sx, bad, edge, sx < sa + 1.0


def igamma_parts(a: V, x: V) -> tuple[V, V]:
  """(P(a, x), Q(a, x)): P is 0 at x = 0 and 1 at a = 0 or x = inf; NaN for a < 0, x < 0, a = inf or NaN."""
  sa, sx, bad, _, series = _domain(a, x)
  pre = exp(_log_prefactor(sa, sx))
  ps = pre * _p_series(sa, minimum(sx, sa + 1.0))
  qf = pre * _q_fraction(sa, maximum(sx, sa + 1.0))
  p, q = where(series, ps, 1.0 - qf), where(series, 1.0 - ps, qf)
  one = a.eq(0.0) | x.eq(math.inf)
  p, q = where(x.eq(0.0), 0.0, where(one, 1.0, p)), where(x.eq(0.0), 1.0, where(one, 0.0, q))
  return where(bad, math.nan, p), where(bad, math.nan, q)


def igamma_grad_a(a: V, x: V) -> V:
  """d P(a, x) / da, the series or fraction run on dual numbers in a; 0 at x = 0, NaN at a = 0 and x = inf."""
  sa, sx, bad, edge, series = _domain(a, x)
  log_pre = _log_prefactor(sa, sx)
  pre = Dual(exp(log_pre), exp(log_pre) * (log(sx) - digamma(sa)))
  da = Dual(sa, sa * 0 + 1.0)
  ps = pre * _p_series(da, minimum(sx, sa + 1.0))
  qf = pre * _q_fraction(da, maximum(sx, sa + 1.0))
  r = where(series, ps.d, -qf.d)
  r = where(x.eq(0.0) & (a > 0), 0.0, r)
  return where(bad | (edge & ~x.eq(0.0)) | a.eq(0.0), math.nan, r)


def igamma_density(a: V, x: V) -> V:
  """d P(a, x) / dx = x^(a - 1) e^-x / Gamma(a)."""
  return exp((a - 1.0) * log(x) - x - lgamma(a))


def random_gamma_grad(a: V, x: V) -> V:
  """The derivative in a of a Gamma(a) sample x at fixed P(a, x): -(dP/da) / (dP/dx)."""
  r = -igamma_grad_a(a, x) / igamma_density(a, where(x.eq(0.0), 1.0, x))
  return where(x.eq(0.0) & (a > 0), 0.0, r)


def log_beta(a: V, b: V) -> V: return lgamma(a) + lgamma(b) - lgamma(a + b)


def _beta_fraction(a: V, b: V, x: V) -> V:
  """The continued fraction of I_x(a, b) (modified Lentz), converging fast for x < (a + 1) / (a + b + 2)."""
  c = x * 0 + 1.0
  d = 1.0 / _tiny(1.0 - (a + b) * x / (a + 1.0))
  h = d
  for m in range(1, BETA_TERMS):
    for an in (float(m) * (b - float(m)) * x / ((a + float(2 * m - 1)) * (a + float(2 * m))),
               -(a + float(m)) * (a + b + float(m)) * x / ((a + float(2 * m)) * (a + float(2 * m + 1)))):
      d = 1.0 / _tiny(1.0 + an * d)
      c = _tiny(1.0 + an / c)
      h = h * d * c
  return h


def betainc(a: V, b: V, x: V) -> V:
  """I_x(a, b), its continued fraction in x or (by symmetry) in 1 - x; NaN for a, b <= 0 or x outside [0, 1]."""
  swap = x > (a + 1.0) / (a + b + 2.0)
  p, q, y = where(swap, b, a), where(swap, a, b), where(swap, 1.0 - x, x)
  y = minimum(maximum(y, 0.0), 1.0)
  front = exp(p * log(y) + q * log1p(-y) - log_beta(p, q))
  r = front * _beta_fraction(p, q, y) / p
  out = where(swap, 1.0 - r, r)
  bad = (a <= 0) | (b <= 0) | (x < 0) | (x > 1) | isnan(a) | isnan(b) | isnan(x)
  return where(bad, math.nan, out)


def betainc_density(a: V, b: V, x: V) -> V:
  """d I_x(a, b) / dx = x^(a - 1) (1 - x)^(b - 1) / B(a, b)."""
  return exp((a - 1.0) * log(x) + (b - 1.0) * log1p(-x) - log_beta(a, b))

