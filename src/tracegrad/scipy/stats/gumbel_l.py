"""The Gumbel distribution of minima (left-skewed), as jax.scipy.stats.gumbel_l.

>>> tracegrad.scipy.stats.gumbel_l.cdf(tnp.asarray([0.0, -1.0])).round(4)
Array([0.6321, 0.3078], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from .derived import exp_of, log1mexp
from .promote import promote

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """z - exp(z) - log(scale) at z = (x - loc) / scale; nan unless scale > 0."""
  x, loc, scale = promote(x, loc, scale)
  z = (x - loc) / scale
  return tnp.where(scale > 0, z - tnp.exp(z) - tnp.log(scale), tnp.nan)


def logcdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return tnp.where(scale > 0, log1mexp(tnp.exp((x - loc) / scale)), tnp.nan)


def logsf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return tnp.where(scale > 0, -tnp.exp((x - loc) / scale), tnp.nan)


def ppf(p, loc=0, scale=1):
  """loc + scale log(-log(1 - p)) for p in (0, 1), nan elsewhere."""
  p, loc, scale = promote(p, loc, scale)
  return tnp.where((p > 0) & (p < 1), loc + scale * tnp.log(-tnp.log1p(-p)), tnp.nan)


pdf = exp_of(logpdf, "pdf")
cdf = exp_of(logcdf, "cdf")
sf = exp_of(logsf, "sf")
