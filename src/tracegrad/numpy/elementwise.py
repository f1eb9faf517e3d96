"""Elementwise functions of tracegrad.numpy (jax.numpy's names, numpy's values, JAX's dtype promotion).

Every function is a composition of the elementwise primitives of `ir/ops.py`. The only transcendental primitives
are EXP2 LOG2 SIN COS SQRT POW ATAN2, so exp, log, tanh, ... are written here in forms that stay accurate near
their hard points (Kahan's tricks for expm1 and log1p). float16 and bfloat16 are computed in float32 and rounded
back, as XLA does. Integer division never reaches a device with a zero (or, for signed types, -1) divisor.

>>> import tracegrad.numpy as tnp
>>> tnp.exp(tnp.arange(3))
Array([1.       , 2.71828..., 7.38905...], dtype=float32)
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..array import Array
from ..ir import Ops, UOp, dtypes
from ..ir.dtypes import DType
from ..lax.float_math import (acosh as _arccosh, add as _add, asinh as _arcsinh, atanh as _arctanh, c as _c,
                              cbrt as _cbrt, copysign as _copysign, cosh as _cosh, div as _div, eq as _eq,
                              exp as _exp, exp2 as _exp2, expm1 as _expm1, fabs as _fabs, floor as _floor, gt as _gt,
                              hypot as _hypot,
                              isnan as _isnan, k as _k, log as _log, log1p as _log1p, log2 as _log2, lt as _lt,
                              mul as _mul, ne as _ne, round_even as _round_even, sel as _sel, signbit as _signbit,
                              sinh as _sinh, sint as _sint, smooth as _smooth, sqrt as _sqrt, sqrt1mx2 as _sqrt1mx2,
                              sub as _sub, tanh as _tanh)
from ..lax import complex_math as _cm
from .core import arraylike as _arr, broadcast_uops, check_rank_promotion, promote
from .sorting import nonzero as _nonzero

__all__ = [
  # arithmetic
  "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod", "fmod", "divmod",
  "power", "pow", "float_power", "negative", "positive", "abs", "absolute", "fabs", "sign", "reciprocal", "square",
  # powers, exponentials, logarithms
  "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
  # trigonometric and hyperbolic
  "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
  "arctanh", "asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh", "deg2rad", "rad2deg", "degrees", "radians",
  "hypot", "sinc",
  # floating point
  "copysign", "nextafter", "maximum", "minimum", "fmax", "fmin", "floor", "ceil", "round", "around", "rint", "trunc", "fix",
  "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "nan_to_num", "heaviside", "clip",
  "conj", "conjugate", "real", "imag", "angle", "iscomplex", "isreal", "real_if_close",
  # comparison and logic
  "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
  "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "invert", "bitwise_invert", "left_shift",
  "right_shift", "bitwise_left_shift", "bitwise_right_shift", "where",
]

LN2, LOG2E, LOG10_2 = math.log(2.0), 1.0 / math.log(2.0), math.log10(2.0)
INF, NAN = float("inf"), float("nan")
F32 = dtypes.float32


# ---------------------------------------------------------------------------------------------------------------
# UOp helpers: the compositions below are written on UOps of one shape and dtype; a Python number is a constant
# ---------------------------------------------------------------------------------------------------------------


def _named(f, fn: str, doc: str):
  """f under the public name `fn`, with docstring `doc` (for functions made by the factories below)."""
  f.__name__ = f.__qualname__ = fn
  f.__doc__ = doc
  return f

def _and(a, b): return a.alu(Ops.AND, b)
def _or(a, b): return a.alu(Ops.OR, b)
def _not(c): return c.alu(Ops.XOR, _k(c, True))
def _atan2(y, x): return y.alu(Ops.ATAN2, _c(y, x))


# ---------------------------------------------------------------------------------------------------------------
# argument handling
# ---------------------------------------------------------------------------------------------------------------

def _to_float(a: Array) -> Array:
  """Ints and bool become the default float (float32), keeping the weak flag."""
  return a if a.dtype.is_inexact else Array(a.uop.cast(dtypes.default_float()), a.weak_type)


def _complex_body(fn: str, dt: DType):
  """The complex form of the function named fn; a TypeError where numpy has none."""
  if (body := _cm.BODIES.get(fn)) is None:
    raise TypeError(f"{fn}: not defined on complex values (got {dt}); apply it to tnp.real(x) and tnp.imag(x)")
  return body


def _real_only(fn: str, dt: DType) -> None:
  if dt.is_complex: raise TypeError(f"{fn}: not defined on complex values (got {dt}); use tnp.real(x) or tnp.abs(x)")


def _args(fn: str, *xs):
  """Operands promoted by JAX's lattice and broadcast: (uops, dtype, weak)."""
  arrs, dt, weak = promote(fn, *xs)
  check_rank_promotion(fn, arrs)
  return broadcast_uops(fn, *arrs), dt, weak


def _numeric(us, dt):
  """bool operands of numeric functions become int32 (as jnp's promote_args_numeric)."""
  if not dt.is_bool: return us, dt
  return [u.cast(dtypes.int32) for u in us], dtypes.int32


def _inexact(us, dt):
  if dt.is_inexact: return us, dt
  d = dtypes.default_float()
  return [u.cast(d) for u in us], d


def _wide(us, dt):
  """Half types are computed in float32 (and the result cast back by the caller)."""
  return ([u.cast(F32) for u in us], F32) if dt.itemsize == 2 and dt.is_float else (us, dt)


def _float_unary(fn: str, body, doc: str = "", wide: bool = True):
  """A float function of one argument: ints and bool give float32, float16/bfloat16 compute in float32."""
  def f(x) -> Array:
    a = _to_float(_arr(x, fn))
    u, dt = a.uop, a.dtype
    if dt.is_complex: return Array(_complex_body(fn, dt)(u), a.weak_type)
    if wide and dt.itemsize == 2: return Array(body(u.cast(F32)).cast(dt), a.weak_type)
    return Array(body(u), a.weak_type)
  return _named(f, fn, doc or f"Elementwise {fn}, as jax.numpy.{fn}.")


def _float_binary(fn: str, body, doc: str = ""):
  """A float function of two arguments: promoted, ints and bool to float32, half types computed in float32."""
  def f(x, y) -> Array:
    us, dt, weak = _args(fn, x, y)
    us, dt = _inexact(us, dt)
    _real_only(fn, dt)
    ws, _ = _wide(us, dt)
    return Array(body(*ws).cast(dt), weak)
  return _named(f, fn, doc or f"Elementwise {fn}, as jax.numpy.{fn}.")


