"""Whole-array comparisons: isclose, allclose, array_equal, array_equiv."""
from __future__ import annotations

from ..array import Array, to_array
from ..ir import dtypes
from ._support import arr, inexact
from .elementwise import abs as _abs, isfinite, isnan, logical_and, logical_or
from .reductions import all as _all

__all__ = ["isclose", "allclose", "array_equal", "array_equiv"]


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False) -> Array:
  """Elementwise |a - b| <= atol + rtol * |b| (equal infinities are close; NaN only with equal_nan).

  >>> tnp.isclose(tnp.array([1.0, 2.0]), tnp.array([1.0 + 1e-7, 2.1]))
  Array([ True, False], dtype=bool)
  """
  x, y = inexact("isclose", a, b)
  dt = x.dtype
  rt, at = to_array(rtol, dt, fn="isclose"), to_array(atol, dt, fn="isclose")
  in_range = _abs(x - y) <= at + rt * _abs(y)
  out = logical_or(x == y, logical_and(isfinite(y), in_range))
  return logical_or(out, logical_and(isnan(x), isnan(y))) if equal_nan else out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False) -> Array:
  """Whether every element of a is close to b (see isclose).

  >>> tnp.allclose(tnp.array([1.0, 2.0]), tnp.array([1.0, 2.0 + 1e-6]))
  Array(True, dtype=bool)
  """
  return _all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False) -> Array:
  """Whether the arrays have the same shape and elements.

  >>> tnp.array_equal(tnp.array([1, 2]), tnp.array([1, 2]))
  Array(True, dtype=bool)
  """
  x, y = arr(a1, "array_equal"), arr(a2, "array_equal")
  if x.shape != y.shape: return to_array(False, dtypes.bool_, fn="array_equal")
  eq = x == y
  if equal_nan: eq = logical_or(eq, logical_and(isnan(x), isnan(y)))
  return _all(eq)


def array_equiv(a1, a2) -> Array:
  """Whether the arrays are equal after broadcasting. As jax.numpy: False for shapes of different ranks that do not
  broadcast, a TypeError for shapes of one rank that do not (numpy returns False for both).

  >>> tnp.array_equiv(tnp.array([1, 2]), tnp.array([[1, 2], [1, 2]]))
  Array(True, dtype=bool)
  """
  x, y = arr(a1, "array_equiv"), arr(a2, "array_equiv")
  if not _broadcastable(x.shape, y.shape):
    if x.ndim == y.ndim:
      raise TypeError(f"array_equiv: a1 of shape {x.shape} and a2 of shape {y.shape} have one rank but do not "
                      f"broadcast (jax.numpy raises here too; compare shapes first for numpy's False)")
    return to_array(False, dtypes.bool_, fn="array_equiv")
  return _all(x == y)


def _broadcastable(s: tuple, t: tuple) -> bool:
  return all(a == b or 1 in (a, b) for a, b in zip(s[::-1], t[::-1]))
