"""Window functions: bartlett, blackman, hamming, hanning, kaiser."""
from __future__ import annotations

import math

from ..array import Array
from ..ir import dtypes
from ._support import static_int
from .creation import arange, ones
from .elementwise import cos, sqrt, where
from .misc import i0

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _n(M, fn):
  M = static_int(M, fn, "M")
  return M, arange(M).astype(dtypes.default_float())


def bartlett(M: int) -> Array:
  """The Bartlett (triangular) window of M points.

  >>> tnp.bartlett(5)
  Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
  """
  M = static_int(M, "bartlett", "M")
  if M <= 1: return ones(M)
  n = arange(1 - M, M, 2).astype(dtypes.default_float())
  return where(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1))


def _cosine(fn, M, coefs):
  M, n = _n(M, fn)
  if M <= 1: return ones(M)
  out = coefs[0]
  for k, c in enumerate(coefs[1:], 1): out = out + c * cos(2 * k * math.pi * n / (M - 1))
  return out


def blackman(M: int) -> Array:
  """The Blackman window of M points.

  >>> tnp.blackman(3).round(3)
  Array([-0.,  1., -0.], dtype=float32)
  """
  return _cosine("blackman", M, (0.42, -0.5, 0.08))


def hamming(M: int) -> Array:
  """The Hamming window of M points.

  >>> tnp.hamming(3).round(3)
  Array([0.08, 1.  , 0.08], dtype=float32)
  """
  return _cosine("hamming", M, (0.54, -0.46))


def hanning(M: int) -> Array:
  """The Hann window of M points.

  >>> tnp.hanning(3)
  Array([0., 1., 0.], dtype=float32)
  """
  return _cosine("hanning", M, (0.5, -0.5))


def kaiser(M: int, beta) -> Array:
  """The Kaiser window of M points and shape beta.

  >>> tnp.kaiser(3, 0.0)
  Array([1., 1., 1.], dtype=float32)
  """
  M, n = _n(M, "kaiser")
  if M <= 1: return ones(M)
  alpha = 0.5 * (M - 1)
  return i0(beta * sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)
