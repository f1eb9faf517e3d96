"""Student's t distribution, as jax.scipy.stats.t.

>>> tracegrad.scipy.stats.t.pdf(tnp.asarray([0.0]), 1.0).round(4)
Array([0.3183], dtype=float32)
"""
from __future__ import annotations

import math

from ... import numpy as tnp
from ..special import gammaln
from .promote import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
  """log of the density at x with df degrees of freedom."""
  x, df, loc, scale = promote(x, df, loc, scale)
  z = (x - loc) / scale
  return (gammaln((df + 1) / 2) - gammaln(df / 2) - 0.5 * tnp.log(df * math.pi) - tnp.log(scale)
          - (df + 1) / 2 * tnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1): return tnp.exp(logpdf(x, df, loc, scale))
