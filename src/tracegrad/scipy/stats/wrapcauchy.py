"""The wrapped Cauchy distribution on [0, 2 pi] of shape c, as jax.scipy.stats.wrapcauchy.

>>> tracegrad.scipy.stats.wrapcauchy.pdf(tnp.asarray([0.0, 3.1416]), 0.5).round(4)
Array([0.4775, 0.0531], dtype=float32)
"""
from __future__ import annotations

import math

from ... import numpy as tnp
from .derived import exp_of
from .promote import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
  """log((1 - c^2) / (2 pi (1 + c^2 - 2 c cos x))) on [0, 2 pi], -inf outside; nan unless 0 < c < 1."""
  x, c = promote(x, c)
  # 1 + c^2 - 2 c cos x as (1 - c)^2 + 4 c sin^2(x / 2), which keeps its digits for c near 1 and x near 0
  spread = tnp.square(1 - c) + 4 * c * tnp.square(tnp.sin(x / 2))
  lp = tnp.log((1 - c) * (1 + c)) - math.log(2 * math.pi) - tnp.log(spread)
  inside = tnp.where((x >= 0) & (x <= 2 * math.pi), lp, -tnp.inf)
  return tnp.where((c > 0) & (c < 1), inside, tnp.nan)


pdf = exp_of(logpdf, "pdf")
