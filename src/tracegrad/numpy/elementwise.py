"""Elementwise functions of tracegrad.numpy, built from the elementwise primitives."""
from __future__ import annotations

import math

from ..array import Array
from ..ir import Ops, UOp, dtypes
from .core import asarray_, broadcast_uops, cast, elementwise, promote

__all__ = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod", "fmod", "divmod",
           "power", "negative", "positive", "abs", "absolute", "sign", "reciprocal", "square", "sqrt", "cbrt", "exp", "exp2",
           "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh",
           "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "hypot", "logaddexp", "copysign", "maximum", "minimum",
           "floor", "ceil", "round", "trunc", "isnan", "isinf", "isfinite", "equal", "not_equal", "less", "less_equal",
           "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_not", "invert", "left_shift", "right_shift", "where", "clip"]


def _float(fn, x):
  """x as a float Array (ints and bool become the default float), and the dtype to return."""
  a = asarray_(x, fn)
  if a.dtype.is_float: return a, a.dtype
  return cast(a, dtypes.default_float(), a.weak_type), dtypes.default_float()


def _c(a: Array, v) -> Array: return Array(UOp.const(a.dtype, v, a.shape), True)


def _un(op, fn):
  def f(x):
    a, _ = _float(fn, x)
    return Array(a.uop.alu(op), a.weak_type)
  f.__name__ = fn
  return f


def _bin(op, fn):
  def f(x, y): return elementwise(op, x, y, fn=fn)
  f.__name__ = fn
  return f


LN2, LOG2E = math.log(2.0), 1.0 / math.log(2.0)
sin, cos, sqrt, exp2, log2 = _un(Ops.SIN, "sin"), _un(Ops.COS, "cos"), _un(Ops.SQRT, "sqrt"), _un(Ops.EXP2, "exp2"), _un(Ops.LOG2, "log2")
equal, not_equal, less = _bin(Ops.CMPEQ, "equal"), _bin(Ops.CMPNE, "not_equal"), _bin(Ops.CMPLT, "less")
maximum, minimum = _bin(Ops.MAX, "maximum"), _bin(Ops.MIN, "minimum")


def greater(x, y): return less(y, x)
def less_equal(x, y): return logical_or(less(x, y), equal(x, y))
def greater_equal(x, y): return less_equal(y, x)


def _arith(op, fn):
  def f(x, y):
    (a, b), dt, _ = promote(fn, x, y)
    if dt.is_bool:
      if op is Ops.ADD: return logical_or(a, b)
      if op is Ops.MUL: return logical_and(a, b)
      raise TypeError(f"{fn}: not defined on bool operands; use logical_xor or cast to int")
    return elementwise(op, x, y, fn=fn)
  f.__name__ = fn
  return f


add, subtract, multiply = _arith(Ops.ADD, "add"), _arith(Ops.SUB, "subtract"), _arith(Ops.MUL, "multiply")


def where(condition, x=None, y=None):
  """x where condition else y. >>> tnp.where(tnp.arange(3) > 0, 1, 0)"""
  if x is None or y is None: raise TypeError("where: pass condition, x and y; for indices of true values use nonzero")
  return elementwise(Ops.WHERE, condition, x, y, fn="where")


def true_divide(x, y):
  (a, b), dt, w = promote("true_divide", x, y)
  if not dt.is_float: a, b = cast(a, dtypes.default_float(), a.weak_type), cast(b, dtypes.default_float(), b.weak_type)
  return elementwise(Ops.DIV, a, b, fn="true_divide")


divide = true_divide


def _bitwise(op, fn):
  def f(x, y):
    (a, b), dt, _ = promote(fn, x, y)
    if dt.is_float: raise TypeError(f"{fn}: needs integer or bool operands, got {dt}")
    return elementwise(op, a, b, fn=fn)
  f.__name__ = fn
  return f


bitwise_and, bitwise_or, bitwise_xor = _bitwise(Ops.AND, "bitwise_and"), _bitwise(Ops.OR, "bitwise_or"), _bitwise(Ops.XOR, "bitwise_xor")


