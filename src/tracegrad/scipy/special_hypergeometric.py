"""The confluent hypergeometric function 1F1 of jax.scipy.special (2F1 is in special_hyp2f1.py).

1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k! is summed as it stands for x >= 0 and, for x < 0, after Kummer's
transformation 1F1(a; b; x) = e^x 1F1(b - a; b; -x), whose terms do not cancel; for |x| >= 100, where it converges
soon enough, by its asymptotic expansion Gamma(b) / Gamma(a) e^x x^(a - b) sum_k (b - a)_k (1 - a)_k / k! x^-k.

>>> tracegrad.scipy.special.hyp1f1(1.0, 2.0, tnp.asarray([0.0, 1.0])).round(4)
Array([1.    , 1.7183], dtype=float32)
"""
from __future__ import annotations

from .. import numpy as tnp
from ..array import Array
from ..trace import composite
from ..transforms import custom_jvp
from .special_series import eps, exp, log_gamma_sign, promote, series_pfq

_ASYMPTOTIC = 100.0   # |x| from which the asymptotic expansion is used where it converges
_SERIES_TERMS = 2000


def hyp1f1(a, b, x) -> Array:
  """The confluent hypergeometric function 1F1(a; b; x), as jax.scipy.special.hyp1f1: 1 at a = 0 (also at b = 0),
  e^x at a = b, inf at b = 0; differentiable in a, b and x.

  >>> tracegrad.scipy.special.hyp1f1(tnp.asarray(0.5), tnp.asarray(1.5), tnp.asarray(-2.0)).round(5)
  Array(0.59814, dtype=float32)
  """
  (a, b, x), d = promote("hyp1f1", a, b, x)
  return _hyp1f1(a, b, x).astype(d)


def _kummer(a: Array, b: Array, x: Array):
  """(p, z, h): 1F1(a; b; x) = e^h 1F1(p; b; z) e^h with z = |x| >= 0 (Kummer's transformation for x < 0)."""
  neg = x < 0
  return tnp.where(neg, b - a, a), tnp.abs(x), tnp.where(neg, 0.5 * x, 0.0)


def _value(a: Array, b: Array, x: Array) -> Array:
  p, z, h = _kummer(a, b, x)
  special = (a == 0) | (a == b) | (b == 0) | tnp.isnan(a) | tnp.isnan(b) | tnp.isnan(x) | tnp.isinf(x)
  try_asym = (z >= _ASYMPTOTIC) & ~special & ~((p <= 0) & (tnp.floor(p) == p))
  za = tnp.where(try_asym, z, 1e4)
  tail, last = series_pfq([b - p, 1.0 - p], [], 1.0 / za, skip=~try_asym, cap=200, asymptotic=True, last=True)
  asym = try_asym & (tnp.abs(last) <= 8 * eps(x) * tnp.abs(tail))   # else the expansion diverges too soon
  skip = asym | special
  hs = tnp.where(skip, 0.0, h)
  (series,) = series_pfq([p], [b], tnp.where(skip, 0.0, z), t0=exp(hs), skip=skip, cap=_SERIES_TERMS)
  series = series * exp(hs)
  lb, sb = log_gamma_sign(b)
  lp, sp = log_gamma_sign(tnp.where(asym, p, 1.0))
  half = exp(tnp.where(x < 0, 0.0, 0.5 * za)) * za ** (0.5 * (p - b))   # e^x e^|x| = 1 for x < 0
  r = tnp.where(asym, sb * sp * tnp.exp(lb - lp) * half * half * tail, series)
  r = tnp.where(x == tnp.inf, tnp.inf, tnp.where(x == -tnp.inf, tnp.where(a > 0, 0.0, tnp.nan), r))
  r = tnp.where(b == 0, tnp.inf, r)
  r = tnp.where(a == b, exp(x), r)
  r = tnp.where(a == 0, 1.0, r)
  return tnp.where(tnp.isnan(a) | tnp.isnan(b) | tnp.isnan(x), tnp.nan, r)


@custom_jvp
def _hyp1f1(a, b, x): return composite("hyp1f1", _value, a, b, x)


def _partials(a: Array, b: Array, x: Array) -> tuple[Array, Array]:
  """(d/da, d/db) of 1F1(a; b; x): the series' derivatives, of Kummer's form for x < 0."""
  p, z, h = _kummer(a, b, x)
  _, dp, db = series_pfq([p], [b], z, t0=exp(h), track=(0, 1), cap=_SERIES_TERMS)
  e = exp(h)
  dp, db = dp * e, db * e
  neg = x < 0
  return tnp.where(neg, -dp, dp), tnp.where(neg, dp + db, db)


def _jvp(primals, tangents):
  a, b, x = primals
  ta, tb, tx = tangents
  y = _hyp1f1(a, b, x)
  da, db = _partials(a, b, x)
  dx = a / b * _hyp1f1(a + 1.0, b + 1.0, x)
  return y, da * ta + db * tb + dx * tx


_hyp1f1.defjvp(_jvp)