# ---------------------------------------------------------------------------------------------------------------
# arithmetic
# ---------------------------------------------------------------------------------------------------------------

def _arith(op: Ops, fn: str, bool_op: Ops | None, doc: str):
  def f(x, y) -> Array:
    us, dt, weak = _args(fn, x, y)
    if dt.is_bool:
      if bool_op is None: raise TypeError(f"{fn}: not defined on bool operands; use logical_xor, or cast to int first")
      return Array(us[0].alu(bool_op, us[1]), weak)
    return Array(us[0].alu(op, us[1]), weak)
  return _named(f, fn, doc)


add = _arith(Ops.ADD, "add", Ops.OR, "x + y elementwise (logical or for bools).\n\n  >>> tnp.add(tnp.arange(3), 1)\n"
             "  Array([1, 2, 3], dtype=int32)\n  ")
subtract = _arith(Ops.SUB, "subtract", None, "x - y elementwise.\n\n  >>> tnp.subtract(3, tnp.arange(3))\n"
                  "  Array([3, 2, 1], dtype=int32)\n  ")
multiply = _arith(Ops.MUL, "multiply", Ops.AND, "x * y elementwise (logical and for bools).\n\n"
                  "  >>> tnp.multiply(tnp.arange(3), 2)\n  Array([0, 2, 4], dtype=int32)\n  ")


def true_divide(x, y) -> Array:
  """x / y elementwise; integers divide as float32.

  >>> tnp.true_divide(tnp.arange(3), 2)
  Array([0. , 0.5, 1. ], dtype=float32)
  """
  us, dt, weak = _args("true_divide", x, y)
  (a, b), dt = _inexact(us, dt)
  return Array(_div(a, b), weak)


divide = true_divide


def _int_guard(b: UOp):
  """A divisor safe on every device (0 and -1 replaced by 1), and the masks of where it was 0 and -1."""
  zero = _eq(b, 0)
  if b.dtype.is_unsigned: return _sel(zero, 1, b), zero, None
  neg1 = _eq(b, -1)
  return _sel(_or(zero, neg1), 1, b), zero, neg1


def _int_divmod(a: UOp, b: UOp, want_div=True, want_mod=True):
  """numpy's integer floor division and remainder (x // 0 == x % 0 == 0, INT_MIN // -1 wraps)."""
  bs, zero, neg1 = _int_guard(b)
  q, r = a.alu(Ops.IDIV, bs), a.alu(Ops.MOD, bs)  # truncating, with the dividend's sign
  if not a.dtype.is_unsigned:
    fix = _and(_ne(r, 0), _ne(_lt(r, 0), _lt(bs, 0)))
    q = _sel(neg1, -a, _sub(q, fix.cast(a.dtype)))
    r = _sel(fix, _add(r, bs), r)
  return (_sel(zero, 0, q) if want_div else None), (_sel(zero, 0, r) if want_mod else None)


def _float_divmod(a: UOp, b: UOp):
  """numpy's npy_divmod: the floor quotient and the remainder with the divisor's sign."""
  mod = a.alu(Ops.MOD, b)
  div = _div(_sub(a, mod), b)
  nz = _ne(mod, 0.0)
  fix = _and(nz, _ne(_lt(b, 0.0), _lt(mod, 0.0)))
  mod = _sel(fix, _add(mod, b), _sel(nz, mod, _copysign(_k(a, 0.0), b)))
  div = _sel(fix, _sub(div, 1.0), div)
  fl = _floor(div)
  fl = _sel(_gt(_sub(div, fl), 0.5), _add(fl, 1.0), fl)
  q = _div(a, b)
  fl = _sel(_ne(div, 0.0), fl, _copysign(_k(a, 0.0), q))
  bz = _eq(b, 0.0)
  return _sel(bz, q, fl), _sel(bz, a.alu(Ops.MOD, b), mod)


def _divmod_impl(fn: str, x, y, want_div: bool, want_mod: bool):
  us, dt, weak = _args(fn, x, y)
  _real_only(fn, dt)
  (a, b), dt = _numeric(us, dt)
  if dt.is_int:
    q, r = _int_divmod(a, b, want_div, want_mod)
    return (None if q is None else Array(q, weak)), (None if r is None else Array(r, weak))
  (wa, wb), _ = _wide([a, b], dt)
  q, r = _float_divmod(wa, wb)
  return Array(q.cast(dt), weak), Array(r.cast(dt), weak)


def floor_divide(x, y) -> Array:
  """x // y elementwise, rounding toward -inf (integer division by zero gives 0).

  >>> tnp.floor_divide(tnp.array([7, -7]), 2)
  Array([ 3, -4], dtype=int32)
  """
  return _divmod_impl("floor_divide", x, y, True, False)[0]


def remainder(x, y) -> Array:
  """x % y elementwise, with the sign of y (integer remainder by zero gives 0).

  >>> tnp.remainder(tnp.array([7, -7]), 3)
  Array([1, 2], dtype=int32)
  """
  return _divmod_impl("remainder", x, y, False, True)[1]


mod = remainder


def divmod(x, y) -> tuple[Array, Array]:
  """(floor_divide(x, y), remainder(x, y)).

  >>> tnp.divmod(tnp.array([7, -7]), 2)
  (Array([ 3, -4], dtype=int32), Array([1, 1], dtype=int32))
  """
  return _divmod_impl("divmod", x, y, True, True)


def fmod(x, y) -> Array:
  """The C remainder: x - trunc(x / y) * y, with the sign of x (integer fmod by zero gives 0).

  >>> tnp.fmod(tnp.array([7, -7]), 3)
  Array([ 1, -1], dtype=int32)
  """
  us, dt, weak = _args("fmod", x, y)
  _real_only("fmod", dt)
  (a, b), dt = _numeric(us, dt)
  if dt.is_int:
    bs, zero, _ = _int_guard(b)
    return Array(_sel(zero, 0, a.alu(Ops.MOD, bs)), weak)
  return Array(a.alu(Ops.MOD, b), weak)


