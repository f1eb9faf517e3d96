"""The multinomial distribution of n draws over the categories of probabilities p (the last axis), as
jax.scipy.stats.multinomial.

>>> tracegrad.scipy.stats.multinomial.pmf(tnp.asarray([1, 1]), 2, tnp.asarray([0.5, 0.5])).round(4)
Array(0.5, dtype=float32)
"""
from __future__ import annotations

from ... import numpy as tnp
from ..special import gammaln, xlogy
from .derived import exp_of
from .promote import promote

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
  """log(n! prod(p_i^x_i / x_i!)) over the last axis of the integer counts x, -inf where they do not add up to n."""
  (p,) = promote(p)
  x, n = tnp.asarray(x), tnp.asarray(n)
  if not (x.dtype.is_int and n.dtype.is_int):
    raise ValueError(f"multinomial.logpmf: x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}")
  total_ok = tnp.sum(x, axis=-1) == n
  x, n = x.astype(p.dtype), n.astype(p.dtype)
  lp = gammaln(n + 1) + tnp.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
  return tnp.where(total_ok, lp, -tnp.inf)


pmf = exp_of(logpmf, "pmf")
