"""Owen's T function of jax.scipy.special.

T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt is even in h and odd in a. For |a| <= 1 the
integral is taken by Gauss-Legendre quadrature (Patefield and Tandy's method T5) over [0, min(a, U / h)], beyond which
exp(-h^2 t^2 / 2) is below the precision (U = 9 in float64, 6 in float32), so that the quadrature still resolves the
integrand for large h; for |a| > 1, T(h, a) = (Phi(h) + Phi(a h)) / 2 - Phi(h) Phi(a h) - T(a h, 1 / a) (h >= 0).

>>> tracegrad.scipy.special.owens_t(tnp.asarray(0.0), tnp.asarray(1.0))   # arctan(1) / (2 pi)
Array(0.125, dtype=float32)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as tnp
from ..array import Array
from ..trace import composite
from ..transforms import custom_jvp
from .special_series import exp, promote

_SQRT2 = math.sqrt(2.0)
_ERF_HALF = 0.6744897501960817   # erf(x / sqrt 2) = 1/2: below it erf keeps more digits than erfc


def _nodes(n: int) -> tuple[np.ndarray, np.ndarray]:
  """The positive nodes of the 2n-point Gauss-Legendre rule on [-1, 1] and their weights over 2 pi: for an even f,
  1/(2 pi) int_0^1 f = sum w_i f(t_i)."""
  t, w = np.polynomial.legendre.leggauss(2 * n)
  return t[n:], w[n:] / (2 * math.pi)


_RULES = {8: (9.0, *_nodes(20)), 4: (6.0, *_nodes(13))}   # itemsize -> (U, nodes, weights)


def owens_t(h, a) -> Array:
  """Owen's T function T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + t^2) / 2) / (1 + t^2) dt, as
  jax.scipy.special.owens_t; differentiable in h and a.

  >>> tracegrad.scipy.special.owens_t(tnp.asarray([0.5, 2.0]), tnp.asarray([1.0, 0.5])).round(5)
  Array([0.10667, 0.00863], dtype=float32)
  """
  (h, a), d = promote("owens_t", h, a)
  return _owens_t(h, a).astype(d)


def _t_small(h: Array, a: Array) -> Array:
  """T(h, a) for h >= 0 and 0 <= a <= 1."""
  u, t, w = _RULES[h.dtype.itemsize]
  reach = tnp.minimum(a, u / tnp.maximum(h, 1e-30))
  s = reach[..., None] * tnp.asarray(t, h.dtype)
  s2 = 1.0 + s * s
  f = exp(-0.5 * (h * h)[..., None] * s2) / s2
  r = reach * tnp.sum(f * tnp.asarray(w, h.dtype), axis=-1)
  r = tnp.where(h == 0, tnp.arctan(a) / (2 * math.pi), r)
  return tnp.where(a == 1, 0.125 * lax.erfc(-h / _SQRT2) * lax.erfc(h / _SQRT2), r)


def _value(h: Array, a: Array) -> Array:
  ah, aa = tnp.abs(h), tnp.abs(a)
  inner = aa <= 1
  aah = tnp.where(ah == 0, 0.0, aa * ah)   # 0, not NaN, at a = inf
  r = _t_small(tnp.where(inner, ah, aah), tnp.where(inner, aa, 1.0 / aa))
  x, y = ah / _SQRT2, aah / _SQRT2
  small = 0.25 - 0.25 * lax.erf(x) * lax.erf(y)
  ex, ey = lax.erfc(x), lax.erfc(y)
  outer = tnp.where(aah <= _ERF_HALF, small, 0.25 * (ex + ey - ex * ey)) - r
  r = tnp.sign(a) * tnp.where(inner, r, outer)
  return tnp.where(tnp.isnan(h) | tnp.isnan(a), tnp.nan, r)


@custom_jvp
def _owens_t(h, a): return composite("owens_t", _value, h, a)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
  (h, a), (th, ta) = primals, tangents
  hh = h * h
  dh = -tnp.exp(-0.5 * hh) * lax.erf(a * h / _SQRT2) / (2 * math.sqrt(2 * math.pi))
  da = tnp.exp(-0.5 * hh * (1.0 + a * a)) / (2 * math.pi * (1.0 + a * a))
  return _owens_t(h, a), dh * th + da * ta
