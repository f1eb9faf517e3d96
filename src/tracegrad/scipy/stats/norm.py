"""The normal distribution, as jax.scipy.stats.norm.

>>> tracegrad.scipy.stats.norm.cdf(tnp.asarray([0.0, 1.0]), loc=1.0).round(4)
Array([0.1587, 0.5   ], dtype=float32)
"""
from __future__ import annotations

import math

from ... import numpy as tnp
from ..special import log_ndtr, ndtr, ndtri
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """log of the density of N(loc, scale^2) at x."""
  x, loc, scale = promote(x, loc, scale)
  z = (x - loc) / scale
  return -0.5 * z * z - tnp.log(scale) - 0.5 * math.log(2 * math.pi)


def pdf(x, loc=0, scale=1): return tnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return ndtr((loc - x) / scale)


def logsf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return log_ndtr((loc - x) / scale)


def ppf(q, loc=0, scale=1):
  """The quantile of probability q."""
  q, loc, scale = promote(q, loc, scale)
  return ndtri(q) * scale + loc


def isf(q, loc=0, scale=1):
  q, loc, scale = promote(q, loc, scale)
  return ppf(1 - q, loc, scale)
