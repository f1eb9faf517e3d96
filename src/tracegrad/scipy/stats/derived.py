"""The functions a distribution derives from another one: pdf = exp(logpdf), sf = exp(logsf), log(1 - exp(-t)).

>>> log1mexp(tnp.asarray([1e-8, 30.0]))
Array([-1.842...e+01, -9.35...e-14], dtype=float32)
"""
from __future__ import annotations

import functools
import math

from ... import numpy as tnp
from ...array import Array

__all__ = ["exp_of", "log1mexp"]


def exp_of(logf, name: str):
  """The function `name` = exp(logf), with logf's signature."""
  @functools.wraps(logf)
  def f(*args, **kwargs): return tnp.exp(logf(*args, **kwargs))
  f.__name__ = f.__qualname__ = name
  f.__doc__ = f"exp({logf.__name__}), taking the same arguments."
  return f


def log1mexp(t) -> Array:
  """log(1 - exp(-t)) for t >= 0, accurate near 0 and far from it."""
  return tnp.where(t > math.log(2), tnp.log1p(-tnp.exp(-t)), tnp.log(-tnp.expm1(-t)))
