"""The Dirichlet distribution on the simplex, as jax.scipy.stats.dirichlet: x holds the K coordinates (or the first
K - 1 of them) on its first axis.

>>> tracegrad.scipy.stats.dirichlet.pdf(tnp.asarray([0.2, 0.3, 0.5]), tnp.asarray([1.0, 2.0, 3.0])).round(4)
Array(4.5, dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import gammaln, xlogy
from .derived import exp_of
from .promote import float_dtype

__all__ = ["logpdf", "pdf"]


def logpdf(x, alpha):
  """sum((alpha_i - 1) log x_i) - log B(alpha) over the first axis of x, -inf off the simplex."""
  d = float_dtype(x, alpha)
  x, alpha = tnp.asarray(x).astype(d), tnp.asarray(alpha).astype(d)
  if alpha.ndim != 1:
    raise ValueError(f"dirichlet.logpdf: alpha must be one-dimensional; got alpha.shape={alpha.shape}")
  k = alpha.shape[0]
  if x.ndim == 0 or x.shape[0] not in (k, k - 1):
    raise ValueError(f"dirichlet.logpdf: x must have {k} or {k - 1} entries on its first axis, as alpha has {k}; got "
                     f"x.shape={x.shape}")
  if x.shape[0] == k - 1: x = tnp.concatenate([x, 1 - tnp.sum(x, axis=0, keepdims=True)], axis=0)
  alpha = alpha.reshape((k,) + (1,) * (x.ndim - 1))
  log_b = tnp.sum(gammaln(alpha), axis=0) - gammaln(tnp.sum(alpha, axis=0))
  lp = tnp.sum(xlogy(alpha - 1, x), axis=0) - log_b
  simplex = tnp.all(x > 0, axis=0) & (tnp.abs(tnp.sum(x, axis=0) - 1) < 1e-6)
  return tnp.where(simplex, lp, -tnp.inf)


pdf = exp_of(logpdf, "pdf")
