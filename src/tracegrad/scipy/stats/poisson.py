"""The Poisson distribution of mean mu, as jax.scipy.stats.poisson.

>>> tracegrad.scipy.stats.poisson.pmf(tnp.asarray([0, 1]), 1.0).round(4)
Array([0.3679, 0.3679], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import gammaincc, gammaln, xlogy
from .promote import promote

__all__ = ["logpmf", "pmf", "cdf"]


def logpmf(k, mu, loc=0):
  """log P(k - loc), -inf below 0 and off the integers."""
  k, mu, loc = promote(k, mu, loc)
  x = k - loc
  lp = xlogy(x, mu) - gammaln(x + 1) - mu
  return tnp.where((x < 0) | (x != tnp.round(x)), -tnp.inf, lp)


def pmf(k, mu, loc=0): return tnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  k, mu, loc = promote(k, mu, loc)
  x = k - loc
  return tnp.where(x < 0, 0.0, gammaincc(tnp.floor(tnp.maximum(x, 0)) + 1, mu))
