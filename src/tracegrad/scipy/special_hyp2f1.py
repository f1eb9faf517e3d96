"""The Gauss hypergeometric function 2F1 of jax.scipy.special, for real x <= 1 (and x > 1 where it is a polynomial or
a rational function).

2F1(a, b; c; x) = sum_k (a)_k (b)_k / (c)_k x^k / k! is summed as it stands on [-1/2, 0.9] (after Euler's
transformation (1 - x)^(c - a - b) 2F1(c - a, c - b; c; x) where c - a - b <= -1, as JAX), after Pfaff's
(1 - x)^-a 2F1(a, c - b; c; x / (x - 1)), a <= b, below -1/2, and near 1 by the connection formulas in 1 - x of
Abramowitz and Stegun 15.3.6 (c - a - b not an integer) and 15.3.10-11 (an integer, with digamma terms). A terminating
series (a or b a nonpositive integer) is summed as it stands for every x.

>>> tracegrad.scipy.special.hyp2f1(1.0, 1.0, 2.0, tnp.asarray([-1.0, 0.5])).round(4)   # -log(1 - x) / x
Array([0.6931, 1.3863], dtype=float32)
"""
from __future__ import annotations

from .. import lax
from .. import numpy as tnp
from ..array import Array
from ..trace import composite
from ..transforms import custom_jvp
from .special_series import eps, gamma_ratio, near_int, promote, series_pfq

_DIRECT_MAX = 0.9   # the series is summed as it stands up to here, then 1 - x is small enough for the connection
_PFAFF_BELOW = -0.5
_TERMS = 1000


def hyp2f1(a, b, c, x) -> Array:
  """The Gauss hypergeometric function 2F1(a, b; c; x), as jax.scipy.special.hyp2f1: 1 at x = 0 and where a or b is
  0 (c not), inf at the poles c = 0, -1, ..., at x = 1 where c - a - b <= 0 and for x > 1 (where a polynomial or
  rational function is not); differentiable in a, b, c and x.

  >>> tracegrad.scipy.special.hyp2f1(0.5, 0.5, 1.5, tnp.asarray(0.25)).round(5)   # arcsin(1/2) / (1/2)
  Array(1.0472, dtype=float32)
  """
  (a, b, c, x), d = promote("hyp2f1", a, b, c, x)
  return _hyp2f1(a, b, c, x).astype(d)


def _neg_int(v: Array, tol: float) -> Array: return (v <= 0) & near_int(v, tol)


def _degree(p: Array, q: Array, tol: float) -> Array:
  """The degree of the polynomial 2F1(p, q; .; x) (inf where neither p nor q is a nonpositive integer)."""
  dp = tnp.where(_neg_int(p, tol), -tnp.round(p), tnp.inf)
  return tnp.minimum(dp, tnp.where(_neg_int(q, tol), -tnp.round(q), tnp.inf))


def _psi_series(p: Array, q: Array, m: Array, y: Array, skip: Array) -> Array:
  """sum_n (p + m)_n (q + m)_n / (n! (n + m)!) y^n [log y - psi(n + 1) - psi(n + m + 1) + psi(p + m + n) +
  psi(q + m + n)], the digamma series of 15.3.10-11 (each psi carried from its start by adding 1 / (its argument))."""
  tol = eps(y)
  zero = tnp.zeros_like(y)
  u = tnp.exp(-lax.lgamma(m + 1.0))
  psis = (zero - 0.5772156649015329, lax.digamma(m + 1.0), lax.digamma(p + m), lax.digamma(q + m))
  consts = (p + m, q + m, m, tnp.log(y), y)

  def body(s):
    n, done, u, acc, (h1, h2, hp, hq), (pm, qm, m, logy, y) = s
    nf = n.astype(y.dtype)
    live = ~done
    acc = acc + tnp.where(live, u * (logy - h1 - h2 + hp + hq), 0.0)
    nxt = u * (pm + nf) * (qm + nf) / ((nf + 1.0) * (nf + m + 1.0)) * y
    hs = (h1 + 1.0 / (nf + 1.0), h2 + 1.0 / (nf + m + 1.0), hp + 1.0 / (pm + nf), hq + 1.0 / (qm + nf))
    w = tnp.abs(logy - hs[0] - hs[1] + hs[2] + hs[3]) + 1.0
    big = tnp.abs(nxt) * w > tol * tnp.abs(acc)
    return n + 1, done | ~big, tnp.where(live, nxt, u), acc, hs, (pm, qm, m, logy, y)

  def cond(s): return (s[0] < 200) & tnp.any(~s[1])

  return lax.while_loop(cond, body, (tnp.asarray(0, tnp.int32), skip, u, zero, psis, consts))[3]


def _near_one(p: Array, q: Array, c: Array, y: Array, skip: Array) -> Array:
  """2F1(p, q; c; 1 - y) for small y > 0 and c - p - q > -1, by the connection formulas in y."""
  tol = 50 * eps(y)
  d = c - p - q
  whole = near_int(d, tol)
  m = tnp.maximum(tnp.round(d), 0.0)
  fr = skip | whole
  f1, = series_pfq([p, q], [1.0 - d], y, skip=fr)
  f2, = series_pfq([c - p, c - q], [d + 1.0], y, skip=fr)
  dd = tnp.where(fr, 0.5, d)
  frac = gamma_ratio([c, dd], [c - p, c - q]) * f1 + gamma_ratio([c, -dd], [p, q]) * y ** dd * f2
  wh = skip | ~whole
  head, = series_pfq([p, q], [1.0 - m], y, skip=wh | (m == 0), stop_at=m - 1.0)
  head = tnp.where(m == 0, 0.0, gamma_ratio([tnp.maximum(m, 1.0), c], [p + m, q + m]) * head)
  tail = _psi_series(p, q, m, y, wh)
  sign = tnp.where(tnp.mod(m, 2.0) == 1, -1.0, 1.0)
  whole_r = head - gamma_ratio([c], [p, q]) * sign * y ** m * tail
  return tnp.where(whole, whole_r, frac)


