"""The Gumbel distribution of maxima (right-skewed), as jax.scipy.stats.gumbel_r.

>>> tracegrad.scipy.stats.gumbel_r.cdf(tnp.asarray([0.0, 1.0])).round(4)
Array([0.3679, 0.6922], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from .derived import exp_of, log1mexp
from .promote import promote

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """-z - exp(-z) - log(scale) at z = (x - loc) / scale; nan unless scale > 0."""
  x, loc, scale = promote(x, loc, scale)
  z = (x - loc) / scale
  return tnp.where(scale > 0, -(z + tnp.exp(-z)) - tnp.log(scale), tnp.nan)


def logcdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return tnp.where(scale > 0, -tnp.exp((loc - x) / scale), tnp.nan)


def logsf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return tnp.where(scale > 0, log1mexp(tnp.exp((loc - x) / scale)), tnp.nan)


def sf(x, loc=0, scale=1):
  """1 - exp(-exp(-z)), as -expm1 so the right tail keeps its digits."""
  x, loc, scale = promote(x, loc, scale)
  return tnp.where(scale > 0, -tnp.expm1(-tnp.exp((loc - x) / scale)), tnp.nan)


def ppf(p, loc=0, scale=1):
  """loc - scale log(-log p) for p in (0, 1), nan elsewhere."""
  p, loc, scale = promote(p, loc, scale)
  return tnp.where((p > 0) & (p < 1), loc - scale * tnp.log(-tnp.log(p)), tnp.nan)


pdf = exp_of(logpdf, "pdf")
cdf = exp_of(logcdf, "cdf")
