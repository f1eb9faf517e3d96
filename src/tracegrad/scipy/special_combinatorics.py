"""Counting functions of jax.scipy.special: comb (binomial coefficients through log-gamma, as floats) and bernoulli
(the Bernoulli numbers, exact rationals rounded once).

>>> tracegrad.scipy.special.comb(5, 2).round(3)
Array(10., dtype=float32)
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from .. import lax
from .. import numpy as tnp
from ..array import Array
from ..ir import dtypes
from ..lax import float_math as fm
from ..numpy._support import static_int
from . import special_integrals_math as im
from .special_integrals import float_type

_exp = fm.smooth(lambda u: im.exp(im.V(u)).u, lambda x, y: (y,), "exp")


def comb(N, k, *, exact: bool = False, repetition: bool = False) -> Array:
  """The number of ways to choose k of N things, N! / (k! (N - k)!), as jax.scipy.special.comb: a float through
  log-gamma, 0 where N < 0, k < 0 or k > N; with repetition=True, comb(N + k - 1, k) (1 for k = 0). exact=True (Python
  integers of any size) is not supported, as in JAX.

  >>> tracegrad.scipy.special.comb(tnp.asarray([4, 4, 4]), tnp.asarray([0, 2, 5])).round(3)
  Array([1., 6., 0.], dtype=float32)
  """
  if exact: raise NotImplementedError("comb: exact=True needs integers of any size; compute math.comb(N, k) instead")
  d = float_type(N, k)
  work = tnp.float32 if d.itemsize == 2 else d
  N, k = tnp.broadcast_arrays(tnp.asarray(N).astype(work), tnp.asarray(k).astype(work))
  if repetition: N, k, one = N + k - 1, k, (k == 0) & (N >= 0)
  ok = (N >= 0) & (k >= 0) & (k <= N)
  n, j = tnp.where(ok, N, 0.0), tnp.where(ok, k, 0.0)
  log_c = lax.lgamma(n + 1) - lax.lgamma(j + 1) - lax.lgamma(n - j + 1)
  out = tnp.where(ok, Array(_exp(log_c.uop)), 0.0)
  return (tnp.where(one, 1.0, out) if repetition else out).astype(d)


@functools.lru_cache(maxsize=8)
def _bernoulli_numbers(n: int) -> tuple[float, ...]:
  """B_0 .. B_n (B_1 = -1/2) as floats, +-inf past float64's range: B_2k = (-1)^(k-1) 2k T_k / (4^k (4^k - 1)) from
  the tangent numbers T_k, computed in integers (Brent and Harvey's recurrence)."""
  t = [0] * (n // 2 + 1)
  if n >= 2: t[1] = 1
  for m in range(2, len(t)): t[m] = (m - 1) * t[m - 1]
  for m in range(2, len(t)):
    for j in range(m, len(t)): t[j] = (j - m) * t[j - 1] + (j - m + 2) * t[j]
  out = [1.0, -0.5][:n + 1] + [0.0] * max(n - 1, 0)
  for m in range(1, len(t)):
    b = Fraction((-1) ** (m - 1) * 2 * m * t[m], 4 ** m * (4 ** m - 1))
    try:
      out[2 * m] = float(b)
    except OverflowError:
      out[2 * m] = math.inf if b > 0 else -math.inf
  return tuple(out)


def bernoulli(n: int) -> Array:
  """The Bernoulli numbers B_0 .. B_n (n + 1 of them, B_1 = -1/2), as jax.scipy.special.bernoulli, in the default
  float dtype; n must be a concrete nonnegative integer.

  >>> tracegrad.scipy.special.bernoulli(4).round(4)
  Array([ 1.    , -0.5   ,  0.1667,  0.    , -0.0333], dtype=float32)
  """
  n = static_int(n, "bernoulli", "n")
  if n < 0: raise ValueError(f"bernoulli: n must be a nonnegative integer, got {n}")
  with np.errstate(over="ignore"):   # past float32's range: +-inf
    values = np.asarray(_bernoulli_numbers(n)).astype(dtypes.default_float().np)
  return tnp.asarray(values)


__all__ = ["comb", "bernoulli"]