def _int_power(a: UOp, b: UOp) -> UOp:
  """a ** b exactly (wrapping as numpy) by square-and-multiply over the bits of b; b < 0 gives 0 except for
  bases 1 and -1 (as JAX)."""
  dt = a.dtype
  e = b if dt.is_unsigned else _sel(_lt(b, 0), 0, b)
  acc, base, n = _k(a, 1), a, dt.bits if dt.is_unsigned else dt.bits - 1
  for i in range(n):
    bit = _ne(_and(e.alu(Ops.SHR, _k(e, i)), _k(e, 1)), 0)
    acc = _sel(bit, _mul(acc, base), acc)
    if i < n - 1: base = _mul(base, base)
  if dt.is_unsigned: return acc
  odd = _ne(_and(b, _k(b, 1)), 0)
  neg = _sel(_eq(a, 1), 1, _sel(_eq(a, -1), _sel(odd, _k(a, -1), _k(a, 1)), 0))
  return _sel(_lt(b, 0), neg, acc)


def power(x, y) -> Array:
  """x ** y elementwise; integer powers of integers are exact.

  >>> tnp.power(2, tnp.arange(4))
  Array([1, 2, 4, 8], dtype=int32)
  """
  us, dt, weak = _args("power", x, y)
  us, dt = _numeric(us, dt)
  if dt.is_int: return Array(_int_power(*us), weak)
  (a, b), _ = _wide(us, dt)
  if type(y) is int and abs(y) <= 16: return Array(_integer_pow(a, y).cast(dt), weak)
  # x ** 2.0 is x * x, the same bits (a square rounded once either way), as XLA simplifies it; its gradient 2 x
  if type(y) is float and y == 2.0 and not dt.is_complex: return Array(_integer_pow(a, 2).cast(dt), weak)
  if dt.is_complex: return Array(_cm.power(a, b), weak)
  return Array(a.alu(Ops.POW, b).cast(dt), weak)


def _integer_pow(a: UOp, n: int) -> UOp:
  """a ** n for a Python int exponent, as jax.lax.integer_pow: multiplications by repeated squaring (x ** 2 is x * x),
  the reciprocal for a negative n."""
  out, base, k = None, a, abs(n)
  while k:
    if k & 1: out = base if out is None else out * base
    k >>= 1
    if k: base = base * base
  if out is None: return UOp.const(a.dtype, 1, a.shape)
  return out.alu(Ops.RECIP) if n < 0 else out


pow = power


def float_power(x, y) -> Array:
  """x ** y computed in floating point (float32 unless 64-bit mode is on, as JAX).

  >>> tnp.float_power(2, -1)
  Array(0.5, dtype=float32, weak_type=True)
  """
  us, dt, weak = _args("float_power", x, y)
  us, dt = _inexact(us, dt)
  if dt.is_complex: return Array(_cm.power(*us), weak)
  (a, b), _ = _wide(us, dt)
  return Array(a.alu(Ops.POW, b).cast(dt), weak)


def negative(x) -> Array:
  """-x elementwise (unsigned integers wrap).

  >>> tnp.negative(tnp.arange(3))
  Array([ 0, -1, -2], dtype=int32)
  """
  a = _arr(x, "negative")
  if a.dtype.is_bool: raise TypeError("negative: not defined on bool; use logical_not")
  return Array(-a.uop, a.weak_type)


def positive(x) -> Array:
  """+x: the array itself."""
  return _arr(x, "positive")


def abs(x) -> Array:
  """|x| elementwise (|INT_MIN| wraps to INT_MIN, as numpy).

  >>> tnp.abs(tnp.array([-1.5, 2.0]))
  Array([1.5, 2. ], dtype=float32)
  """
  a = _arr(x, "abs")
  u = a.uop
  if u.dtype.is_bool or u.dtype.is_unsigned: return a
  if u.dtype.is_int: return Array(_sel(_lt(u, 0), -u, u), a.weak_type)
  if u.dtype.is_complex: return Array(_cm.abs_(u), a.weak_type)
  return Array(_fabs(u), a.weak_type)


absolute = abs
fabs = _float_unary("fabs", _fabs, "|x| as a float (integers give float32).", wide=False)


def sign(x) -> Array:
  """-1, 0 or 1 by the sign of x (nan for nan; zeros keep their sign).

  >>> tnp.sign(tnp.array([-2.0, 0.0, 3.0]))
  Array([-1.,  0.,  1.], dtype=float32)
  """
  a = _arr(x, "sign")
  u = a.uop
  if u.dtype.is_bool: raise TypeError("sign: not defined on bool; cast to an integer type first")
  if u.dtype.is_unsigned: return Array(_gt(u, 0).cast(u.dtype), a.weak_type)
  if u.dtype.is_complex: return Array(_cm.sign(u), a.weak_type)
  s = _sel(_gt(u, 0), 1, _sel(_lt(u, 0), -1, u))  # u itself where it is 0 (and nan)
  return Array(s, a.weak_type)


reciprocal = _float_unary("reciprocal", lambda u: u.alu(Ops.RECIP), "1 / x (integers give float32, as JAX).\n\n"
                          "  >>> tnp.reciprocal(tnp.array([2.0, 4.0]))\n  Array([0.5 , 0.25], dtype=float32)\n  ",
                          wide=False)


def square(x) -> Array:
  """x * x elementwise (bool gives int32, as JAX).

  >>> tnp.square(tnp.arange(3))
  Array([0, 1, 4], dtype=int32)
  """
  a = _arr(x, "square")
  u = a.uop.cast(dtypes.int32) if a.dtype.is_bool else a.uop
  return Array(_mul(u, u), a.weak_type)


# ---------------------------------------------------------------------------------------------------------------
# powers, exponentials and logarithms
# ---------------------------------------------------------------------------------------------------------------

sqrt = _float_unary("sqrt", _sqrt, "The non-negative square root (nan for x < 0).\n\n"
                    "  >>> tnp.sqrt(tnp.array([4.0, 9.0]))\n  Array([2., 3.], dtype=float32)\n  ")
cbrt = _float_unary("cbrt", _smooth(_cbrt, lambda x, y: (_div(_k(y, 1.0), _mul(_mul(y, y), 3.0)),)), "The real cube root.\n\n  >>> tnp.cbrt(tnp.array([-8.0, 27.0]))\n"
                    "  Array([-2.,  3.], dtype=float32)\n  ")
exp = _float_unary("exp", _exp, "e ** x.\n\n  >>> tnp.exp(tnp.array([0.0, 1.0]))\n"
                   "  Array([1.       , 2.71828...], dtype=float32)\n  ")
