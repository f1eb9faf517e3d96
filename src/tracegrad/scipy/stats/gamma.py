"""The gamma distribution of shape a, as jax.scipy.stats.gamma.

>>> tracegrad.scipy.stats.gamma.cdf(tnp.asarray([1.0]), 1.0).round(4)
Array([0.6321], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import gammainc, gammaincc, gammaln, xlogy
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
  """log of the density at x: (a - 1) log y - y - gammaln(a) - log(scale), y = (x - loc) / scale; -inf below loc."""
  x, a, loc, scale = promote(x, a, loc, scale)
  y = (x - loc) / scale
  return tnp.where(x < loc, -tnp.inf, xlogy(a - 1, y) - y - gammaln(a) - tnp.log(scale))


def pdf(x, a, loc=0, scale=1): return tnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
  x, a, loc, scale = promote(x, a, loc, scale)
  return gammainc(a, tnp.maximum((x - loc) / scale, 0))


def logcdf(x, a, loc=0, scale=1): return tnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
  x, a, loc, scale = promote(x, a, loc, scale)
  return gammaincc(a, tnp.maximum((x - loc) / scale, 0))


def logsf(x, a, loc=0, scale=1): return tnp.log(sf(x, a, loc, scale))
