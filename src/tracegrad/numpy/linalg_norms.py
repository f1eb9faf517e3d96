"""Vector and matrix norms and condition numbers, as jax.numpy.linalg: norm, vector_norm, matrix_norm, cond. The
matrix norms 2, -2 and 'nuc' (and cond's default) come from the singular values."""
from __future__ import annotations

import math
import operator

import numpy as np

from ..array import Array
from ..ir.shapes import fmt
from ..trace import composite
from .core import arraylike, normalize_axis
from .creation import zeros
from .elementwise import isnan, sqrt, where
from .linalg_decomp import floats, inv, matrices, svdvals
from .shape import expand_dims, moveaxis

__all__ = ["norm", "vector_norm", "matrix_norm", "cond"]


def _axes(fn: str, axis, ndim: int) -> tuple[int, ...]:
  axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
  axes = tuple(normalize_axis(operator.index(a), ndim, fn) for a in axes)
  if len(set(axes)) != len(axes): raise ValueError(f"{fn}: repeated axis in axis={axis}")
  return axes


def _extreme(x: Array, axes, keepdims: bool, largest: bool) -> Array:
  """The max (or min) over axes; 0 where the axes are empty (as with initial=0)."""
  if any(x.shape[a] == 0 for a in axes):
    return zeros(tuple(1 if i in axes else n for i, n in enumerate(x.shape) if keepdims or i not in axes), x.dtype)
  return x.max(axes, keepdims=keepdims) if largest else x.min(axes, keepdims=keepdims)


def _vector(x: Array, axes: tuple, ord, keepdims: bool) -> Array:
  if x.dtype.is_complex: x = abs(x)
  if ord is None or ord == 2: return sqrt((x * x).sum(axes, keepdims=keepdims))
  if isinstance(ord, str):
    raise ValueError(f"norm: invalid ord {ord!r} for a vector norm; use a number, inf or -inf")
  if ord == math.inf: return _extreme(abs(x), axes, keepdims, True)
  if ord == -math.inf: return abs(x).min(axes, keepdims=keepdims)
  if ord == 0: return (x != 0).astype(x.dtype).sum(axes, keepdims=keepdims)
  if ord == 1: return abs(x).sum(axes, keepdims=keepdims)
  p = float(ord)
  return (abs(x) ** p).sum(axes, keepdims=keepdims) ** (1.0 / p)


def _matrix(x: Array, r: int, c: int, ord, keepdims: bool) -> Array:
  if x.dtype.is_complex and ord not in ("nuc", 2, -2): x = abs(x)
  if ord is None or ord in ("fro", "f"): return sqrt((x * x).sum((r, c), keepdims=keepdims))
  if ord in ("nuc", 2, -2):
    s = svdvals(moveaxis(x, (r, c), (-2, -1)))
    y = s.sum(-1) if ord == "nuc" else _extreme(s, (s.ndim - 1,), False, ord == 2)
    return expand_dims(y, tuple(sorted((r, c)))) if keepdims else y
  if isinstance(ord, str) or ord not in (1, -1, math.inf, -math.inf):
    raise ValueError(f"norm: invalid ord {ord!r} for a matrix norm; use None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")
  over, then = (r, c) if ord in (1, -1) else (c, r)   # column sums for ±1, row sums for ±inf
  sums = abs(x).sum(over, keepdims=True)
  out = _extreme(sums, (then,), True, ord > 0)
  return out if keepdims else out.reshape(tuple(n for i, n in enumerate(out.shape) if i not in (r, c)))


def _magnitudes(x, ord, fn: str = "norm"):
  """A complex x as |x|, which has its norms, except those from singular values (kept complex: _vector and
  _matrix take magnitudes where they need them)."""
  a = arraylike(x, fn)
  if not a.dtype.is_complex or ord in ("nuc", 2, -2) and a.ndim >= 2 and fn != "vector_norm": return a
  return abs(a)


def norm(x, ord=None, axis=None, keepdims: bool = False) -> Array:
  """A vector norm (one axis) or a matrix norm (two axes), as numpy.linalg.norm: with axis None, the 2-norm of the
  flattened array when ord is None, else x must be 1-D or 2-D.

  >>> tnp.linalg.norm(tnp.array([3.0, 4.0]))
  Array(5., dtype=float32)
  >>> tnp.round(tnp.linalg.norm(tnp.array([[1.0, 2.0], [3.0, 4.0]]), ord=2), 4)
  Array(5.465, dtype=float32)
  """
  (a,), dt = floats("norm", _magnitudes(x, ord), complex_ok=True)
  dt = dt.real
  if axis is None:
    if ord is None: return sqrt((a * a).sum(keepdims=keepdims)).astype(dt)
    axis = tuple(range(a.ndim))
  axes = _axes("norm", axis, a.ndim)
  if len(axes) == 1: out = _vector(a, axes, ord, keepdims)
  elif len(axes) == 2: out = _matrix(a, *axes, ord, keepdims)
  else:
    raise ValueError(f"norm: axis must name one axis (a vector norm) or two (a matrix norm), got axis={axis} for x of "
                     f"shape {fmt(a.shape)}")
  return out.astype(dt)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2) -> Array:
  """The vector norm over `axis` (None: every axis, as one flat vector).

  >>> tnp.linalg.vector_norm(tnp.ones((2, 2)), ord=1)
  Array(4., dtype=float32)
  """
  (a,), dt = floats("vector_norm", _magnitudes(x, ord, "vector_norm"))
  axes = tuple(range(a.ndim)) if axis is None else _axes("vector_norm", axis, a.ndim)
  return _vector(a, axes, ord, keepdims).astype(dt)


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro") -> Array:
  """The matrix norm over the last two axes.

  >>> tnp.linalg.matrix_norm(tnp.ones((2, 2)), ord=1)
  Array(2., dtype=float32)
  """
  (a,), dt = floats("matrix_norm", _magnitudes(matrices("matrix_norm", x, name="x"), ord, "matrix_norm"),
                    complex_ok=True)
  dt = dt.real
  return _matrix(a, a.ndim - 2, a.ndim - 1, ord, keepdims).astype(dt)


def cond(x, p=None) -> Array:
  """The condition number of a matrix (or of each in a stack) in the norm p: for None, 2 and -2 the ratio of its
  extreme singular values, else norm(x, p) * norm(inv(x), p) (x square); inf where x is singular.

  >>> tnp.round(tnp.linalg.cond(tnp.array([[1.0, 0.0], [0.0, 4.0]])), 4)
  Array(4., dtype=float32)
  """
  a = matrices("cond", x, name="x")
  if a.shape[-1] == 0 or a.shape[-2] == 0: raise ValueError(f"cond: x must not be empty, got shape {fmt(a.shape)}")
  if p not in (None, 2, -2) and a.shape[-1] != a.shape[-2]:
    raise ValueError(f"cond: x must be square for p={p!r}, got shape {fmt(a.shape)}")
  if p not in (None, 2, -2, 1, -1, "fro", "f", "nuc", math.inf, -math.inf):
    raise ValueError(f"cond: invalid p {p!r}; use None, 'fro', 'nuc', 1, -1, 2, -2, inf or -inf")
  return composite("cond", _cond, a, p=p)


def _cond(a: Array, *, p) -> Array:
  if p in (None, 2, -2):
    s = svdvals(a)
    if p != -2: return s[..., 0] / s[..., -1]
    r = s[..., -1] / s[..., 0]
  else:
    r = norm(a, ord=p, axis=(-2, -1)) * norm(inv(a), ord=p, axis=(-2, -1))
  return where(isnan(r) & ~isnan(a).any((-2, -1)), np.inf, r)
