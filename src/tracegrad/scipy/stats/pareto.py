"""The Pareto distribution of shape b on [loc + scale, inf), as jax.scipy.stats.pareto.

>>> tracegrad.scipy.stats.pareto.cdf(tnp.asarray([0.5, 2.0]), 2.0).round(4)
Array([0.  , 0.75], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from .derived import exp_of
from .promote import promote

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf", "ppf"]


def _below(x, loc, scale, outside, value):
  """value from loc + scale on, `outside` below it."""
  return tnp.where(x < loc + scale, outside, value)


def logpdf(x, b, loc=0, scale=1):
  """log(b / scale) - (b + 1) log z at z = (x - loc) / scale >= 1, -inf below."""
  x, b, loc, scale = promote(x, b, loc, scale)
  z = (x - loc) / scale
  return _below(x, loc, scale, -tnp.inf, -(tnp.log(scale / b) + (b + 1) * tnp.log(z)))


def cdf(x, b, loc=0, scale=1):
  x, b, loc, scale = promote(x, b, loc, scale)
  return _below(x, loc, scale, 0.0, 1 - tnp.power((x - loc) / scale, -b))


def logcdf(x, b, loc=0, scale=1):
  x, b, loc, scale = promote(x, b, loc, scale)
  return _below(x, loc, scale, -tnp.inf, tnp.log1p(-tnp.power((x - loc) / scale, -b)))


def logsf(x, b, loc=0, scale=1):
  x, b, loc, scale = promote(x, b, loc, scale)
  return _below(x, loc, scale, 0.0, -b * tnp.log((x - loc) / scale))


def ppf(q, b, loc=0, scale=1):
  """loc + scale (1 - q)^(-1/b) for q in [0, 1], nan elsewhere."""
  q, b, loc, scale = promote(q, b, loc, scale)
  return tnp.where(tnp.isnan(q) | (q < 0) | (q > 1), tnp.nan, loc + scale * tnp.power(1 - q, -1 / b))


pdf = exp_of(logpdf, "pdf")
sf = exp_of(logsf, "sf")
