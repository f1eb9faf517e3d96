"""The geometric distribution on 1, 2, ..., as jax.scipy.stats.geom.

>>> tracegrad.scipy.stats.geom.pmf(tnp.asarray([1, 2]), 0.5)
Array([0.5 , 0.25], dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import xlog1py
from .promote import promote

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
  """log((1 - p)^(k - 1) p) for k - loc >= 1, -inf below."""
  k, p, loc = promote(k, p, loc)
  k = k - loc
  return tnp.where(k <= 0, -tnp.inf, xlog1py(k - 1, -p) + tnp.log(p))


def pmf(k, p, loc=0): return tnp.exp(logpmf(k, p, loc))
