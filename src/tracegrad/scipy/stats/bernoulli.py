"""The Bernoulli distribution, as jax.scipy.stats.bernoulli.

>>> tracegrad.scipy.stats.bernoulli.pmf(tnp.asarray([0, 1]), 0.25)
Array([0.75, 0.25], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import xlog1py, xlogy
from .promote import promote

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
  """log P(k - loc): log p at 1, log(1 - p) at 0, -inf elsewhere."""
  k, p, loc = promote(k, p, loc)
  k = k - loc
  return tnp.where((k < 0) | (k > 1), -tnp.inf, xlogy(k, p) + xlog1py(1 - k, -p))


def pmf(k, p, loc=0): return tnp.exp(logpmf(k, p, loc))


def cdf(k, p):
  k, p = promote(k, p)
  out = tnp.where(k < 0, 0.0, tnp.where(k >= 1, 1.0, 1 - p))
  return tnp.where((p < 0) | (p > 1) | tnp.isnan(k), tnp.nan, out)


def ppf(q, p):
  q, p = promote(q, p)
  return tnp.where((q < 0) | (q > 1) | (p < 0) | (p > 1), tnp.nan, tnp.where(q <= 1 - p, 0.0, 1.0))
