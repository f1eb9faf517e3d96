"""Elementwise functions, as jax.lax: operands of one dtype (a Python number takes the other operand's; lax does not
promote, and raises a TypeError naming the dtypes), a scalar broadcast against an array, and each function only on
the dtypes jax.lax accepts. Integer division truncates toward zero and rem is C's fmod, as XLA. float16 and bfloat16
compute transcendental functions in float32 and round back. On complex operands (where jax.lax takes them) the
functions are the compositions of lax/complex_math.py.

>>> lax.div(tnp.array([7, -7]), 2), lax.rem(tnp.array([7, -7]), 2)
(Array([ 3, -3], dtype=int32), Array([ 1, -1], dtype=int32))
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from ..array import Array, to_array
from ..ir import Ops, UOp, dtypes
from ..ir.shapes import fmt
from . import complex_math as cm
from . import float_math as fm
from .ops import _like, _weak_scalar

__all__ = ["RoundingMethod", "abs", "acos", "asin", "atan", "atan2", "acosh", "asinh", "atanh", "cbrt", "ceil",
           "floor", "round", "cos", "cosh", "sin", "sinh", "tan", "tanh", "exp", "exp2", "expm1", "log", "log1p",
           "logistic", "sqrt", "rsqrt", "square", "reciprocal", "sign", "neg", "pow", "integer_pow", "rem", "div",
           "clamp", "nextafter", "is_finite", "population_count", "clz", "shift_left", "shift_right_arithmetic",
           "shift_right_logical", "mulhi", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "eq", "ne", "lt",
           "le", "gt", "ge", "select_n", "operands", "check_kind", "float_unary"]

F32 = dtypes.float32
_KINDS = {"float": ("floating", lambda d: d.is_float), "inexact": ("floating, complexfloating", lambda d: d.is_inexact),
          "number": ("integer, floating, complexfloating", lambda d: not d.is_bool),
          "real": ("integer, floating", lambda d: not d.is_bool and not d.is_complex),
          "int": ("integer", lambda d: d.is_int), "signed": ("floating, signedinteger", lambda d: d.kind in "fi"),
          "int_or_bool": ("bool, integer", lambda d: not d.is_inexact),
          "ordered": ("bool, integer, floating", lambda d: not d.is_complex),
          "signed_or_complex": ("floating, complexfloating, signedinteger", lambda d: d.kind in "fic"),
          "any": ("bool, integer, floating, complexfloating", lambda d: True)}


def check_kind(fn: str, d: dtypes.DType, kind: str) -> None:
  names, ok = _KINDS[kind]
  if not ok(d): raise TypeError(f"{fn} does not accept dtype {d}. Accepted dtypes are {names}.")


def operands(fn: str, *xs, kind: str = "any") -> tuple[list[UOp], dtypes.DType, bool]:
  """xs as UOps of one dtype and shape (Python numbers take the arrays' dtype, scalars are broadcast), their dtype and
  whether all are weakly typed."""
  ref = next((to_array(x, fn=fn) for x in xs if not _weak_scalar(x)), None)
  if ref is None: ref = to_array(xs[0], fn=fn)
  arrs = [_like(x, ref, fn) if _weak_scalar(x) else to_array(x, fn=fn) for x in xs]
  if any(a.dtype is not ref.dtype for a in arrs):
    got = ", ".join(str(a.dtype) for a in arrs)
    raise TypeError(f"lax.{fn} requires arguments to have the same dtypes, got {got}; lax does not promote "
                    f"(convert with lax.convert_element_type)")
  shapes = {a.shape for a in arrs if a.shape != ()}
  if len(shapes) > 1:
    got = ", ".join(fmt(a.shape) for a in arrs)
    raise TypeError(f"lax.{fn} requires arguments of one shape (or scalars), got {got}")
  shape = shapes.pop() if shapes else ()
  check_kind(fn, ref.dtype, kind)
  return [a.uop.broadcast(shape) for a in arrs], ref.dtype, all(a.weak_type for a in arrs)


def _doc(f, fn: str, doc: str):
  f.__name__ = f.__qualname__ = fn
  f.__doc__ = doc
  return f


def float_unary(fn: str, body, doc: str, wide: bool = True, complex_body=None):
  """A function of one float operand (or complex, with complex_body); half types compute in float32 when wide."""
  def f(x) -> Array:
    (u,), d, weak = operands(fn, x, kind="float" if complex_body is None else "inexact")
    if d.is_complex: return Array(complex_body(u), weak)
    if wide and d.itemsize == 2: return Array(body(u.cast(F32)).cast(d), weak)
    return Array(body(u), weak)
  return _doc(f, fn, doc)


def _complex_logistic(z: UOp) -> UOp: return cm.ck(z, 1.0).alu(Ops.DIV, cm.exp_(-z) + cm.ck(z, 1.0))


def _float_binary(fn: str, body, doc: str):
  def f(x, y) -> Array:
    (a, b), d, weak = operands(fn, x, y, kind="float")
    if d.itemsize == 2: return Array(body(a.cast(F32), b.cast(F32)).cast(d), weak)
    return Array(body(a, b), weak)
  return _doc(f, fn, doc)


_expm1 = fm.smooth(fm.expm1, lambda x, y: (fm.add(y, 1.0),), "expm1")
_log1p = fm.smooth(fm.log1p, lambda x, y: (fm.div(fm.k(x, 1.0), fm.add(x, 1.0)),), "log1p")
_tanh = fm.smooth(fm.tanh, lambda x, y: (fm.sub(fm.k(y, 1.0), fm.mul(y, y)),), "tanh")
_sinh = fm.smooth(fm.sinh, lambda x, y: (fm.cosh(x),), "sinh")
_logistic = fm.smooth(fm.logistic, lambda x, y: (fm.mul(y, fm.sub(fm.k(y, 1.0), y)),), "logistic")
_cbrt = fm.smooth(fm.cbrt, lambda x, y: (fm.div(fm.k(y, 1.0), fm.mul(fm.mul(y, y), 3.0)),), "cbrt")
_asinh = fm.smooth(fm.asinh, lambda x, y: (fm.div(fm.k(x, 1.0), fm.sqrt(fm.add(fm.mul(x, x), 1.0))),), "asinh")
_atanh = fm.smooth(fm.atanh, lambda x, y: (fm.div(fm.k(x, 1.0), fm.mul(fm.sub(fm.k(x, 1.0), x), fm.add(x, 1.0))),),
                   "atanh")

sin = float_unary("sin", lambda u: u.alu(Ops.SIN), "The sine, as jax.lax.sin.\n\n  >>> lax.sin(0.0)\n"
                  "  Array(0., dtype=float32, weak_type=True)\n  ",
                  complex_body=cm.BODIES["sin"])
cos = float_unary("cos", lambda u: u.alu(Ops.COS), "The cosine, as jax.lax.cos.\n\n  >>> lax.cos(tnp.zeros(2))\n"
                  "  Array([1., 1.], dtype=float32)\n  ",
                  complex_body=cm.BODIES["cos"])
tan = float_unary("tan", lambda u: fm.div(u.alu(Ops.SIN), u.alu(Ops.COS)), "The tangent, as jax.lax.tan.\n\n"
                  "  >>> lax.tan(tnp.zeros(1))\n  Array([0.], dtype=float32)\n  ",
                  complex_body=cm.BODIES["tan"])
asin = float_unary("asin", lambda u: u.alu(Ops.ATAN2, fm.sqrt1mx2(u)), "The inverse sine, as jax.lax.asin.\n\n"
                   "  >>> lax.asin(tnp.zeros(1))\n  Array([0.], dtype=float32)\n  ",
                   complex_body=cm.BODIES["asin"])
acos = float_unary("acos", lambda u: fm.sqrt1mx2(u).alu(Ops.ATAN2, u), "The inverse cosine, as jax.lax.acos.\n\n"
                   "  >>> lax.acos(tnp.ones(1))\n  Array([0.], dtype=float32)\n  ",
                   complex_body=cm.BODIES["acos"])
atan = float_unary("atan", lambda u: u.alu(Ops.ATAN2, fm.k(u, 1.0)), "The inverse tangent, as jax.lax.atan.\n\n"
                   "  >>> lax.atan(tnp.zeros(1))\n  Array([0.], dtype=float32)\n  ",
                   complex_body=cm.BODIES["atan"])
atan2 = _float_binary("atan2", lambda a, b: a.alu(Ops.ATAN2, b), "The angle of the point (y, x), as jax.lax.atan2.\n\n"
                      "  >>> lax.atan2(tnp.zeros(1), tnp.ones(1))\n  Array([0.], dtype=float32)\n  ")
sinh = float_unary("sinh", _sinh, "The hyperbolic sine, as jax.lax.sinh.\n\n  >>> lax.sinh(tnp.zeros(1))\n"
                   "  Array([0.], dtype=float32)\n  ",
                   complex_body=cm.BODIES["sinh"])
cosh = float_unary("cosh", fm.cosh, "The hyperbolic cosine, as jax.lax.cosh.\n\n  >>> lax.cosh(tnp.zeros(1))\n"
                   "  Array([1.], dtype=float32)\n  ",
                   complex_body=cm.BODIES["cosh"])
tanh = float_unary("tanh", _tanh, "The hyperbolic tangent, as jax.lax.tanh.\n\n  >>> lax.tanh(tnp.zeros(1))\n"
                   "  Array([0.], dtype=float32)\n  ",
                   complex_body=cm.BODIES["tanh"])
asinh = float_unary("asinh", _asinh, "The inverse hyperbolic sine, as jax.lax.asinh.\n\n"
                    "  >>> lax.asinh(tnp.zeros(1))\n  Array([0.], dtype=float32)\n  ",
                    complex_body=cm.BODIES["asinh"])
acosh = float_unary("acosh", fm.acosh, "The inverse hyperbolic cosine (nan below 1), as jax.lax.acosh.\n\n"
                    "  >>> lax.acosh(tnp.ones(1))\n  Array([0.], dtype=float32)\n  ",
                    complex_body=cm.BODIES["acosh"])
atanh = float_unary("atanh", _atanh, "The inverse hyperbolic tangent, as jax.lax.atanh.\n\n"
                    "  >>> lax.atanh(tnp.zeros(1))\n  Array([0.], dtype=float32)\n  ",
                    complex_body=cm.BODIES["atanh"])
exp = float_unary("exp", fm.exp, "e ** x, as jax.lax.exp.\n\n  >>> lax.exp(tnp.zeros(1))\n"
                  "  Array([1.], dtype=float32)\n  ",
                  complex_body=cm.BODIES["exp"])
exp2 = float_unary("exp2", fm.exp2, "2 ** x, as jax.lax.exp2.\n\n  >>> lax.exp2(tnp.array([3.0]))\n"
                   "  Array([8.], dtype=float32)\n  ",
                   complex_body=cm.BODIES["exp2"])
expm1 = float_unary("expm1", _expm1, "exp(x) - 1, accurate near 0, as jax.lax.expm1.\n\n"
                    "  >>> lax.expm1(tnp.array([1e-10]))\n  Array([1.e-10], dtype=float32)\n  ",
                    complex_body=cm.BODIES["expm1"])
log = float_unary("log", fm.log, "The natural logarithm, as jax.lax.log.\n\n  >>> lax.log(tnp.ones(1))\n"
                  "  Array([0.], dtype=float32)\n  ",
                  complex_body=cm.BODIES["log"])
log1p = float_unary("log1p", _log1p, "log(1 + x), accurate near 0, as jax.lax.log1p.\n\n"
                    "  >>> lax.log1p(tnp.array([1e-10]))\n  Array([1.e-10], dtype=float32)\n  ",
                    complex_body=cm.BODIES["log1p"])
logistic = float_unary("logistic", _logistic, "1 / (1 + exp(-x)), as jax.lax.logistic.\n\n"
                       "  >>> lax.logistic(tnp.zeros(1))\n  Array([0.5], dtype=float32)\n  ",
                       complex_body=_complex_logistic)
sqrt = float_unary("sqrt", fm.sqrt, "The square root, as jax.lax.sqrt.\n\n  >>> lax.sqrt(tnp.array([4.0]))\n"
                   "  Array([2.], dtype=float32)\n  ",
                   complex_body=cm.BODIES["sqrt"])
rsqrt = float_unary("rsqrt", lambda u: fm.sqrt(u).alu(Ops.RECIP), "1 / sqrt(x), as jax.lax.rsqrt.\n\n"
                    "  >>> lax.rsqrt(tnp.array([4.0]))\n  Array([0.5], dtype=float32)\n  ",
                    complex_body=cm.BODIES["rsqrt"])
cbrt = float_unary("cbrt", _cbrt, "The real cube root, as jax.lax.cbrt.\n\n  >>> lax.cbrt(tnp.array([-8.0]))\n"
                   "  Array([-2.], dtype=float32)\n  ")
reciprocal = float_unary("reciprocal", lambda u: u.alu(Ops.RECIP), "1 / x, as jax.lax.reciprocal.\n\n"
                         "  >>> lax.reciprocal(tnp.array([4.0]))\n  Array([0.25], dtype=float32)\n  ", wide=False,
                         complex_body=cm.BODIES["reciprocal"])
floor = float_unary("floor", fm.floor, "The largest integer <= x, as jax.lax.floor.\n\n"
                    "  >>> lax.floor(tnp.array([-1.5]))\n  Array([-2.], dtype=float32)\n  ", wide=False)
ceil = float_unary("ceil", lambda u: -fm.floor(-u), "The smallest integer >= x, as jax.lax.ceil.\n\n"
                   "  >>> lax.ceil(tnp.array([-1.5]))\n  Array([-1.], dtype=float32)\n  ", wide=False)


class RoundingMethod(enum.IntEnum):
  """How lax.round breaks ties, as jax.lax.RoundingMethod.

  >>> int(lax.RoundingMethod.TO_NEAREST_EVEN)
  1
  """
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO) -> Array:  # noqa: A001
  """x rounded to the nearest integer, ties away from zero (or to even), as jax.lax.round.

  >>> lax.round(tnp.array([0.5, 1.5, -2.5]))
  Array([ 1.,  2., -3.], dtype=float32)
  """
  method = RoundingMethod(int(rounding_method))
  body = fm.round_even if method is RoundingMethod.TO_NEAREST_EVEN else fm.round_away
  (u,), d, weak = operands("round", x, kind="float")
  return Array(body(u), weak)


def is_finite(x) -> Array:
  """Whether x is neither infinite nor nan, as jax.lax.is_finite.

  >>> lax.is_finite(tnp.array([1.0, tnp.inf, tnp.nan]))
  Array([ True, False, False], dtype=bool)
  """
  (u,), _, _ = operands("is_finite", x, kind="float")
  return Array(fm.lt(fm.fabs(u), fm.INF))


def abs(x) -> Array:  # noqa: A001
  """|x|, as jax.lax.abs (|INT_MIN| wraps).

  >>> lax.abs(tnp.array([-2, 3]))
  Array([2, 3], dtype=int32)
  """
  (u,), d, weak = operands("abs", x, kind="signed_or_complex")
  if d.is_complex: return Array(cm.abs_(u), weak)
  return Array(fm.fabs(u) if d.is_float else fm.sel(fm.lt(u, 0), -u, u), weak)


def sign(x) -> Array:
  """-1, 0 or 1 by the sign of x (nan stays nan), as jax.lax.sign.

  >>> lax.sign(tnp.array([-2.0, 0.0, 3.0]))
  Array([-1.,  0.,  1.], dtype=float32)
  """
  (u,), d, weak = operands("sign", x, kind="number")
  if d.is_complex: return Array(cm.sign(u), weak)
  if d.is_unsigned: return Array(fm.gt(u, 0).cast(d), weak)
  return Array(fm.sel(fm.gt(u, 0), 1, fm.sel(fm.lt(u, 0), -1, u)), weak)


def neg(x) -> Array:
  """-x, as jax.lax.neg (unsigned integers wrap).

  >>> lax.neg(tnp.array([1, -2]))
  Array([-1,  2], dtype=int32)
  """
  (u,), d, weak = operands("neg", x, kind="number")
  return Array(-u, weak)


def square(x) -> Array:
  """x * x, as jax.lax.square.

  >>> lax.square(tnp.array([3, -2]))
  Array([9, 4], dtype=int32)
  """
  (u,), d, weak = operands("square", x, kind="number")
  return Array(u * u, weak)


def integer_pow(x, y: int) -> Array:
  """x ** y for a Python int y, by repeated squaring (1 / x ** -y for negative y), as jax.lax.integer_pow.

  >>> lax.integer_pow(tnp.array([2.0, 3.0]), 3)
  Array([ 8., 27.], dtype=float32)
  """
  (u,), d, weak = operands("integer_pow", x, kind="number")
  n = operator.index(y)
  if n < 0 and not d.is_inexact:
    raise TypeError(f"integer_pow: a negative exponent {n} needs a float or complex x, got {d}")
  out, base, m = None, u, n if n >= 0 else -n
  while m:
    if m & 1: out = base if out is None else out * base
    m >>= 1
    if m: base = base * base
  if out is None: out = fm.k(u, 1)
  return Array(out.alu(Ops.RECIP) if n < 0 else out, weak)


def pow(x, y) -> Array:  # noqa: A001
  """x ** y with x a float and y a float of its dtype or an integer, as jax.lax.pow.

  >>> lax.pow(tnp.array([2.0, 4.0]), 0.5)
  Array([1.4142135, 2.       ], dtype=float32)
  """
  fn = "pow"
  b = to_array(y, fn=fn) if not _weak_scalar(y) else None
  if b is not None and b.dtype.is_int:
    (u,), d, weak = operands(fn, x, kind="inexact")
    if b.shape not in ((), u.shape) and u.shape != ():
      raise TypeError(f"lax.pow requires arguments of one shape (or scalars), got {fmt(u.shape)} and {fmt(b.shape)}")
    shape = u.shape if b.shape == () else b.shape
    u, e = u.broadcast(shape), b.uop.cast(d).broadcast(shape)
  else:
    (u, e), d, weak = operands(fn, x, y, kind="inexact")
  if d.is_complex: return Array(cm.power(u, e), weak and (b is None or b.weak_type))
  w = F32 if d.itemsize == 2 else d
  a, e = u.cast(w), e.cast(w)
  r = a.alu(Ops.POW, e)
  return Array(r.cast(d), weak and (b is None or b.weak_type))


def _int_guard(b: UOp):
  zero = fm.eq(b, 0)
  if b.dtype.is_unsigned: return fm.sel(zero, 1, b), zero, None
  neg1 = fm.eq(b, -1)
  return fm.sel(zero.alu(Ops.OR, neg1), 1, b), zero, neg1


def div(x, y) -> Array:
  """x / y; integers truncate toward zero (x / 0 is -1, all bits set, as XLA), as jax.lax.div.

  >>> lax.div(tnp.array([7, -7]), 2)
  Array([ 3, -3], dtype=int32)
  """
  (a, b), d, weak = operands("div", x, y, kind="number")
  if d.is_inexact: return Array(a.alu(Ops.DIV, b), weak)
  bs, zero, neg1 = _int_guard(b)
  q = a.alu(Ops.IDIV, bs)
  if neg1 is not None: q = fm.sel(neg1, -a, q)
  return Array(fm.sel(zero, -1 if not d.is_unsigned else dtypes.max_value(d), q), weak)


def rem(x, y) -> Array:
  """The remainder with the sign of x (C's fmod; integer x rem 0 is x), as jax.lax.rem.

  >>> lax.rem(tnp.array([7.0, -7.0]), 3.0)
  Array([ 1., -1.], dtype=float32)
  """
  (a, b), d, weak = operands("rem", x, y, kind="real")
  if d.is_float: return Array(a.alu(Ops.MOD, b), weak)
  bs, zero, neg1 = _int_guard(b)
  r = fm.sel(zero, a, a.alu(Ops.MOD, bs))
  return Array(r if neg1 is None else fm.sel(neg1, 0, r), weak)


def clamp(min, x, max) -> Array:  # noqa: A002
  """x clamped into [min, max] (min and max scalars or of x's shape), as jax.lax.clamp.

  >>> lax.clamp(0, tnp.array([-1, 5, 12]), 10)
  Array([ 0,  5, 10], dtype=int32)
  """
  (lo, u, hi), d, weak = operands("clamp", min, x, max, kind="number")
  return Array(u.alu(Ops.MAX, lo).alu(Ops.MIN, hi), to_array(x, fn="clamp").weak_type if not _weak_scalar(x) else weak)


def nextafter(x1, x2) -> Array:
  """The next float after x1 in the direction of x2, as jax.lax.nextafter.

  >>> lax.nextafter(tnp.float32(1.0), tnp.float32(2.0))
  Array(1.0000001, dtype=float32)
  """
  (a, b), d, weak = operands("nextafter", x1, x2, kind="float")
  it = fm.sint(d)
  bits = a.bitcast(it)
  tiny = fm.k(bits, 1).bitcast(d)  # the smallest subnormal, with b's sign
  toward_zero = fm.gt(fm.fabs(a), fm.fabs(b)).alu(Ops.OR, fm.signbit(a).alu(Ops.CMPNE, fm.signbit(b)))
  step = fm.sel(toward_zero, fm.k(bits, -1), fm.k(bits, 1))
  r = (bits + step).bitcast(d)
  r = fm.sel(fm.eq(a, 0.0), fm.copysign(tiny, b), r)
  r = fm.sel(fm.eq(a, b), b, r)
  return Array(fm.sel(fm.isnan(a).alu(Ops.OR, fm.isnan(b)), fm.add(a, b), r), weak)


def population_count(x) -> Array:
  """The number of set bits of each integer, as jax.lax.population_count.

  >>> lax.population_count(tnp.array([7, -1], tnp.int8))
  Array([3, 8], dtype=int8)
  """
  (u,), d, weak = operands("population_count", x, kind="int")
  v = u.bitcast(fm.uint(d))
  one = fm.k(v, 1)
  n = fm.k(v, 0)
  for i in range(d.bits): n = n + v.alu(Ops.SHR, fm.k(v, i)).alu(Ops.AND, one)
  return Array(n.bitcast(d), weak)


def clz(x) -> Array:
  """The number of leading zero bits of each integer, as jax.lax.clz.

  >>> lax.clz(tnp.array([1, 0, -1]))
  Array([31, 32,  0], dtype=int32)
  """
  (u,), d, weak = operands("clz", x, kind="int")
  v = u.bitcast(fm.uint(d))
  n, seen = fm.k(v, 0), fm.k(v, False, dtypes.bool_)
  for i in range(d.bits - 1, -1, -1):
    seen = seen.alu(Ops.OR, fm.ne(v.alu(Ops.SHR, fm.k(v, i)).alu(Ops.AND, fm.k(v, 1)), 0))
    n = n + fm.sel(seen, fm.k(v, 0), 1)
  return Array(n.bitcast(d), weak)


def _shift(fn: str, x, y, logical: bool, left: bool) -> Array:
  (a, b), d, weak = operands(fn, x, y, kind="int")
  u = a.bitcast(fm.uint(d)) if logical and not d.is_unsigned else a
  s = b.bitcast(u.dtype) if b.dtype is not u.dtype else b
  bits = d.bits
  in_range = s.bitcast(fm.uint(d)).alu(Ops.CMPLT, fm.k(s, bits, fm.uint(d)))
  out_of_range = in_range.alu(Ops.XOR, fm.k(s, True, dtypes.bool_))
  safe = fm.sel(out_of_range, 0, s)
  r = u.alu(Ops.SHL if left else Ops.SHR, safe)
  if logical or left: full = fm.k(u, 0)
  else: full = fm.sel(fm.lt(u, 0), fm.k(u, -1), 0) if not d.is_unsigned else fm.k(u, 0)
  return Array(fm.sel(out_of_range, full, r).bitcast(d), weak)


def shift_left(x, y) -> Array:
  """x << y (0 when y is outside [0, bits)), as jax.lax.shift_left.

  >>> lax.shift_left(tnp.array([1, 1]), tnp.array([3, 40]))
  Array([8, 0], dtype=int32)
  """
  return _shift("shift_left", x, y, False, True)


def shift_right_arithmetic(x, y) -> Array:
  """x >> y filling with the sign bit, as jax.lax.shift_right_arithmetic.

  >>> lax.shift_right_arithmetic(tnp.array([-8, 8]), 1)
  Array([-4,  4], dtype=int32)
  """
  return _shift("shift_right_arithmetic", x, y, False, False)


def shift_right_logical(x, y) -> Array:
  """x >> y filling with zeros, as jax.lax.shift_right_logical.

  >>> lax.shift_right_logical(tnp.array([-8, 8]), 1)
  Array([2147483644,          4], dtype=int32)
  """
  return _shift("shift_right_logical", x, y, True, False)


def mulhi(x, y, /) -> Array:
  """The high half of the double-width product of two integers (signed or unsigned), as jax.lax.mulhi; operands of
  one rank broadcast their size-1 axes.

  >>> lax.mulhi(tnp.array([2**30, -7]), tnp.array([8, 3]))
  Array([ 2, -1], dtype=int32)
  """
  fn = "mulhi"
  shapes = [np.shape(v) if _weak_scalar(v) else to_array(v, fn=fn).shape for v in (x, y)]
  ranks = {len(s) for s in shapes if s != ()}
  if len(ranks) > 1:
    raise TypeError(f"lax.mulhi: x and y need one rank (or one of them a scalar), got shapes {fmt(shapes[0])} and "
                    f"{fmt(shapes[1])}")
  if ranks and any(a != b and 1 not in (a, b) for a, b in zip(*shapes)):
    raise TypeError(f"lax.mulhi: x and y of shapes {fmt(shapes[0])} and {fmt(shapes[1])} do not broadcast")
  if ranks and shapes[0] != shapes[1] and () not in shapes:
    full = tuple(max(a, b) for a, b in zip(*shapes))
    x, y = (Array(to_array(v, fn=fn).uop.broadcast(full), to_array(v, fn=fn).weak_type) for v in (x, y))
  (a, b), d, weak = operands(fn, x, y, kind="int")
  u = fm.uint(d)
  p, q = a.bitcast(u), b.bitcast(u)
  h = d.bits // 2
  mask, shift = fm.k(p, (1 << h) - 1), fm.k(p, h)
  p_lo, p_hi, q_lo, q_hi = p.alu(Ops.AND, mask), p.alu(Ops.SHR, shift), q.alu(Ops.AND, mask), q.alu(Ops.SHR, shift)
  # schoolbook on half-width digits: no partial product or sum leaves the N-bit type
  hi_lo = p_hi * q_lo
  cross = (p_lo * q_lo).alu(Ops.SHR, shift) + hi_lo.alu(Ops.AND, mask) + p_lo * q_hi
  hi = p_hi * q_hi + hi_lo.alu(Ops.SHR, shift) + cross.alu(Ops.SHR, shift)
  if not d.is_unsigned:  # as two's complement: subtract q for a negative p and p for a negative q
    zero = fm.k(p, 0)
    hi = hi - fm.sel(fm.lt(a, 0), q, zero) - fm.sel(fm.lt(b, 0), p, zero)
  return Array(hi.bitcast(d), weak)


def _bitwise(fn: str, op: Ops, doc: str):
  def f(x, y) -> Array:
    (a, b), d, weak = operands(fn, x, y, kind="int_or_bool")
    return Array(a.alu(op, b), weak)
  return _doc(f, fn, doc)


bitwise_and = _bitwise("bitwise_and", Ops.AND, "x & y bit by bit, as jax.lax.bitwise_and.\n\n"
                       "  >>> lax.bitwise_and(tnp.array([6]), 3)\n  Array([2], dtype=int32)\n  ")
bitwise_or = _bitwise("bitwise_or", Ops.OR, "x | y bit by bit, as jax.lax.bitwise_or.\n\n"
                      "  >>> lax.bitwise_or(tnp.array([6]), 3)\n  Array([7], dtype=int32)\n  ")
bitwise_xor = _bitwise("bitwise_xor", Ops.XOR, "x ^ y bit by bit, as jax.lax.bitwise_xor.\n\n"
                       "  >>> lax.bitwise_xor(tnp.array([6]), 3)\n  Array([5], dtype=int32)\n  ")


def bitwise_not(x) -> Array:
  """~x bit by bit (logical not for bool), as jax.lax.bitwise_not.

  >>> lax.bitwise_not(tnp.array([0, 5]))
  Array([-1, -6], dtype=int32)
  """
  (u,), d, weak = operands("bitwise_not", x, kind="int_or_bool")
  return Array(u.alu(Ops.XOR, fm.k(u, True if d.is_bool else -1 if not d.is_unsigned else dtypes.max_value(d))), weak)


def _compare(fn: str, body, doc: str):
  def f(x, y) -> Array:
    (a, b), _, _ = operands(fn, x, y, kind="any" if fn in ("eq", "ne") else "ordered")
    return Array(body(a, b))
  return _doc(f, fn, doc)


eq = _compare("eq", lambda a, b: a.alu(Ops.CMPEQ, b), "x == y, as jax.lax.eq.\n\n  >>> lax.eq(tnp.arange(3), 1)\n"
              "  Array([False,  True, False], dtype=bool)\n  ")
ne = _compare("ne", lambda a, b: a.alu(Ops.CMPNE, b), "x != y, as jax.lax.ne.\n\n  >>> lax.ne(tnp.arange(3), 1)\n"
              "  Array([ True, False,  True], dtype=bool)\n  ")
lt = _compare("lt", lambda a, b: a.alu(Ops.CMPLT, b), "x < y, as jax.lax.lt.\n\n  >>> lax.lt(tnp.arange(3), 1)\n"
              "  Array([ True, False, False], dtype=bool)\n  ")
gt = _compare("gt", lambda a, b: b.alu(Ops.CMPLT, a), "x > y, as jax.lax.gt.\n\n  >>> lax.gt(tnp.arange(3), 1)\n"
              "  Array([False, False,  True], dtype=bool)\n  ")
le = _compare("le", lambda a, b: a.alu(Ops.CMPLT, b).alu(Ops.OR, a.alu(Ops.CMPEQ, b)), "x <= y, as jax.lax.le.\n\n"
              "  >>> lax.le(tnp.arange(3), 1)\n  Array([ True,  True, False], dtype=bool)\n  ")
ge = _compare("ge", lambda a, b: b.alu(Ops.CMPLT, a).alu(Ops.OR, a.alu(Ops.CMPEQ, b)), "x >= y, as jax.lax.ge.\n\n"
              "  >>> lax.ge(tnp.arange(3), 1)\n  Array([False,  True,  True], dtype=bool)\n  ")


def select_n(which, *cases) -> Array:
  """cases[which] elementwise: which is bool (two cases) or int32, a scalar or of the cases' shape, as
  jax.lax.select_n.

  >>> lax.select_n(tnp.array([0, 2, 1]), tnp.zeros(3), tnp.ones(3), tnp.full(3, 2.0))
  Array([0., 2., 1.], dtype=float32)
  """
  fn = "select_n"
  if not cases: raise ValueError(f"{fn}: needs at least one case")
  w = to_array(which, fn=fn)
  arrs = [to_array(c, fn=fn) for c in cases]
  if any(a.shape != arrs[0].shape or a.dtype is not arrs[0].dtype for a in arrs):
    raise TypeError(f"{fn}: the cases must have one shape and dtype, got {', '.join(a.aval_str() for a in arrs)}")
  shape = arrs[0].shape
  if w.shape not in ((), shape):
    raise TypeError(f"{fn}: which must be a scalar or of the cases' shape {fmt(shape)}, got {fmt(w.shape)}")
  if w.dtype.is_bool and len(arrs) > 2 or not (w.dtype.is_bool or w.dtype.is_int):
    raise TypeError(f"{fn}: which must be bool (with at most two cases) or an integer, got {w.dtype} with "
                    f"{len(arrs)} cases")
  wu = w.uop.broadcast(shape)
  out = arrs[0].uop
  for i, a in enumerate(arrs[1:], 1):
    hit = wu if w.dtype.is_bool else wu.alu(Ops.CMPEQ, fm.k(wu, i))
    out = hit.where(a.uop, out)
  return Array(out, all(a.weak_type for a in arrs))