exp2 = _float_unary("exp2", _exp2, "2 ** x.\n\n  >>> tnp.exp2(tnp.array([3.0]))\n  Array([8.], dtype=float32)\n  ")
expm1 = _float_unary("expm1", _smooth(_expm1, lambda x, y: (_add(y, 1.0),)), "exp(x) - 1, accurate for small x.\n\n  >>> tnp.expm1(tnp.array([1e-10]))\n"
                     "  Array([1.e-10], dtype=float32)\n  ")
log = _float_unary("log", _log, "The natural logarithm.\n\n  >>> tnp.log(tnp.array([1.0]))\n"
                   "  Array([0.], dtype=float32)\n  ")
log2 = _float_unary("log2", _log2, "The base-2 logarithm.\n\n  >>> tnp.log2(tnp.array([8.0]))\n"
                    "  Array([3.], dtype=float32)\n  ")
log10 = _float_unary("log10", lambda u: _mul(_log2(u), LOG10_2), "The base-10 logarithm.\n\n"
                     "  >>> tnp.log10(tnp.array([100.0]))\n  Array([2.], dtype=float32)\n  ")
log1p = _float_unary("log1p", _smooth(_log1p, lambda x, y: (_div(_k(x, 1.0), _add(x, 1.0)),)), "log(1 + x), accurate for small x.\n\n  >>> tnp.log1p(tnp.array([1e-10]))\n"
                     "  Array([1.e-10], dtype=float32)\n  ")


def _logaddexp(a, b, exp_fn, scale):
  m = a.alu(Ops.MAX, b)
  d = _sub(a, b)
  r = _add(m, _mul(_log1p(exp_fn(-_fabs(d))), scale))
  return _sel(_isnan(d), _add(a, b), r)  # nan operands, or infinities of one sign


logaddexp = _float_binary("logaddexp", _smooth(lambda a, b: _logaddexp(a, b, _exp, 1.0),
                                                  lambda a, b, y: (_exp(_sub(a, y)), _exp(_sub(b, y))), "logaddexp"),
                          "log(exp(x) + exp(y)) without overflow.\n\n  >>> tnp.logaddexp(0.0, 0.0)\n"
                          "  Array(0.693147..., dtype=float32, weak_type=True)\n  ")
logaddexp2 = _float_binary("logaddexp2", _smooth(lambda a, b: _logaddexp(a, b, _exp2, LOG2E),
                                                    lambda a, b, y: (_exp2(_sub(a, y)), _exp2(_sub(b, y))), "logaddexp2"),
                           "log2(2 ** x + 2 ** y) without overflow.\n\n  >>> tnp.logaddexp2(1.0, 1.0)\n"
                           "  Array(2., dtype=float32, weak_type=True)\n  ")


# ---------------------------------------------------------------------------------------------------------------
# trigonometric and hyperbolic
# ---------------------------------------------------------------------------------------------------------------



def _sinc(x):
  y = _mul(x, math.pi)
  return _sel(_eq(x, 0.0), 1.0, _div(y.alu(Ops.SIN), y))


def _sinc_derivative(x, y):
  zero = _eq(x, 0.0)
  safe = _sel(zero, 1.0, x)
  return (_sel(zero, 0.0, _div(_sub(_mul(x, math.pi).alu(Ops.COS), y), safe)),)


sin = _float_unary("sin", lambda u: u.alu(Ops.SIN), "The sine, x in radians.\n\n  >>> tnp.sin(tnp.array([0.0]))\n"
                   "  Array([0.], dtype=float32)\n  ")
cos = _float_unary("cos", lambda u: u.alu(Ops.COS), "The cosine, x in radians.\n\n  >>> tnp.cos(tnp.array([0.0]))\n"
                   "  Array([1.], dtype=float32)\n  ")
tan = _float_unary("tan", lambda u: _div(u.alu(Ops.SIN), u.alu(Ops.COS)), "The tangent, x in radians.\n\n"
                   "  >>> tnp.tan(tnp.array([0.0]))\n  Array([0.], dtype=float32)\n  ")
arcsin = _float_unary("arcsin", lambda u: _atan2(u, _sqrt1mx2(u)), "The inverse sine, in [-pi/2, pi/2].\n\n"
                      "  >>> tnp.arcsin(tnp.array([0.0]))\n  Array([0.], dtype=float32)\n  ")
arccos = _float_unary("arccos", lambda u: _atan2(_sqrt1mx2(u), u), "The inverse cosine, in [0, pi].\n\n"
                      "  >>> tnp.arccos(tnp.array([1.0]))\n  Array([0.], dtype=float32)\n  ")
arctan = _float_unary("arctan", lambda u: _atan2(u, 1.0), "The inverse tangent, in [-pi/2, pi/2].\n\n"
                      "  >>> tnp.arctan(tnp.array([0.0]))\n  Array([0.], dtype=float32)\n  ")
arctan2 = _float_binary("arctan2", _atan2, "The angle of the point (x, y): arctan(y / x) in the right quadrant.\n\n"
                        "  >>> tnp.arctan2(1.0, 1.0)\n  Array(0.785398..., dtype=float32, weak_type=True)\n  ")
sinh = _float_unary("sinh", _smooth(_sinh, lambda x, y: (_cosh(x),)), "The hyperbolic sine.\n\n  >>> tnp.sinh(tnp.array([0.0]))\n"
                    "  Array([0.], dtype=float32)\n  ")
cosh = _float_unary("cosh", _cosh, "The hyperbolic cosine.\n\n  >>> tnp.cosh(tnp.array([0.0]))\n"
                    "  Array([1.], dtype=float32)\n  ")
tanh = _float_unary("tanh", _smooth(_tanh, lambda x, y: (_sub(_k(y, 1.0), _mul(y, y)),)), "The hyperbolic tangent.\n\n  >>> tnp.tanh(tnp.array([0.0]))\n"
                    "  Array([0.], dtype=float32)\n  ")
arcsinh = _float_unary("arcsinh", _smooth(_arcsinh, lambda x, y: (_div(_k(x, 1.0), _hypot(x, _k(x, 1.0))),)), "The inverse hyperbolic sine.\n\n  >>> tnp.arcsinh(tnp.array([0.0]))\n"
                       "  Array([0.], dtype=float32)\n  ")
arccosh = _float_unary("arccosh", _arccosh, "The inverse hyperbolic cosine (nan for x < 1).\n\n"
                       "  >>> tnp.arccosh(tnp.array([1.0]))\n  Array([0.], dtype=float32)\n  ")
