"""The Laplace distribution, as jax.scipy.stats.laplace.

>>> tracegrad.scipy.stats.laplace.cdf(tnp.asarray([0.0])).round(4)
Array([0.5], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
  """log of the density at x: -|x - loc| / scale - log(2 scale)."""
  x, loc, scale = promote(x, loc, scale)
  return -tnp.abs(x - loc) / scale - tnp.log(2 * scale)


def pdf(x, loc=0, scale=1): return tnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  z = (x - loc) / scale
  return tnp.where(z < 0, 0.5 * tnp.exp(tnp.minimum(z, 0)), 1 - 0.5 * tnp.exp(-tnp.maximum(z, 0)))
