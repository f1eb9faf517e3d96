"""Windowed reductions as jax.lax.reduce_window: the operand is dilated and padded with the computation's identity,
and each tap of the window contributes one strided slice, combined elementwise by the computation, so every transform
(grad, vmap, jit) goes through ordinary slices and elementwise ops. Max and min send a window's derivative to its first
extremum, as JAX does. Pooling is reduce_window: max pooling with -inf, average pooling as a sum divided by the window's
size.

>>> x = tnp.arange(16.0).reshape(1, 1, 4, 4)
>>> lax.reduce_window(x, -tnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
Array([[[[ 5.,  7.],
         [13., 15.]]]], dtype=float32)
"""
from __future__ import annotations

import builtins
import itertools
import operator
from typing import Callable, Sequence

import numpy as np

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from .control import select
from .conv import _pad, _padding
from .ops import add, broadcast_in_dim, max, min, mul, slice  # noqa: A004

__all__ = ["reduce_window"]


def _first(better: Callable[[UOp, UOp], UOp]):
  """Keep acc unless x is better (or nan): over a window's taps in order the first extremum wins, so its derivative
  goes there alone, as XLA's select-and-scatter."""
  def combine(acc: Array, x: Array) -> Array:
    take = better(x.uop, acc.uop)
    if x.dtype.is_float: take = take.alu(Ops.OR, x.uop.alu(Ops.CMPNE, x.uop))
    return select(Array(take), x, acc)
  return combine


_COMPUTATIONS = [  # (callables, the tracegrad.numpy function's name, name, combine, identity for a dtype)
  ((add, operator.add), "add", "add", add, lambda d: 0),
  ((mul, operator.mul), "multiply", "mul", mul, lambda d: 1),
  ((max,), "maximum", "max", _first(lambda x, acc: acc.alu(Ops.CMPLT, x)), dtypes.min_value),
  ((min,), "minimum", "min", _first(lambda x, acc: x.alu(Ops.CMPLT, acc)), dtypes.max_value),
]


def _numpy_name(f) -> str | None:
  """f's name if f is a tracegrad.numpy function (numpy sits above lax, so its functions are known by name)."""
  module = getattr(f, "__module__", None)
  return getattr(f, "__name__", None) if isinstance(module, str) and module.startswith("tracegrad.numpy.") else None


def _computation(computation, fn: str):
  numpy_name = _numpy_name(computation)
  for fns, np_name, name, combine, identity in _COMPUTATIONS:
    if any(computation is f for f in fns) or numpy_name == np_name: return name, combine, identity
  raise TypeError(f"{fn}: computation {getattr(computation, '__name__', computation)!r} is not supported; use lax.add, "
                  f"lax.max, lax.min or lax.mul (or tnp.add, tnp.maximum, tnp.minimum, tnp.multiply, operator.add, "
                  f"operator.mul)")


def _ints(v, n: int, default: int, arg: str, shape, fn: str) -> tuple[int, ...]:
  if v is None: return (default,) * n
  try:
    out = tuple(operator.index(e) for e in v)
  except TypeError:
    raise TypeError(f"{fn}: {arg} must be a sequence of ints, got {v!r}") from None
  if len(out) != n:
    raise ValueError(f"{fn}: {arg} needs {n} entries, one per dimension of the operand of shape {shape}, got {v!r}")
  if any(e < 1 for e in out): raise ValueError(f"{fn}: {arg} must be positive, got {v!r}")
  return out


def _init(init_value, x: Array, name: str, identity, fn: str) -> tuple[Array, bool]:
  """init_value as a scalar of x's dtype, and whether it is the computation's identity (so combining it is a no-op)."""
  d = x.dtype
  if isinstance(init_value, float) and not d.is_float and name in ("max", "min") and np.isinf(init_value):
    init_value = identity(d)  # -inf / inf as the integer max / min identity, as JAX allows
  v = to_array(init_value, fn=fn)
  if v.shape != (): raise ValueError(f"{fn}: init_value must be a scalar, got shape {v.shape}")
  if v.dtype is not d and not (v.weak_type and (d.is_float or not v.dtype.is_float)):
    raise TypeError(f"{fn}: init_value's dtype {v.dtype} differs from the operand's {d}; pass a scalar of dtype {d}")
  v = to_array(v, d)
  return v, not v.is_traced and bool(np.asarray(v) == identity(d))


def reduce_window(operand, init_value, computation: Callable, window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None, padding="VALID",
                  base_dilation: Sequence[int] | None = None, window_dilation: Sequence[int] | None = None) -> Array:
  """The computation (lax.add, lax.max, lax.min or lax.mul) over every window of the operand, as jax.lax.reduce_window:
  padding 'SAME', 'VALID' or (low, high) pairs (negative ones crop), base_dilation and window_dilation; init_value is
  combined once into each window (padding and the holes of base_dilation add nothing to it).

  >>> lax.reduce_window(tnp.arange(5.0), 0.0, lax.add, (2,), padding="SAME")
  Array([1., 3., 5., 7., 4.], dtype=float32)
  """
  fn = "reduce_window"
  if isinstance(operand, (list, tuple, dict)):
    raise TypeError(f"{fn}: pytrees of operands are not supported; call reduce_window once per array")
  name, combine, identity = _computation(computation, fn)
  x = to_array(operand, fn=fn)
  window = _ints(window_dimensions, x.ndim, 1, "window_dimensions", x.shape, fn)
  strides = _ints(window_strides, x.ndim, 1, "window_strides", x.shape, fn)
  base = _ints(base_dilation, x.ndim, 1, "base_dilation", x.shape, fn)
  wdil = _ints(window_dilation, x.ndim, 1, "window_dilation", x.shape, fn)
  init, is_identity = _init(init_value, x, name, identity, fn)
  pads = _padding(padding, x.shape, window, strides, wdil, fn)  # from the undilated shape, as JAX
  fill = identity(x.dtype)  # padding and holes are skipped: init_value counts once per window, as in JAX
  xp = _pad(x, fill, pads, base)
  out_shape = tuple(builtins.max(0, (n - (k - 1) * d - 1) // s + 1)
                    for n, k, d, s in zip(xp.shape, window, wdil, strides))
  if 0 in out_shape: return broadcast_in_dim(init, out_shape, ())
  acc = None
  for tap in itertools.product(*(range(k) for k in window)):
    start = [t * d for t, d in zip(tap, wdil)]
    part = slice(xp, start, [b + (m - 1) * s + 1 for b, m, s in zip(start, out_shape, strides)], strides)
    acc = part if acc is None else combine(acc, part)
  return acc if is_identity else combine(acc, broadcast_in_dim(init, out_shape, ()))