arctanh = _float_unary("arctanh", _smooth(_arctanh, lambda x, y: (_div(_k(x, 1.0), _mul(_sub(_k(x, 1.0), x), _add(x, 1.0))),)), "The inverse hyperbolic tangent (nan for |x| > 1).\n\n"
                       "  >>> tnp.arctanh(tnp.array([0.0]))\n  Array([0.], dtype=float32)\n  ")
asin, acos, atan, atan2, asinh, acosh, atanh = arcsin, arccos, arctan, arctan2, arcsinh, arccosh, arctanh
deg2rad = _float_unary("deg2rad", lambda u: _mul(u, math.pi / 180.0), "Degrees to radians.\n\n"
                       "  >>> tnp.deg2rad(tnp.array([180.0]))\n  Array([3.1415927], dtype=float32)\n  ", wide=False)
rad2deg = _float_unary("rad2deg", lambda u: _mul(u, 180.0 / math.pi), "Radians to degrees.\n\n"
                       "  >>> tnp.rad2deg(tnp.array([3.1415927]))\n  Array([180.], dtype=float32)\n  ", wide=False)
radians, degrees = deg2rad, rad2deg
sinc = _float_unary("sinc", _smooth(_sinc, _sinc_derivative), "sin(pi x) / (pi x), 1 at 0.\n\n  >>> tnp.sinc(tnp.array([0.0]))\n"
                    "  Array([1.], dtype=float32)\n  ")


hypot = _float_binary("hypot", _hypot, "sqrt(x^2 + y^2) without overflow or underflow.\n\n"
                      "  >>> tnp.hypot(3.0, 4.0)\n  Array(5., dtype=float32, weak_type=True)\n  ")


# ---------------------------------------------------------------------------------------------------------------
# floating point
# ---------------------------------------------------------------------------------------------------------------

copysign = _float_binary("copysign", _copysign, "|x| with the sign of y.\n\n  >>> tnp.copysign(2.0, -0.0)\n"
                         "  Array(-2., dtype=float32, weak_type=True)\n  ")


def _nextafter(x: UOp, y: UOp) -> UOp:
  it = _sint(x.dtype)
  bits = x.bitcast(it)
  # away from zero when stepping towards y means one more in the magnitude bits (a negative x's int is negative too)
  out = _sel(_eq(_gt(y, x), _gt(x, 0.0)), _add(bits, 1), _sub(bits, 1)).bitcast(x.dtype)
  out = _sel(_eq(x, 0.0), _copysign(_k(x, 1, it).bitcast(x.dtype), y), out)   # the smallest subnormal towards y
  out = _sel(_eq(x, y), y, out)
  return _sel(_or(_isnan(x), _isnan(y)), NAN, out)


def nextafter(x1, x2, /) -> Array:
  """The next representable value after x1 towards x2, in their promoted floating type.

  >>> tnp.nextafter(tnp.float16(1), tnp.float16(2))
  Array(1.001, dtype=float16)
  """
  us, dt, weak = _args("nextafter", x1, x2)
  us, dt = _inexact(us, dt)
  return Array(_nextafter(*us), weak)


def _minmax(op: Ops, fn: str, ignore_nan: bool, doc: str):
  def f(x, y) -> Array:
    (a, b), dt, weak = _args(fn, x, y)
    if dt.is_complex: return Array(_complex_minmax(op, a, b, ignore_nan), weak)
    out = a.alu(op, b)
    if ignore_nan and dt.is_float: out = _sel(_isnan(a), b, _sel(_isnan(b), a, out))
    return Array(out, weak)
  return _named(f, fn, doc)


def _complex_minmax(op: Ops, a: UOp, b: UOp, ignore_nan: bool) -> UOp:
  """numpy's maximum or minimum of complex values: by the real parts, then the imaginary ones; nan wins (ignore_nan:
  loses)."""
  first = _lex_less(b, a) if op is Ops.MAX else _lex_less(a, b)
  out = _cm._pick(first, a, b)
  nan_a, nan_b = _complex_isnan(a), _complex_isnan(b)
  if ignore_nan: return _cm._pick(nan_a, b, _cm._pick(nan_b, a, out))
  return _cm._pick(nan_a, a, _cm._pick(nan_b, b, out))


def _complex_isnan(u: UOp) -> UOp: return _or(_isnan(_cm.re(u)), _isnan(_cm.im(u)))


def _lex_less(a: UOp, b: UOp) -> UOp:
  """a < b for complex values as numpy orders them: by the real parts, then the imaginary ones."""
  ra, rb = _cm.re(a), _cm.re(b)
  return _or(_lt(ra, rb), _and(_eq(ra, rb), _lt(_cm.im(a), _cm.im(b))))


maximum = _minmax(Ops.MAX, "maximum", False, "The elementwise maximum; nan if either is nan.\n\n"
                  "  >>> tnp.maximum(tnp.arange(3), 1)\n  Array([1, 1, 2], dtype=int32)\n  ")
minimum = _minmax(Ops.MIN, "minimum", False, "The elementwise minimum; nan if either is nan.\n\n"
                  "  >>> tnp.minimum(tnp.arange(3), 1)\n  Array([0, 1, 1], dtype=int32)\n  ")
fmax = _minmax(Ops.MAX, "fmax", True, "The elementwise maximum, ignoring a nan operand.\n\n"
               "  >>> tnp.fmax(tnp.array([1.0, tnp.nan]), 0.0)\n  Array([1., 0.], dtype=float32)\n  ")
fmin = _minmax(Ops.MIN, "fmin", True, "The elementwise minimum, ignoring a nan operand.\n\n"
               "  >>> tnp.fmin(tnp.array([1.0, tnp.nan]), 0.0)\n  Array([0., 0.], dtype=float32)\n  ")


def _rounding(fn: str, body, doc: str):
  """A rounding function: the identity on integers and bool, exact on floats (no half-type widening needed)."""
  def f(x) -> Array:
    a = _arr(x, fn)
    _real_only(fn, a.dtype)
    return a if not a.dtype.is_float else Array(body(a.uop), a.weak_type)
  return _named(f, fn, doc)


def _trunc(u): return _copysign(_floor(_fabs(u)), u)


floor = _rounding("floor", _floor, "The largest integer <= x.\n\n  >>> tnp.floor(tnp.array([-1.5, 1.5]))\n"
                  "  Array([-2.,  1.], dtype=float32)\n  ")
