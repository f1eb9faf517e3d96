"""The rest of jax.lax's functions: map (a scan over the leading axis), axis_size, reduce_precision, platform_dependent
and the solvers custom_root and custom_linear_solve.

>>> lax.map(lambda x: x * 2, tnp.arange(3))
Array([0, 2, 4], dtype=int32)
"""
from __future__ import annotations

import math
from typing import Callable

from ..array import Array
from ..ir import Ops, dtypes
from ..trace import axis_size as _axis_size
from . import float_math as fm
from .control import scan
from .elementwise import operands

__all__ = ["map", "axis_size", "reduce_precision", "platform_dependent", "custom_root", "custom_linear_solve"]


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001
  """f applied to each slice of xs (a pytree) along its leading axis, the results stacked, as jax.lax.map (one scan;
  batch_size changes nothing in the result).

  >>> lax.map(lambda x: x.sum(), tnp.ones((2, 3)))
  Array([3., 3.], dtype=float32)
  """
  return scan(lambda carry, x: (carry, f(x)), (), xs)[1]


def axis_size(axis_name) -> int:
  """The number of lanes of a named axis (or the product over a tuple of names), as jax.lax.axis_size.

  >>> tracegrad.vmap(lambda x: x * lax.axis_size("i"), axis_name="i")(tnp.ones(3))
  Array([3., 3., 3.], dtype=float32)
  """
  names = axis_name if isinstance(axis_name, (tuple, list)) else (axis_name,)
  return math.prod(_axis_size(n, "axis_size") for n in names)


def _reduce_precision(u, *, exponent_bits: int, mantissa_bits: int):
  d = u.dtype
  nbits, nmant = d.bits, {2: 10 if d is dtypes.float16 else 7, 4: 23, 8: 52}[d.itemsize]
  nexp = nbits - nmant - 1
  it = fm.uint(d)
  x = u.bitcast(it)
  k = lambda v: fm.k(x, v)
  if mantissa_bits < nmant:
    last = 1 << (nmant - mantissa_bits)
    bias = x.alu(Ops.AND, k(last)).alu(Ops.SHR, k(nmant - mantissa_bits)) + k((last >> 1) - 1)
    x = (x + bias).alu(Ops.AND, k(~(last - 1) & ((1 << nbits) - 1)))
  if exponent_bits < nexp:
    exp_mask = ((1 << nexp) - 1) << nmant
    bias, reduced = (1 << (nexp - 1)) - 1, (1 << (exponent_bits - 1)) - 1
    e = x.alu(Ops.AND, k(exp_mask))
    over = k((bias + reduced) << nmant).alu(Ops.CMPLT, e)
    under = e.alu(Ops.CMPLT, k(((bias - reduced) << nmant) + 1))
    signed_zero = x.alu(Ops.AND, k(1 << (nbits - 1)))
    x = over.where(signed_zero.alu(Ops.OR, k(exp_mask)), under.where(signed_zero, x))
  r = x.bitcast(d)
  return fm.isnan(u).where(u, r)


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int) -> Array:
  """operand rounded to a float format of exponent_bits and mantissa_bits (to nearest, ties to even; overflow to
  inf, underflow to zero), as jax.lax.reduce_precision. Its derivative is taken as 1.

  >>> lax.reduce_precision(tnp.float32(1.0 + 2 ** -10), exponent_bits=8, mantissa_bits=7)
  Array(1., dtype=float32)
  """
  (u,), d, weak = operands("reduce_precision", operand, kind="float")
  e, m = int(exponent_bits), int(mantissa_bits)
  if e < 1 or m < 0:
    raise ValueError(f"reduce_precision: exponent_bits must be >= 1 and mantissa_bits >= 0, got {e} and {m}")
  body = fm.smooth(lambda v: _reduce_precision(v, exponent_bits=e, mantissa_bits=m), lambda v, y: (fm.k(v, 1.0),),
                   "reduce_precision")
  return Array(body(u), weak)


def platform_dependent(*args, default: Callable | None = None, **per_platform: Callable):
  """The branch for the platform tracegrad runs on ('cpu'; else default) applied to args, as
  jax.lax.platform_dependent.

  >>> lax.platform_dependent(2.0, cpu=lambda x: x + 1, default=lambda x: x)
  3.0
  """
  branch = per_platform.get("cpu", default)
  if branch is None:
    raise NotImplementedError(f"platform_dependent: no branch for 'cpu' and no default among {sorted(per_platform)}")
  return branch(*args)


def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable, has_aux: bool = False):
  """solve(f, initial_guess): a root of f found by the given solver, as jax.lax.custom_root; derivatives go through
  the solver's own operations (tangent_solve is not used).

  >>> lax.custom_root(lambda x: x * x - 4.0, 1.0, lambda f, x0: x0 * 2.0, None)
  2.0
  """
  return solve(f, initial_guess)


def custom_linear_solve(matvec: Callable, b, solve: Callable, transpose_solve: Callable | None = None,
                        symmetric: bool = False, has_aux: bool = False):
  """x with matvec(x) = b, as solve(matvec, b) computes it, as jax.lax.custom_linear_solve; derivatives go through
  the solver's own operations.

  >>> lax.custom_linear_solve(lambda x: 2.0 * x, tnp.ones(2), lambda mv, b: b / 2.0)
  Array([0.5, 0.5], dtype=float32)
  """
  out = solve(matvec, b)
  return out
