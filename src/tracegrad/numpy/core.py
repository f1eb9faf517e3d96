"""What every tracegrad.numpy function uses: conversion, JAX's promotion, broadcasting, axis checks."""
from __future__ import annotations

import warnings
from typing import Sequence

from ..array import Array, to_array
from ..config import config
from ..ir import Ops, UOp, broadcast_shapes, dtypes
from ..ir.dtypes import DType
from ..ir.shapes import fmt
from ..lax.ops import normalize_axis  # noqa: F401  (numpy's modules import it from here)

__all__ = ["Array", "UOp", "Ops", "dtypes", "DType", "fmt", "arraylike", "promote", "broadcast_uops", "elementwise",
           "normalize_axis", "normalize_axes", "wrap", "cast", "const_like", "sum_dtype"]


def arraylike(x, fn: str, pos: int = 0) -> Array:
  """x as an Array when it is one, a numpy array or a scalar; a list or tuple raises TypeError, as in JAX (which
  converts only through asarray/array, so that a nested Python structure is never silently traced element by
  element)."""
  if isinstance(x, Array): return x
  if isinstance(x, (list, tuple)):
    raise TypeError(f"{fn} requires ndarray or scalar arguments, got {type(x).__name__} at position {pos}; convert "
                    f"it with tracegrad.numpy.asarray first")
  return to_array(x, fn=fn)


def wrap(uop: UOp, weak: bool = False) -> Array: return Array(uop, weak)


def promote(fn: str, *xs) -> tuple[list[Array], DType, bool]:
  """The operands converted to their common dtype by JAX's lattice, with the result's weak flag."""
  arrs = [arraylike(x, fn, i) for i, x in enumerate(xs)]
  dt, weak = dtypes.result_type(*((a.dtype, a.weak_type) for a in arrs))
  return [a if a.dtype is dt else Array(a.uop.cast(dt), a.weak_type) for a in arrs], dt, weak


def broadcast_uops(fn: str, *arrs: Array) -> list[UOp]:
  shape = broadcast_shapes(*(a.shape for a in arrs), fn=fn)
  return [a.uop.broadcast(shape) for a in arrs]


def elementwise(op: Ops, *xs, fn: str) -> Array:
  """Apply an elementwise primitive to promoted, broadcast operands (for WHERE, the first is the condition)."""
  if op is Ops.WHERE:
    c = xs[0] if isinstance(xs[0], Array) else to_array(xs[0], fn=fn)
    if c.dtype is not dtypes.bool_: c = Array(c.uop.alu(Ops.CMPNE, UOp.const(c.dtype, 0, c.shape)))
    (a, b), _, weak = promote(fn, *xs[1:])
    uc, ua, ub = broadcast_uops(fn, c, a, b)
    return Array(uc.where(ua, ub), weak)
  arrs, dt, weak = promote(fn, *xs)
  check_rank_promotion(fn, arrs)
  us = broadcast_uops(fn, *arrs)
  out = us[0].alu(op, *us[1:])
  return Array(out, weak and out.dtype is dt)


def check_rank_promotion(fn: str, arrs: list[Array]) -> None:
  """Under jax_numpy_rank_promotion 'warn' or 'raise', operands of different non-zero ranks warn or fail."""
  mode = config.jax_numpy_rank_promotion
  if mode == "allow" or len({a.ndim for a in arrs if a.ndim}) < 2: return
  shapes = " ".join(fmt(a.shape) for a in arrs)
  msg = (f"{fn}: operands of shapes {shapes} broadcast across ranks, and jax_numpy_rank_promotion is {mode!r}; "
         f"give them one rank explicitly (tnp.expand_dims, x[None]) or set it to 'allow'")
  if mode == "raise": raise ValueError(msg)
  warnings.warn(msg, stacklevel=4)


def cast(x: Array, dtype: DType, weak: bool = False) -> Array:
  return x if x.dtype is dtype and x.weak_type == weak else Array(x.uop.cast(dtype), weak)


def const_like(x: Array, value, dtype: DType | None = None) -> UOp:
  """A constant broadcast to x's shape (in x's dtype unless given)."""
  return UOp.const(dtype or x.dtype, value, x.shape)


def normalize_axes(axis, ndim: int, fn: str, name: str = "axis") -> tuple[int, ...]:
  """None -> every axis; an int or a sequence -> sorted distinct non-negative axes."""
  if axis is None: return tuple(range(ndim))
  axes = (axis,) if not isinstance(axis, Sequence) else tuple(axis)
  out = tuple(normalize_axis(a, ndim, fn, name) for a in axes)
  if len(set(out)) != len(out): raise ValueError(f"{fn}: repeated {name} in {axis}")
  return tuple(sorted(out))


def sum_dtype(d: DType) -> DType:
  """JAX's dtype for sums: bool and narrow integers accumulate in the default (unsigned) integer."""
  if d.is_bool: return dtypes.default_int()
  if d.is_unsigned:
    du = dtypes.canonicalize(dtypes.uint64)
    return du if d.itemsize < du.itemsize else d
  if d.is_int: return dtypes.default_int() if d.itemsize < dtypes.default_int().itemsize else d
  return d