ceil = _rounding("ceil", lambda u: -_floor(-u), "The smallest integer >= x.\n\n  >>> tnp.ceil(tnp.array([-1.5, 1.5]))\n"
                 "  Array([-1.,  2.], dtype=float32)\n  ")
trunc = _rounding("trunc", _trunc, "x rounded toward zero.\n\n  >>> tnp.trunc(tnp.array([-1.5, 1.5]))\n"
                  "  Array([-1.,  1.], dtype=float32)\n  ")
fix = _rounding("fix", _trunc, "x rounded toward zero (the same as trunc).\n\n  >>> tnp.fix(tnp.array([-1.5]))\n"
                "  Array([-1.], dtype=float32)\n  ")


def rint(x) -> Array:
  """x rounded to the nearest integer, halves to even (integers give float32, as JAX).

  >>> tnp.rint(tnp.array([0.5, 1.5, 2.5]))
  Array([0., 2., 2.], dtype=float32)
  """
  a = _to_float(_arr(x, "rint"))
  u = a.uop
  if a.dtype.is_complex: return Array(_cm.cx(_round_even(_cm.re(u)), _round_even(_cm.im(u))), a.weak_type)
  return Array(_round_even(u), a.weak_type)


def _int_round(u: UOp, decimals: int) -> UOp:
  """Integers rounded to 10**-decimals (decimals < 0), halves to even, exactly."""
  scale = 10 ** -decimals
  if scale > dtypes.max_value(u.dtype): return _k(u, 0)
  q, r = _int_divmod(u, _k(u, scale))
  rest = _sub(_k(r, scale), r)  # r >= 0 here
  up = _or(_gt(r, rest), _and(_eq(r, rest), _ne(_and(q, _k(q, 1)), 0)))
  return _mul(_add(q, up.cast(u.dtype)), scale)


def round(a, decimals: int = 0, out=None) -> Array:
  """a rounded to `decimals` decimal places, halves to even (as numpy).

  >>> tnp.round(tnp.array([0.5, 1.5, 2.675]), 2)
  Array([0.5 , 1.5 , 2.68], dtype=float32)
  """
  if out is not None: raise TypeError("round: the out argument is not supported; arrays are immutable, use the result")
  x = _arr(a, "round")
  try:
    decimals = int(decimals.__index__())
  except (AttributeError, TypeError):
    raise TypeError(f"round: decimals must be an integer, got {type(decimals).__name__}") from None
  u, dt = x.uop, x.dtype
  if dt.is_complex:   # each part rounded, as numpy
    return Array(_cm.cx(*(round(Array(p(u)), decimals).uop for p in (_cm.re, _cm.im))), x.weak_type)
  if dt.is_bool or (dt.is_int and decimals >= 0): return x
  if dt.is_int: return Array(_int_round(u, decimals), x.weak_type)
  if decimals == 0: return Array(_round_even(u), x.weak_type)
  w = u.cast(F32) if dt.itemsize == 2 else u
  f = 10.0 ** builtins.abs(decimals)
  r = _div(_round_even(_mul(w, f)), f) if decimals > 0 else _mul(_round_even(_div(w, f)), f)
  return Array(r.cast(dt), x.weak_type)


around = round


def _float_pred(fn: str, body, int_value: bool, doc: str, join=None):
  """A predicate on floats (int_value for integers); on complex values `join` (or, and) of it on both parts, or a
  TypeError where join is None."""
  def f(x) -> Array:
    a = _arr(x, fn)
    u = a.uop
    if u.dtype.is_complex:
      if join is None: raise TypeError(f"{fn}: not defined on complex values (got {u.dtype})")
      return Array(join(body(_cm.re(u)), body(_cm.im(u))))
    return Array(body(u) if u.dtype.is_float else _k(u, int_value, dtypes.bool_))
  return _named(f, fn, doc)


isnan = _float_pred("isnan", _isnan, False, "Whether x is nan.\n\n  >>> tnp.isnan(tnp.array([1.0, tnp.nan]))\n"
                    "  Array([False,  True], dtype=bool)\n  ", _or)
isinf = _float_pred("isinf", lambda u: _eq(_fabs(u), INF), False, "Whether x is +inf or -inf.\n\n"
                    "  >>> tnp.isinf(tnp.array([1.0, -tnp.inf]))\n  Array([False,  True], dtype=bool)\n  ", _or)
isfinite = _float_pred("isfinite", lambda u: _lt(_fabs(u), INF), True, "Whether x is neither inf nor nan.\n\n"
                       "  >>> tnp.isfinite(tnp.array([1.0, tnp.nan]))\n  Array([ True, False], dtype=bool)\n  ", _and)
isposinf = _float_pred("isposinf", lambda u: _eq(u, INF), False, "Whether x is +inf.")
isneginf = _float_pred("isneginf", lambda u: _eq(u, -INF), False, "Whether x is -inf.")


def signbit(x) -> Array:
  """Whether the sign bit of x is set (also for -0.0 and negative nan).

  >>> tnp.signbit(tnp.array([-0.0, 1.0]))
  Array([ True, False], dtype=bool)
  """
  a = _arr(x, "signbit")
  u = a.uop
  _real_only("signbit", u.dtype)
  if u.dtype.is_float: return Array(_signbit(u))
  if u.dtype.is_int and not u.dtype.is_unsigned: return Array(_lt(u, 0))
  return Array(_k(u, False, dtypes.bool_))


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Array:
  """x with nan, +inf and -inf replaced by `nan`, `posinf` and `neginf` (default: 0 and the largest finite values).

  >>> tnp.nan_to_num(tnp.array([tnp.nan, tnp.inf]))
  Array([0.0000000e+00, 3.4028235e+38], dtype=float32)
  """
  a = _arr(x, "nan_to_num")
  u, dt = a.uop, a.dtype
  if dt.is_complex:
    parts = [nan_to_num(Array(p(u)), copy, nan, posinf, neginf).uop for p in (_cm.re, _cm.im)]
    return Array(_cm.cx(*parts), a.weak_type)
  if not dt.is_float: return a
  big = dtypes.finfo_max(dt)
  out = _sel(_isnan(u), float(nan), u)
  out = _sel(_eq(u, INF), float(big if posinf is None else posinf), out)
  out = _sel(_eq(u, -INF), float(-big if neginf is None else neginf), out)
  return Array(out, a.weak_type)


