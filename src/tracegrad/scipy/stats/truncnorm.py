"""The normal distribution truncated to [a, b] (in standard units), as jax.scipy.stats.truncnorm.

>>> tracegrad.scipy.stats.truncnorm.cdf(tnp.asarray([0.0]), -1.0, 1.0).round(4)
Array([0.5], dtype=float32)
"""
from __future__ import annotations

import math

from ... import numpy as tnp
from ..special import log_ndtr, ndtr
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _log_diff(u, v):
  """log(exp(u) - exp(v)) for u >= v."""
  return u + tnp.log1p(-tnp.exp(v - u))


def _log_mass(a, b):
  """log(ndtr(b) - ndtr(a)), in whichever tail keeps it accurate."""
  a, b = tnp.broadcast_arrays(a, b)
  right = a > 0
  lo, hi = tnp.where(right, -b, a), tnp.where(right, -a, b)
  tail = _log_diff(log_ndtr(hi), log_ndtr(lo))
  central = tnp.log1p(-ndtr(a) - ndtr(-b))
  return tnp.where((b <= 0) | right, tail, central)


def logpdf(x, a, b, loc=0, scale=1):
  """log of the density at x: the normal's, renormalised over [a, b], -inf outside."""
  x, a, b, loc, scale = promote(x, a, b, loc, scale)
  z = (x - loc) / scale
  lp = -0.5 * z * z - 0.5 * math.log(2 * math.pi) - tnp.log(scale) - _log_mass(a, b)
  return tnp.where((z < a) | (z > b), -tnp.inf, lp)


def pdf(x, a, b, loc=0, scale=1): return tnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote(x, a, b, loc, scale)
  z = tnp.clip((x - loc) / scale, a, b)
  out = _log_mass(a, z) - _log_mass(a, b)
  return tnp.where(x - loc < a * scale, -tnp.inf, tnp.where(x - loc >= b * scale, 0.0, out))


def cdf(x, a, b, loc=0, scale=1): return tnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote(x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1): return tnp.exp(logsf(x, a, b, loc, scale))
