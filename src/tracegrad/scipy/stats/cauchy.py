"""The Cauchy distribution, as jax.scipy.stats.cauchy.

>>> tracegrad.scipy.stats.cauchy.cdf(tnp.asarray([1.0])).round(4)
Array([0.75], dtype=float32)
"""
from __future__ import annotations

import math

from ... import numpy as tnp
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """log of the density at x: -log(pi scale (1 + z^2)), z = (x - loc) / scale."""
  x, loc, scale = promote(x, loc, scale)
  z = (x - loc) / scale
  return -math.log(math.pi) - tnp.log(scale) - tnp.log1p(z * z)


def pdf(x, loc=0, scale=1): return tnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return 0.5 + tnp.arctan((x - loc) / scale) / math.pi


def logcdf(x, loc=0, scale=1): return tnp.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return 0.5 - tnp.arctan((x - loc) / scale) / math.pi


def logsf(x, loc=0, scale=1): return tnp.log(sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
  q, loc, scale = promote(q, loc, scale)
  return loc + scale * tnp.tan(math.pi * (q - 0.5))


def isf(q, loc=0, scale=1):
  q, loc, scale = promote(q, loc, scale)
  return loc + scale * tnp.tan(math.pi * (0.5 - q))
