"""The chi-squared distribution with df degrees of freedom, as jax.scipy.stats.chi2.

>>> tracegrad.scipy.stats.chi2.cdf(tnp.asarray([2.0]), 2.0).round(4)
Array([0.6321], dtype=float32)
"""
from __future__ import annotations

from . import gamma
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def _as_gamma(fun, x, df, loc, scale):
  """chi2(df) at x is gamma(df / 2) at x with twice the scale."""
  x, df, loc, scale = promote(x, df, loc, scale)
  return fun(x, df / 2, loc, 2 * scale)


def logpdf(x, df, loc=0, scale=1): return _as_gamma(gamma.logpdf, x, df, loc, scale)
def pdf(x, df, loc=0, scale=1): return _as_gamma(gamma.pdf, x, df, loc, scale)
def cdf(x, df, loc=0, scale=1): return _as_gamma(gamma.cdf, x, df, loc, scale)
def logcdf(x, df, loc=0, scale=1): return _as_gamma(gamma.logcdf, x, df, loc, scale)
def sf(x, df, loc=0, scale=1): return _as_gamma(gamma.sf, x, df, loc, scale)
def logsf(x, df, loc=0, scale=1): return _as_gamma(gamma.logsf, x, df, loc, scale)
