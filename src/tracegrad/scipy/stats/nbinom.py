"""The negative binomial distribution: the failures before the n-th success, each trial a success with probability
p, as jax.scipy.stats.nbinom.

>>> tracegrad.scipy.stats.nbinom.pmf(tnp.asarray([0, 1, 2]), 1, 0.5).round(4)
Array([0.5  , 0.25 , 0.125], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import gammaln, xlogy
from .derived import exp_of
from .promote import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
  """log(Gamma(y + n) / (Gamma(n) y!) p^n (1 - p)^y) at y = k - loc, -inf below loc."""
  k, n, p, loc = promote(k, n, p, loc)
  y = k - loc
  lp = gammaln(y + n) - gammaln(n) - gammaln(y + 1) + xlogy(n, p) + xlogy(y, 1 - p)
  return tnp.where(k < loc, -tnp.inf, lp)


pmf = exp_of(logpmf, "pmf")
