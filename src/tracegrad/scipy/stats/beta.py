"""The beta distribution, as jax.scipy.stats.beta.

>>> tracegrad.scipy.stats.beta.cdf(tnp.asarray([0.5]), 2.0, 3.0).round(4)
Array([0.6875], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import betainc, betaln, xlog1py, xlogy
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
  """log of the density at x on [loc, loc + scale], -inf outside."""
  x, a, b, loc, scale = promote(x, a, b, loc, scale)
  y = (x - loc) / scale
  lp = xlogy(a - 1, y) + xlog1py(b - 1, -y) - betaln(a, b) - tnp.log(scale)
  return tnp.where((x < loc) | (x > loc + scale), -tnp.inf, lp)


def pdf(x, a, b, loc=0, scale=1): return tnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote(x, a, b, loc, scale)
  return betainc(a, b, tnp.clip((x - loc) / scale, 0, 1))


def logcdf(x, a, b, loc=0, scale=1): return tnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote(x, a, b, loc, scale)
  return betainc(b, a, 1 - tnp.clip((x - loc) / scale, 0, 1))


def logsf(x, a, b, loc=0, scale=1): return tnp.log(sf(x, a, b, loc, scale))