def _bool(x, fn): return not_equal(x, 0) if asarray_(x, fn).dtype is not dtypes.bool_ else asarray_(x, fn)
def logical_and(x, y): return bitwise_and(_bool(x, "logical_and"), _bool(y, "logical_and"))
def logical_or(x, y): return bitwise_or(_bool(x, "logical_or"), _bool(y, "logical_or"))
def logical_xor(x, y): return bitwise_xor(_bool(x, "logical_xor"), _bool(y, "logical_xor"))
def logical_not(x): return equal(_bool(x, "logical_not"), False)


def bitwise_not(x):
  a = asarray_(x, "bitwise_not")
  if a.dtype.is_float: raise TypeError(f"bitwise_not: needs an integer or bool operand, got {a.dtype}")
  return bitwise_xor(a, Array(UOp.const(a.dtype, True if a.dtype.is_bool else (-1 if not a.dtype.is_unsigned else (1 << a.dtype.bits) - 1), a.shape)))


invert = bitwise_not


def _shift(op, fn):
  def f(x, y):
    (a, b), dt, w = promote(fn, x, y)
    if not dt.is_int: raise TypeError(f"{fn}: needs integer operands, got {dt}")
    ua, ub = broadcast_uops(fn, a, b)
    a, b = Array(ua), Array(ub)
    big = logical_or(less(b, 0), greater_equal(b, dt.bits))
    safe = where(big, 0, b)
    out = Array(a.uop.alu(op, safe.uop))
    fill = where(less(a, 0), -1, 0) if (op is Ops.SHR and not dt.is_unsigned) else _c(a, 0)
    return Array(where(big, fill, out).uop.cast(dt), w)
  f.__name__ = fn
  return f


left_shift, right_shift = _shift(Ops.SHL, "left_shift"), _shift(Ops.SHR, "right_shift")


def negative(x):
  a = asarray_(x, "negative")
  if a.dtype.is_bool: raise TypeError("negative: not defined on bool; use logical_not")
  return Array(a.uop.alu(Ops.NEG), a.weak_type)


def positive(x): return asarray_(x, "positive")


def abs(x):
  a = asarray_(x, "abs")
  if a.dtype.is_bool or a.dtype.is_unsigned: return a
  return where(less(a, 0), negative(a), a) if a.dtype.is_int else Array(where(signbit_(a), negative(a), a).uop, a.weak_type)


absolute = abs