def _heaviside(a, b):
  return _sel(_isnan(a), a, _sel(_lt(a, 0.0), 0.0, _sel(_gt(a, 0.0), 1.0, b)))


heaviside = _float_binary("heaviside", _heaviside, "0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0.\n\n"
                          "  >>> tnp.heaviside(tnp.array([-1.0, 0.0, 2.0]), 0.5)\n"
                          "  Array([0. , 0.5, 1. ], dtype=float32)\n  ")


def clip(x, /, min=None, max=None, *, a_min=None, a_max=None) -> Array:
  """x limited to [min, max] (either may be None); as jnp.clip, max wins where min > max.

  >>> tnp.clip(tnp.arange(5), 1, 3)
  Array([1, 1, 2, 3, 3], dtype=int32)
  """
  if a_min is not None:
    if min is not None: raise ValueError("clip: pass min or a_min, not both (a_min is the old name of min)")
    min = a_min
  if a_max is not None:
    if max is not None: raise ValueError("clip: pass max or a_max, not both (a_max is the old name of max)")
    max = a_max
  out = _arr(x, "clip")
  _real_only("clip", out.dtype)
  for bound, op in ((min, Ops.MAX), (max, Ops.MIN)):
    if bound is None: continue
    (b, o), _, weak = _args("clip", bound, out)
    out = Array(b.alu(op, o), weak)
  return out


def conj(x) -> Array:
  """The complex conjugate (a real array is its own).

  >>> tnp.conj(tnp.array([1 + 2j]))
  Array([1.-2.j], dtype=complex64)
  """
  a = _arr(x, "conj")
  return Array(_cm.conj(a.uop), a.weak_type) if a.dtype.is_complex else a


conjugate = conj


def real(x) -> Array:
  """The real part (a real array is its own).

  >>> tnp.real(tnp.array([1 + 2j]))
  Array([1.], dtype=float32)
  """
  a = _arr(x, "real")
  return Array(_cm.re(a.uop), a.weak_type) if a.dtype.is_complex else a


def imag(x) -> Array:
  """The imaginary part (zeros for a real array).

  >>> tnp.imag(tnp.array([1 + 2j]))
  Array([2.], dtype=float32)
  """
  a = _arr(x, "imag")
  return Array(_cm.im(a.uop) if a.dtype.is_complex else _k(a.uop, 0), a.weak_type)


def angle(z, deg: bool = False) -> Array:
  """The counterclockwise angle from the positive real axis, in radians (degrees with deg=True).

  >>> tnp.angle(tnp.array([1j, -1.0]))
  Array([1.5707964, 3.1415927], dtype=float32)
  """
  a = _to_float(_arr(z, "angle"))
  u = a.uop
  r = _cm.arg(u) if a.dtype.is_complex else _atan2(_k(u, 0.0), u)
  return Array(_mul(r, 180.0 / math.pi) if deg else r, a.weak_type)


def iscomplex(x) -> Array:
  """Whether each element has a nonzero imaginary part (all False for a real array).

  >>> tnp.iscomplex(tnp.array([1 + 0j, 1 + 2j]))
  Array([False,  True], dtype=bool)
  """
  return Array(_ne(imag(x).uop, 0))


def isreal(x) -> Array:
  """Whether each element has a zero imaginary part (all True for a real array).

  >>> tnp.isreal(tnp.array([1 + 0j, 1 + 2j]))
  Array([ True, False], dtype=bool)
  """
  return Array(_eq(imag(x).uop, 0))


def real_if_close(a, tol: float = 100) -> Array:
  """The real part of a complex array whose imaginary parts are all within tol machine epsilons of zero (tol > 1), or
  of tol itself (tol <= 1); otherwise the array unchanged, as numpy. The result's dtype depends on the values, so a
  traced array is a TypeError.

  >>> tnp.real_if_close(tnp.array([1 + 1e-9j, 2 + 0j]))
  Array([1., 2.], dtype=float32)
  """
  x = _arr(a, "real_if_close")
  if not x.dtype.is_complex: return x
  if x.is_traced:
    raise TypeError(f"real_if_close: the array ({x.aval_str()}) is traced, but its values decide the result's dtype; "
                    f"call it outside the transformed function, or use tnp.real")
  if tol > 1: tol = tol * float(np.finfo(x.dtype.real.np).eps)
  return real(x) if bool(np.all(np.abs(np.asarray(imag(x))) < tol)) else x


# ---------------------------------------------------------------------------------------------------------------
# comparison and logic
# ---------------------------------------------------------------------------------------------------------------

def _compare(fn: str, body, doc: str):
  def f(x, y) -> Array:
    (a, b), dt, _ = _args(fn, x, y)
    if dt.is_complex and fn not in ("equal", "not_equal"): return Array(_complex_order(fn, a, b))
    return Array(body(a, b))
  return _named(f, fn, doc)


def _complex_order(fn: str, a: UOp, b: UOp) -> UOp:
  """numpy's ordering of complex values: by the real parts, then the imaginary ones."""
  if fn in ("greater", "greater_equal"): a, b = b, a
  ra, rb, ia, ib = _cm.re(a), _cm.re(b), _cm.im(a), _cm.im(b)
  tie = _lt(ia, ib) if fn in ("less", "greater") else _or(_lt(ia, ib), _eq(ia, ib))
  return _or(_lt(ra, rb), _and(_eq(ra, rb), tie))


equal = _compare("equal", _eq, "x == y elementwise.\n\n  >>> tnp.equal(tnp.arange(3), 1)\n"
                 "  Array([False,  True, False], dtype=bool)\n  ")
not_equal = _compare("not_equal", _ne, "x != y elementwise.\n\n  >>> tnp.not_equal(tnp.arange(3), 1)\n"
                     "  Array([ True, False,  True], dtype=bool)\n  ")
less = _compare("less", _lt, "x < y elementwise.\n\n  >>> tnp.less(tnp.arange(3), 1)\n"
                "  Array([ True, False, False], dtype=bool)\n  ")
greater = _compare("greater", _gt, "x > y elementwise.\n\n  >>> tnp.greater(tnp.arange(3), 1)\n"
                   "  Array([False, False,  True], dtype=bool)\n  ")
less_equal = _compare("less_equal", lambda a, b: _or(_lt(a, b), _eq(a, b)), "x <= y elementwise.\n\n"
                      "  >>> tnp.less_equal(tnp.arange(3), 1)\n  Array([ True,  True, False], dtype=bool)\n  ")