def _value(a: Array, b: Array, c: Array, x: Array) -> Array:
  tol = 50 * eps(x)
  d = c - a - b
  poly = _neg_int(a, tol) | _neg_int(b, tol)
  deg = _degree(a, b, tol)
  c_pole = (c == 0) | ((c < 0) & (tnp.floor(c) == c))
  infs = c_pole & ~(poly & (deg < -c))   # a polynomial that ends before the pole has a value
  ones = (x == 0) | (((a == 0) | (b == 0)) & (c != 0))
  # a rational function beyond 1: Euler's transformation to a polynomial with an integer power of 1 - x
  rational = ~poly & near_int(d, tol) & (_neg_int(c - a, tol) | _neg_int(c - b, tol)) & (x > 1)
  euler = ~poly & (((d <= -1) & (x >= _PFAFF_BELOW) & (x < 1)) | rational)
  pfaff = ~poly & (x < _PFAFF_BELOW)
  lo, hi = tnp.minimum(a, b), tnp.maximum(a, b)
  p = tnp.where(euler, c - a, tnp.where(pfaff, lo, a))
  q = tnp.where(euler, c - b, tnp.where(pfaff, c - hi, b))
  xs = tnp.where(pfaff, x / (x - 1.0), x)
  one_minus = 1.0 - x
  power = tnp.where(euler, tnp.where(rational, tnp.round(d), d), 0.0)   # an integer power beyond 1
  pre = tnp.where(euler, one_minus ** power, tnp.where(pfaff, one_minus ** -lo, 1.0))
  stop = _degree(p, q, tol)
  finite = tnp.isfinite(stop)
  idle = ones | infs | tnp.isnan(x) | tnp.isnan(a) | tnp.isnan(b) | tnp.isnan(c)
  direct = (finite | (xs <= _DIRECT_MAX)) & ~idle & ((xs < 1) | finite)
  near = ~direct & ~idle & (xs < 1)
  series, = series_pfq([p, q], [c], tnp.where(direct, xs, 0.0), skip=~direct, stop_at=stop, cap=_TERMS)
  y = tnp.where(pfaff, 1.0 / one_minus, 1.0 - xs)
  near_r = _near_one(p, q, c, tnp.where(near, y, 0.5), ~near)
  r = pre * tnp.where(direct, series, near_r)
  r = tnp.where((x > 1) & ~poly & ~rational, tnp.inf, r)
  r = tnp.where((x == 1) & ~poly, tnp.where(d > 0, gamma_ratio([c, tnp.where(d > 0, d, 1.0)], [c - a, c - b]),
                                            tnp.inf), r)
  below = ~poly & (x < 1)
  r = tnp.where(below & (a == c), one_minus ** -b, r)
  r = tnp.where(below & (b == c), one_minus ** -a, r)
  r = tnp.where(infs, tnp.inf, r)
  r = tnp.where(ones, 1.0, r)
  return tnp.where(tnp.isnan(a) | tnp.isnan(b) | tnp.isnan(c) | tnp.isnan(x), tnp.nan, r)


@custom_jvp
def _hyp2f1(a, b, c, x): return composite("hyp2f1", _value, a, b, c, x)


def _partials(a: Array, b: Array, c: Array, x: Array) -> tuple[Array, Array, Array]:
  """(d/da, d/db, d/dc) of 2F1: the series' derivatives for x >= -1/2, those of Pfaff's form below."""
  pfaff = x < _PFAFF_BELOW
  _, da, db, dc = series_pfq([a, b], [c], tnp.where(pfaff, 0.0, x), skip=pfaff, track=(0, 1, 2), cap=_TERMS)
  swap = a > b
  lo, hi = tnp.where(swap, b, a), tnp.where(swap, a, b)
  z = tnp.where(pfaff, x / (x - 1.0), 0.0)
  g, g1, g2, g3 = series_pfq([lo, c - hi], [c], z, skip=~pfaff, track=(0, 1, 2), cap=_TERMS)
  one_minus = tnp.where(pfaff, 1.0 - x, 1.0)
  pre = one_minus ** -lo
  d_lo, d_hi, d_c = pre * (g1 - tnp.log(one_minus) * g), -pre * g2, pre * (g2 + g3)
  da = tnp.where(pfaff, tnp.where(swap, d_hi, d_lo), da)
  db = tnp.where(pfaff, tnp.where(swap, d_lo, d_hi), db)
  return da, db, tnp.where(pfaff, d_c, dc)


def _jvp(primals, tangents):
  a, b, c, x = primals
  ta, tb, tc, tx = tangents
  y = _hyp2f1(a, b, c, x)
  da, db, dc = _partials(a, b, c, x)
  dx = a * b / c * _hyp2f1(a + 1.0, b + 1.0, c + 1.0, x)
  return y, da * ta + db * tb + dc * tc + dx * tx


_hyp2f1.defjvp(_jvp)
