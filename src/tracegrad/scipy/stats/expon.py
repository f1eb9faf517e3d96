"""The exponential distribution, as jax.scipy.stats.expon.

>>> tracegrad.scipy.stats.expon.cdf(tnp.asarray([-1.0, 1.0])).round(4)
Array([0.    , 0.6321], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """log of the density at x: -(x - loc) / scale - log(scale) from loc on, -inf below."""
  x, loc, scale = promote(x, loc, scale)
  return tnp.where(x < loc, -tnp.inf, -(x - loc) / scale - tnp.log(scale))


def pdf(x, loc=0, scale=1): return tnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return tnp.where(x < loc, 0, -tnp.expm1(-tnp.maximum(x - loc, 0) / scale))


def logcdf(x, loc=0, scale=1): return tnp.log(cdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return tnp.where(x < loc, 0, -(x - loc) / scale)


def sf(x, loc=0, scale=1): return tnp.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
  q, loc, scale = promote(q, loc, scale)
  return tnp.where((q < 0) | (q > 1), tnp.nan, loc - scale * tnp.log1p(-q))