def signbit_(a): return less(Array(a.uop.bitcast({2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[a.dtype.itemsize])), 0)


def sign(x):
  a = asarray_(x, "sign")
  if a.dtype.is_bool: return a
  one, zero = _c(a, 1), _c(a, 0)
  s = where(greater(a, 0), one, where(less(a, 0), negative(one) if not a.dtype.is_unsigned else zero, zero))
  return where(isnan(a), a, s) if a.dtype.is_float else s


def reciprocal(x):
  a = asarray_(x, "reciprocal")
  return true_divide(1, a) if not a.dtype.is_float else Array(a.uop.alu(Ops.RECIP), a.weak_type)


def square(x): a = asarray_(x, "square"); return multiply(a, a)


def _half(f):
  """Compute a composed float function in float32 for float16/bfloat16 inputs and cast back."""
  def g(x):
    a, dt = _float(f.__name__, x)
    if dt.itemsize == 2: return cast(f(cast(a, dtypes.float32)), dt, a.weak_type)
    return Array(f(a).uop, a.weak_type)
  g.__name__ = f.__name__
  g.__doc__ = f.__doc__
  return g


@_half
def exp(a): return exp2(multiply(a, LOG2E))
@_half
def log(a): return multiply(log2(a), LN2)
@_half
def log10(a): return multiply(log2(a), math.log10(2.0))


@_half
def log1p(a):
  u = add(a, 1.0)
  return where(equal(u, 1.0), a, where(equal(u, float("inf")), u, multiply(log(u), true_divide(a, subtract(u, 1.0)))))


@_half
def expm1(a):
  u = exp(a)
  um1 = subtract(u, 1.0)
  res = where(equal(u, 1.0), a, where(equal(um1, -1.0), -1.0, multiply(um1, true_divide(a, log(u)))))
  return where(equal(u, float("inf")), u, res)


@_half
def cbrt(a):
  r = exp2(true_divide(log2(abs(a)), 3.0))
  r = where(equal(a, 0.0), a, r)
  return where(signbit_(a), negative(r), r)


@_half
def tan(a): return true_divide(sin(a), cos(a))


def arctan2(y, x):
  (a, b), dt, w = promote("arctan2", y, x)
  if not dt.is_float: a, b = cast(a, dtypes.default_float()), cast(b, dtypes.default_float())
  return elementwise(Ops.ATAN2, a, b, fn="arctan2")


def arctan(x): a, _ = _float("arctan", x); return Array(arctan2(a, _c(a, 1.0)).uop, a.weak_type)
@_half
def arcsin(a): return arctan2(a, sqrt(multiply(subtract(1.0, a), add(1.0, a))))
@_half
def arccos(a): return arctan2(sqrt(multiply(subtract(1.0, a), add(1.0, a))), a)


@_half
def tanh(a):
  e = expm1(multiply(clip(a, -20.0, 20.0), 2.0))
  return true_divide(e, add(e, 2.0))


@_half
def sinh(a):
  e = expm1(abs(a))
  r = where(isinf(e), e, multiply(0.5, add(e, true_divide(e, add(e, 1.0)))))
  return where(signbit_(a), negative(r), r)


@_half
def cosh(a):
  e = exp(abs(a))
  return add(multiply(e, 0.5), true_divide(0.5, e))


@_half
def arcsinh(a):
  x = abs(a)
  big = greater(x, 1e18)
  r = log1p(add(x, true_divide(multiply(x, x), add(1.0, sqrt(add(multiply(x, x), 1.0))))))
  r = where(big, add(log(x), LN2), r)
  return where(signbit_(a), negative(r), r)


@_half
def arccosh(a):
  t = subtract(a, 1.0)
  r = log1p(add(t, sqrt(add(multiply(t, t), multiply(2.0, t)))))
  return where(greater(a, 1e18), add(log(a), LN2), r)


@_half
def arctanh(a): return multiply(0.5, log1p(true_divide(multiply(2.0, a), subtract(1.0, a))))


def hypot(x, y):
  (a, b), dt, w = promote("hypot", x, y)
  a, b = abs(a), abs(b)
  hi, lo = maximum(a, b), minimum(a, b)
  r = multiply(hi, sqrt(add(1.0, square(true_divide(lo, where(equal(hi, 0.0), 1.0, hi))))))
  return where(logical_or(isinf(a), isinf(b)), float("inf"), r)


def logaddexp(x, y):
  (a, b), dt, w = promote("logaddexp", x, y)
  m = maximum(a, b)
  r = add(m, log1p(exp(negative(abs(subtract(a, b))))))
  return where(equal(a, b), add(a, LN2), r)


def copysign(x, y):
  (a, b), dt, w = promote("copysign", x, y)
  if not dt.is_float: a, b = cast(a, dtypes.default_float()), cast(b, dtypes.default_float())
  return where(signbit_(b), negative(abs(a)), abs(a))


def floor(x):
  a = asarray_(x, "floor")
  return a if not a.dtype.is_float else Array(a.uop.alu(Ops.FLOOR), a.weak_type)


def ceil(x):
  a = asarray_(x, "ceil")
  return a if not a.dtype.is_float else negative(floor(negative(a)))


def trunc(x):
  a = asarray_(x, "trunc")
  return a if not a.dtype.is_float else where(less(a, 0), ceil(a), floor(a))


def round(x, decimals: int = 0):
  a = asarray_(x, "round")
  if not a.dtype.is_float: return a
  if decimals:
    s = 10.0 ** decimals
    return true_divide(round(multiply(a, s)), s)
  r = floor(add(a, 0.5))
  tie = equal(subtract(r, a), 0.5)
  odd = not_equal(subtract(r, multiply(floor(multiply(r, 0.5)), 2.0)), 0.0)
  return where(logical_and(tie, odd), subtract(r, 1.0), r)


def isnan(x):
  a = asarray_(x, "isnan")
  return not_equal(a, a) if a.dtype.is_float else Array(UOp.const(dtypes.bool_, False, a.shape))


def isinf(x):
  a = asarray_(x, "isinf")
  return equal(abs(a), float("inf")) if a.dtype.is_float else Array(UOp.const(dtypes.bool_, False, a.shape))


def isfinite(x):
  a = asarray_(x, "isfinite")
  return logical_not(logical_or(isnan(a), isinf(a))) if a.dtype.is_float else Array(UOp.const(dtypes.bool_, True, a.shape))


def fmod(x, y):
  (a, b), dt, w = promote("fmod", x, y)
  if dt.is_bool: a, b, dt = cast(a, dtypes.int32), cast(b, dtypes.int32), dtypes.int32
  if dt.is_int:
    zero = equal(b, 0)
    return where(zero, 0, elementwise(Ops.MOD, a, where(zero, 1, b), fn="fmod"))
  return elementwise(Ops.MOD, a, b, fn="fmod")


def remainder(x, y):
  (a, b), dt, w = promote("remainder", x, y)
  r = fmod(a, b)
  fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))
  return where(fix, add(r, b), r)


