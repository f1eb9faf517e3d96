"""The von Mises distribution on the circle, of concentration kappa about 0, as jax.scipy.stats.vonmises.

>>> tracegrad.scipy.stats.vonmises.pdf(tnp.asarray([0.0, 3.1416]), 1.0).round(4)
Array([0.3417, 0.0462], dtype=float32)
"""
from __future__ import annotations

import math

from ... import numpy as tnp
from ..special import i0e
from .derived import exp_of
from .promote import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
  """kappa cos(x) - log(2 pi I0(kappa)), through the scaled I0 so a large kappa does not overflow; nan unless
  kappa > 0."""
  x, kappa = promote(x, kappa)
  lp = kappa * (tnp.cos(x) - 1) - tnp.log(2 * math.pi * i0e(kappa))
  return tnp.where(kappa > 0, lp, tnp.nan)


pdf = exp_of(logpdf, "pdf")
