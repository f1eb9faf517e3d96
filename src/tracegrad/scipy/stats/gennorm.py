"""The generalized normal distribution of shape beta (density proportional to exp(-|x|^beta)), as
jax.scipy.stats.gennorm.

>>> tracegrad.scipy.stats.gennorm.cdf(tnp.asarray([0.0, 1.0]), 2.0).round(4)
Array([0.5   , 0.9214], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import gammainc, gammaln
from .derived import exp_of
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, beta):
  """log(beta / (2 Gamma(1 / beta))) - |x|^beta."""
  x, beta = promote(x, beta)
  return tnp.log(0.5 * beta) - gammaln(1 / beta) - tnp.power(tnp.abs(x), beta)


def cdf(x, beta):
  """(1 + sign(x) P(1 / beta, |x|^beta)) / 2, P the regularized lower incomplete gamma function."""
  x, beta = promote(x, beta)
  return 0.5 * (1 + tnp.sign(x) * gammainc(1 / beta, tnp.power(tnp.abs(x), beta)))


pdf = exp_of(logpdf, "pdf")
