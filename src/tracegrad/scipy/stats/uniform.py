"""The uniform distribution on [loc, loc + scale], as jax.scipy.stats.uniform.

>>> tracegrad.scipy.stats.uniform.pdf(tnp.asarray([-1.0, 0.5])).round(4)
Array([0., 1.], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from .promote import promote

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """-log(scale) on [loc, loc + scale], -inf elsewhere."""
  x, loc, scale = promote(x, loc, scale)
  return tnp.where((x < loc) | (x > loc + scale), -tnp.inf, -tnp.log(scale))


def pdf(x, loc=0, scale=1): return tnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote(x, loc, scale)
  return tnp.clip((x - loc) / scale, 0, 1)


def ppf(q, loc=0, scale=1):
  q, loc, scale = promote(q, loc, scale)
  return tnp.where((q < 0) | (q > 1), tnp.nan, loc + q * scale)
