"""The arguments of a distribution's function as arrays of one floating dtype, as JAX promotes them."""
from __future__ import annotations

from ... import numpy as tnp
from ...array import Array
from ...ir import dtypes

__all__ = ["float_dtype", "promote"]


def float_dtype(*xs) -> dtypes.DType:
  """The arguments' common floating dtype: integers and bools take the default float (float32, or float64 with 64-bit
  types on)."""
  d = tnp.result_type(*xs)
  return d if d.is_float else dtypes.default_float()


def promote(*xs) -> list[Array]:
  """The arguments as arrays of their common floating dtype."""
  d = float_dtype(*xs)
  return [tnp.asarray(x).astype(d) for x in xs]
