"""The beta-binomial distribution: n trials whose success probability is drawn from beta(a, b), as
jax.scipy.stats.betabinom.

>>> tracegrad.scipy.stats.betabinom.pmf(tnp.asarray([0, 1, 2]), 2, 1.0, 1.0).round(4)
Array([0.3333, 0.3333, 0.3333], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import betaln
from .derived import exp_of
from .promote import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
  """log(C(n, y) B(y + a, n - y + b) / B(a, b)) at y = floor(k) - loc; -inf off [0, n], nan for n < 0, a <= 0 or
  b <= 0."""
  k, n, a, b, loc = promote(k, n, a, b, loc)
  y = tnp.floor(k) - loc
  log_choose = -tnp.log1p(n) - betaln(n - y + 1, y + 1)
  lp = tnp.where((y == 0) & (n == 0), 0.0, log_choose + betaln(y + a, n - y + b) - betaln(a, b))
  lp = tnp.where((y < 0) | (y > n), -tnp.inf, lp)
  return tnp.where((n < 0) | (a <= 0) | (b <= 0), tnp.nan, lp)


pmf = exp_of(logpmf, "pmf")
