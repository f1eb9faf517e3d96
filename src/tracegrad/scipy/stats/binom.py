"""The binomial distribution of n trials with success probability p, as jax.scipy.stats.binom.

>>> tracegrad.scipy.stats.binom.pmf(tnp.asarray([0, 1, 2]), 2, 0.5).round(4)
Array([0.25, 0.5 , 0.25], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import gammaln, xlog1py, xlogy
from .derived import exp_of
from .promote import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
  """log(C(n, y) p^y (1 - p)^(n - y)) at y = k - loc, by gammaln (so a fractional y interpolates), -inf off [0, n]."""
  k, n, p, loc = promote(k, n, p, loc)
  y = k - loc
  log_odds = xlogy(y, p) + xlog1py(n - y, -p)
  lp = gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1) + log_odds
  certain = ((y == 0) & (n == 0)) | (log_odds == 0)
  return tnp.where((k >= loc) & (k < loc + n + 1), tnp.where(certain, 0.0, lp), -tnp.inf)


pmf = exp_of(logpmf, "pmf")