greater_equal = _compare("greater_equal", lambda a, b: _or(_gt(a, b), _eq(a, b)), "x >= y elementwise.\n\n"
                         "  >>> tnp.greater_equal(tnp.arange(3), 1)\n  Array([False,  True,  True], dtype=bool)\n  ")


def _truth(a: Array) -> Array:
  return a if a.dtype.is_bool else Array(_ne(a.uop, 0))


def _logical(op: Ops, fn: str, doc: str):
  def f(x, y) -> Array:
    a, b = _truth(_arr(x, fn)), _truth(_arr(y, fn))
    ua, ub = broadcast_uops(fn, a, b)
    return Array(ua.alu(op, ub))
  return _named(f, fn, doc)


logical_and = _logical(Ops.AND, "logical_and", "Whether both x and y are nonzero.\n\n"
                       "  >>> tnp.logical_and(tnp.arange(3), 1)\n  Array([False,  True,  True], dtype=bool)\n  ")
logical_or = _logical(Ops.OR, "logical_or", "Whether x or y is nonzero.\n\n  >>> tnp.logical_or(tnp.arange(3), 0)\n"
                      "  Array([False,  True,  True], dtype=bool)\n  ")
logical_xor = _logical(Ops.XOR, "logical_xor", "Whether exactly one of x and y is nonzero.\n\n"
                       "  >>> tnp.logical_xor(tnp.arange(3), 1)\n  Array([ True, False, False], dtype=bool)\n  ")


def logical_not(x) -> Array:
  """Whether x is zero.

  >>> tnp.logical_not(tnp.arange(3))
  Array([ True, False, False], dtype=bool)
  """
  return Array(_not(_truth(_arr(x, "logical_not")).uop))


def _bitwise(op: Ops, fn: str, doc: str):
  def f(x, y) -> Array:
    (a, b), dt, weak = _args(fn, x, y)
    if dt.is_float: raise TypeError(f"{fn}: needs integer or bool operands, got {dt}")
    return Array(a.alu(op, b), weak)
  return _named(f, fn, doc)


bitwise_and = _bitwise(Ops.AND, "bitwise_and", "x & y bit by bit.\n\n  >>> tnp.bitwise_and(tnp.arange(4), 1)\n"
                       "  Array([0, 1, 0, 1], dtype=int32)\n  ")
bitwise_or = _bitwise(Ops.OR, "bitwise_or", "x | y bit by bit.\n\n  >>> tnp.bitwise_or(tnp.arange(4), 1)\n"
                      "  Array([1, 1, 3, 3], dtype=int32)\n  ")
bitwise_xor = _bitwise(Ops.XOR, "bitwise_xor", "x ^ y bit by bit.\n\n  >>> tnp.bitwise_xor(tnp.arange(4), 1)\n"
                       "  Array([1, 0, 3, 2], dtype=int32)\n  ")


def bitwise_not(x) -> Array:
  """~x bit by bit (logical not for bools).

  >>> tnp.bitwise_not(tnp.arange(3))
  Array([-1, -2, -3], dtype=int32)
  """
  a = _arr(x, "bitwise_not")
  u, dt = a.uop, a.dtype
  if dt.is_float: raise TypeError(f"bitwise_not: needs an integer or bool operand, got {dt}")
  ones = True if dt.is_bool else (1 << dt.bits) - 1 if dt.is_unsigned else -1
  return Array(u.alu(Ops.XOR, _k(u, ones)), a.weak_type)


invert = bitwise_invert = bitwise_not


def _shift(op: Ops, fn: str, doc: str):
  def f(x, y) -> Array:
    us, dt, weak = _args(fn, x, y)
    if dt.is_float: raise TypeError(f"{fn}: needs integer operands, got {dt}")
    (a, b), dt = _numeric(us, dt)
    # counts outside [0, bits) shift everything out, as numpy: 0, or -1 for an arithmetic right shift of a negative
    out_of_range = _or(_lt(b, 0), _gt(b, dt.bits - 1)) if not dt.is_unsigned else _gt(b, dt.bits - 1)
    out = a.alu(op, _sel(out_of_range, 0, b))
    fill = _sel(_lt(a, 0), -1, _k(a, 0)) if op is Ops.SHR and not dt.is_unsigned else _k(a, 0)
    return Array(_sel(out_of_range, fill, out), weak)
  return _named(f, fn, doc)


left_shift = _shift(Ops.SHL, "left_shift", "x << y (counts >= the bit width give 0).\n\n"
                    "  >>> tnp.left_shift(1, tnp.arange(4))\n  Array([1, 2, 4, 8], dtype=int32)\n  ")
right_shift = _shift(Ops.SHR, "right_shift", "x >> y, arithmetic for signed types (counts >= the bit width give 0, "
                     "or -1 for negative x).\n\n  >>> tnp.right_shift(8, tnp.arange(4))\n"
                     "  Array([8, 4, 2, 1], dtype=int32)\n  ")
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


def where(condition, x=None, y=None, /, *, size: int | None = None, fill_value=None):
  """x where condition is true (nonzero), else y; with the condition alone, nonzero(condition) (size= and fill_value=
  as nonzero takes them).

  >>> tnp.where(tnp.arange(3) > 0, tnp.ones(3), -1.0)
  Array([-1.,  1.,  1.], dtype=float32)
  >>> tnp.where(tnp.array([0, 2, 0, 5]))
  (Array([1, 3], dtype=int32),)
  """
  if x is None and y is None:
    c = _arr(condition, "where")
    if c.ndim == 0:
      raise ValueError("where: the one-argument form (nonzero) needs a condition of at least one dimension, got a "
                       "scalar; use tracegrad.numpy.atleast_1d(condition) first")
    return _nonzero(c, size=size, fill_value=fill_value)
  if size is not None or fill_value is not None:
    raise ValueError("where: size and fill_value are for the one-argument form where(condition); the three-argument "
                     "form where(condition, x, y) does not take them")
  if x is None or y is None:
    raise TypeError(f"where: pass both x and y or neither, got {'y' if x is not None else 'x'}=None (position "
                    f"{2 if x is not None else 1})")
  c = _truth(_arr(condition, "where"))
  (a, b), _, weak = promote("where", x, y)
  uc, ua, ub = broadcast_uops("where", c, a, b)
  return Array(uc.where(ua, ub), weak)
