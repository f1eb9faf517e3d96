"""The logistic distribution, as jax.scipy.stats.logistic.

>>> tracegrad.scipy.stats.logistic.cdf(tnp.asarray([0.0])).round(4)
Array([0.5], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """log of the density at x: -|z| - 2 log(1 + exp(-|z|)) - log(scale), z = (x - loc) / scale."""
  x, loc, scale = promote(x, loc, scale)
  a = tnp.abs((x - loc) / scale)
  return -a - 2 * tnp.log1p(tnp.exp(-a)) - tnp.log(scale)


def pdf(x, loc=0, scale=1): return tnp.exp(logpdf(x, loc, scale))


def _expit(z):
  e = tnp.exp(-tnp.abs(z))
  return tnp.where(z >= 0, 1 / (1 + e), e / (1 + e))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return _expit((x - loc) / scale)


def sf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return _expit((loc - x) / scale)


def ppf(x, loc=0, scale=1):
  """The quantile of probability x: loc + scale * log(x / (1 - x))."""
  x, loc, scale = promote(x, loc, scale)
  return loc + scale * (tnp.log(x) - tnp.log1p(-x))


def isf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return loc - scale * (tnp.log(x) - tnp.log1p(-x))
