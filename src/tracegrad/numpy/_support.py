"""Helpers shared by the jax.numpy functions written on top of the others (statistics, sets, polynomials, ...)."""
from __future__ import annotations

import operator

from ..array import Array, to_array
from ..ir import dtypes
from .core import arraylike, promote


def arr(a, fn: str) -> Array: return arraylike(a, fn)


def inexact(fn: str, *xs) -> list[Array]:
  """The operands promoted to their common dtype, then to the default float if that is not a float or complex type
  (as JAX)."""
  arrs, dt, weak = promote(fn, *xs)
  if dt.is_inexact: return arrs
  f = dtypes.default_float()
  return [Array(a.uop.cast(f), weak) for a in arrs]


def static_int(v, fn: str, name: str) -> int:
  """v as a Python int; a traced value raises TypeError naming the argument."""
  if isinstance(v, Array):
    if v.is_traced: raise TypeError(f"{fn}: {name} must be a concrete integer, got a traced value ({v.aval_str()})")
    v = v.item()
  try:
    return operator.index(v)
  except TypeError:
    raise TypeError(f"{fn}: {name} must be an integer, got {v!r}") from None


def concrete(x: Array, fn: str, name: str, hint: str = "") -> Array:
  """x, which must not be traced (its values decide the result's shape)."""
  if x.is_traced:
    raise TypeError(f"{fn}: {name} ({x.aval_str()}) is traced, but its values decide the shape of the result"
                    + (f"; {hint}" if hint else ""))
  return x
