"""The multivariate normal distribution, as jax.scipy.stats.multivariate_normal.

>>> tracegrad.scipy.stats.multivariate_normal.pdf(tnp.zeros(2), tnp.zeros(2), tnp.eye(2)).round(4)
Array(0.1592, dtype=float32)
"""
from __future__ import annotations

import math

from ... import numpy as tnp
from .promote import promote

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
  """log of the density of N(mean, cov) at x (..., n); cov an (n, n) matrix, or a scalar variance for every axis."""
  if allow_singular is not None:
    raise NotImplementedError("multivariate_normal.logpdf: allow_singular is not supported")
  x, mean, cov = promote(x, mean, cov)
  y = x - mean
  if mean.ndim == 0: return -0.5 * y * y / cov - 0.5 * (math.log(2 * math.pi) + tnp.log(cov))
  n = mean.shape[-1]
  if cov.ndim == 0: return -0.5 * tnp.sum(y * y, axis=-1) / cov - n / 2 * (math.log(2 * math.pi) + tnp.log(cov))
  if cov.ndim < 2 or cov.shape[-2:] != (n, n):
    raise ValueError(f"multivariate_normal.logpdf: cov must be ({n}, {n}) for a mean of shape {mean.shape}, got "
                     f"{cov.shape}")
  _, logdet = tnp.linalg.slogdet(cov)
  quad = tnp.einsum("...i,...ij,...j->...", y, tnp.linalg.inv(cov), y)
  return -0.5 * (quad + logdet + n * math.log(2 * math.pi))


def pdf(x, mean, cov): return tnp.exp(logpdf(x, mean, cov))