mod = remainder


def floor_divide(x, y):
  (a, b), dt, w = promote("floor_divide", x, y)
  if dt.is_bool: a, b, dt = cast(a, dtypes.int32), cast(b, dtypes.int32), dtypes.int32
  if dt.is_int:
    zero = equal(b, 0)
    bs = where(zero, 1, b)
    q = elementwise(Ops.IDIV, a, bs, fn="floor_divide")
    if dt.is_unsigned: return where(zero, 0, q)
    fix = logical_and(not_equal(fmod(a, bs), 0), not_equal(less(a, 0), less(bs, 0)))
    return where(zero, 0, subtract(q, cast(fix, dt)))
  m = fmod(a, b)
  div = true_divide(subtract(a, m), b)
  adj = logical_and(not_equal(m, 0), not_equal(less(b, 0), less(m, 0)))
  div = where(adj, subtract(div, 1.0), div)
  fd = floor(div)
  fd = where(greater(subtract(div, fd), 0.5), add(fd, 1.0), fd)
  return where(equal(b, 0), true_divide(a, b), where(equal(div, 0), multiply(0.0, true_divide(a, b)), fd))


def divmod(x, y): return floor_divide(x, y), remainder(x, y)


def power(x, y):
  """x ** y; integer powers of integers are exact. >>> tnp.power(2, tnp.arange(3))"""
  (a, b), dt, w = promote("power", x, y)
  if dt.is_float: return elementwise(Ops.POW, a, b, fn="power")
  if dt.is_bool: a, b, dt = cast(a, dtypes.int32), cast(b, dtypes.int32), dtypes.int32
  ua, ub = broadcast_uops("power", a, b)
  a, b = Array(ua, w), Array(ub, w)
  acc, base, e = Array(UOp.const(dt, 1, a.shape), w), a, b
  for _ in range(dt.bits):
    acc = where(equal(bitwise_and(e, 1), 1), multiply(acc, base), acc)
    base = multiply(base, base)
    e = right_shift(e, 1)
  if not dt.is_unsigned:
    neg = less(b, 0)
    acc = where(neg, where(equal(a, 1), 1, where(equal(a, -1), where(equal(bitwise_and(b, 1), 1), -1, 1), 0)), acc)
  return acc


def clip(x, min=None, max=None, a_min=None, a_max=None):
  """x limited to [min, max]. >>> tnp.clip(tnp.arange(4), 1, 2)"""
  lo = min if min is not None else a_min
  hi = max if max is not None else a_max
  out = asarray_(x, "clip")
  if lo is not None: out = maximum(out, lo)
  if hi is not None: out = minimum(out, hi)
  return out
