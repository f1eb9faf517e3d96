"""Floating-point compositions on UOps of one shape and dtype, for lax's elementwise functions: the only
transcendental primitives are EXP2 LOG2 SIN COS SQRT POW ATAN2, so exp, log, expm1, log1p, the hyperbolic functions
and cbrt are written here in forms that stay accurate near their hard points, and `smooth` gives a composition the
derivative of the function it computes (rather than of its nodes).
"""
from __future__ import annotations

import functools
import math

from .. import tree as tree_util
from ..array import Array
from ..ir import Graph, Ops, UOp, composite, dtypes
from ..ir.ops import CONTRACT

LN2, LOG2E = math.log(2.0), 1.0 / math.log(2.0)
INF, NAN = float("inf"), float("nan")


def k(u: UOp, v, dtype=None) -> UOp: return UOp.const(dtype or u.dtype, v, u.shape)
def c(u: UOp, v) -> UOp: return v if isinstance(v, UOp) else k(u, v)
def add(a, b): return a.alu(Ops.ADD, c(a, b))
def sub(a, b): return a.alu(Ops.SUB, c(a, b))
def mul(a, b): return a.alu(Ops.MUL, c(a, b))
def div(a, b): return a.alu(Ops.DIV, c(a, b))
def lt(a, b): return a.alu(Ops.CMPLT, c(a, b))
def gt(a, b): return c(a, b).alu(Ops.CMPLT, a)
def eq(a, b): return a.alu(Ops.CMPEQ, c(a, b))
def ne(a, b): return a.alu(Ops.CMPNE, c(a, b))
def isnan(u): return ne(u, u)
def exp2(u): return u.alu(Ops.EXP2)
def log2(u): return u.alu(Ops.LOG2)
def sqrt(u): return u.alu(Ops.SQRT)
def floor(u): return u.alu(Ops.FLOOR)
def exp(u): return exp2(mul(u, LOG2E))
def log(u): return mul(log2(u), LN2)


def sel(cond: UOp, a, b) -> UOp:
  ref = a if isinstance(a, UOp) else b  # at most one of a and b is a Python number
  return cond.where(c(ref, a), c(ref, b))


def sint(d) -> dtypes.DType: return {1: dtypes.int8, 2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[d.itemsize]
def uint(d) -> dtypes.DType: return {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[d.itemsize]
def signbit(u: UOp) -> UOp: return lt(u.bitcast(sint(u.dtype)), 0)


def fabs(u: UOp) -> UOp:
  """|u|, differentiable (derivative +1 at 0, as JAX); adding +0.0 turns -0.0 into +0.0."""
  return add(sel(lt(u, 0.0), -u, u), 0.0)


def copysign(a: UOp, b: UOp) -> UOp:
  mag = fabs(a)
  return sel(signbit(b), -mag, mag)


def hypot(a: UOp, b: UOp) -> UOp:
  """sqrt(a^2 + b^2) without overflow or underflow; inf where either is infinite, even beside a nan."""
  a, b = fabs(a), fabs(b)
  hi, lo = a.alu(Ops.MAX, b), a.alu(Ops.MIN, b)
  q = div(lo, sel(eq(hi, 0.0), 1.0, hi))
  r = mul(hi, sqrt(add(k(hi, 1.0), mul(q, q))))
  return sel(eq(a, INF).alu(Ops.OR, eq(b, INF)), INF, r)


def mul_add(a: UOp, b: UOp, d) -> UOp:
  """a * b + d, which the compiler may fuse into one multiply-add (a CONTRACT product)."""
  return UOp(Ops.MUL, a.dtype, (a, b), CONTRACT).alu(Ops.ADD, c(a, d))


def horner(coeffs, z: UOp) -> UOp:
  p = k(z, coeffs[0])
  for v in coeffs[1:]: p = mul_add(p, z, v)
  return p


def expm1(x):
  # Kahan: with u = exp(x) rounded, (u - 1) * x / log(u) cancels the rounding error of u
  u = exp(x)
  um1 = sub(u, 1.0)
  r = mul(um1, div(x, log(u)))
  r = sel(eq(um1, -1.0), -1.0, r)
  r = sel(eq(u, INF), u, r)
  return sel(eq(u, 1.0), x, r)


def log1p(x):
  # Kahan: log(u) * x / (u - 1) with u = 1 + x rounded
  u = add(x, 1.0)
  r = mul(log(u), div(x, sub(u, 1.0)))
  r = sel(eq(u, INF), u, r)
  return sel(eq(u, 1.0), x, r)


def round_even(u: UOp) -> UOp:
  """Round half to even, exactly: r = floor(u) and u - r are exact in binary floating point."""
  r = floor(u)
  d = sub(u, r)
  odd = ne(sub(r, mul(floor(mul(r, 0.5)), 2.0)), 0.0)
  up = gt(d, 0.5).alu(Ops.OR, eq(d, 0.5).alu(Ops.AND, odd))
  return copysign(sel(up, add(r, 1.0), r), u)


def round_away(u: UOp) -> UOp:
  """Round half away from zero: floor(|u| + 0.5) unless that overshoots (|u| just below a half)."""
  a = fabs(u)
  r = floor(add(a, 0.5))
  r = sel(gt(sub(r, a), 0.5), sub(r, 1.0), r)
  return copysign(r, u)


def sqrt1mx2(x): return sqrt(mul(sub(k(x, 1.0), x), add(x, 1.0)))  # sqrt(1 - x^2), accurate near |x| = 1


def _far(x) -> float:
  """|x| past which e^-|x| is below half an ulp of e^|x| in x's type (sinh and cosh then drop it)."""
  return 20.0 if x.dtype.itemsize == 8 else 10.0


def sinh(x):
  a = fabs(x)
  e = expm1(a)
  small = mul(add(e, div(e, add(e, 1.0))), 0.5)
  h = exp(mul(a, 0.5))
  return copysign(sel(gt(a, _far(x)), mul(mul(h, 0.5), h), small), x)


def cosh(x):
  a = fabs(x)
  e = exp(a)
  h = exp(mul(a, 0.5))
  return sel(gt(a, _far(x)), mul(mul(h, 0.5), h), add(mul(e, 0.5), div(k(e, 0.5), e)))


# tanh(x) = x p(x^2) / q(x^2) on [0, 9], a rational fit within 0.8 ulp in exact arithmetic. Evaluated in float32 by
# multiply-adds it is within 4.9 ulp and below 1 up to _TANH_ONE (6.4 ulp, and at most 1, by multiplies and adds;
# both checked over every float32), where |x| is clamped and tanh is 1
_TANH_P = tuple(map(float.fromhex, ("-0x1.aede36p-37", "0x1.0736e8p-25", "0x1.d648f8p-16", "0x1.fb2ee8p-9",
                                    "0x1.182f10p-3", "0x1p0")))
_TANH_Q = tuple(map(float.fromhex, ("0x1.5a0528p-20", "0x1.9d3664p-12", "0x1.be7756p-6", "0x1.e16cdcp-2", "0x1p0")))

_TANH_ONE = float.fromhex("0x1.fa271cp+2")   # 7.908637


def tanh(x):
  if x.dtype == dtypes.float64:
    e = expm1(mul(x.alu(Ops.MAX, k(x, -20.0)).alu(Ops.MIN, k(x, 20.0)), 2.0))
    return div(e, add(e, 2.0))
  # float32 (the XLA way: no exp, one division), on |x| with x's sign put back
  bits = x.bitcast(dtypes.uint32)
  a = bits.alu(Ops.AND, k(bits, 0x7fffffff)).bitcast(x.dtype).alu(Ops.MIN, k(x, _TANH_ONE))
  z = mul(a, a)
  r = sel(eq(a, _TANH_ONE), 1.0, div(mul(a, horner(_TANH_P, z)), horner(_TANH_Q, z))).bitcast(dtypes.uint32)
  return r.alu(Ops.OR, bits.alu(Ops.AND, k(bits, 0x80000000))).bitcast(x.dtype)


def asinh(x):
  a = fabs(x)
  aa = mul(a, a)
  r = log1p(add(a, div(aa, add(sqrt(add(aa, 1.0)), 1.0))))
  return copysign(sel(gt(a, 1e18), add(log(a), LN2), r), x)


def acosh(x):
  t = sub(x, 1.0)
  r = log1p(add(t, sqrt(mul(t, add(t, 2.0)))))
  r = sel(lt(x, 1.0), NAN, r)
  return sel(gt(x, 1e18), add(log(x), LN2), r)


def atanh(x): return mul(log1p(div(mul(x, 2.0), sub(k(x, 1.0), x))), 0.5)


def cbrt(x):
  a = fabs(x)
  r = a.alu(Ops.POW, k(a, 1.0 / 3.0))
  r = sub(r, div(sub(r, div(a, mul(r, r))), 3.0))  # one Newton step
  r = sel(eq(a, 0.0).alu(Ops.OR, eq(a, INF)), a, r)
  return copysign(r, x)


def logistic(x):
  # 1 / (1 + e^-|x|) for x >= 0, and e^-|x| / (1 + e^-|x|) below: no cancellation on either side
  e = exp(-fabs(x))
  pos = div(k(x, 1.0), add(e, 1.0))
  return sel(lt(x, 0.0), mul(e, pos), pos)


_LEAF = tree_util.structure(0)


def smooth(body, deriv, name: str | None = None):
  """body (UOps -> UOp) whose derivative is deriv(*xs, y) -> one partial per x, as a CUSTOM_JVP node: every transform
  uses deriv instead of differentiating body's nodes (which select at hard points, or round). In a traced graph the
  node sits in a composite named `name` (default: body's name without leading underscores), so it prints as `tanh a`."""
  name = name or body.__name__.lstrip("_")

  @functools.lru_cache(maxsize=256)
  def graph(avals) -> Graph:
    ps = [UOp.param(shape, dt) for shape, dt in avals]
    return Graph(tuple(ps), (body(*ps),))

  def rule(primals, tangents):
    xs = [p.uop for p in primals]
    y = node(*xs)
    t = None
    for ti, d in zip(tangents, deriv(*xs, y)):
      if d is None: continue
      t = mul(ti.uop, d) if t is None else add(t, mul(ti.uop, d))
    return Array(y), Array(k(y, 0.0) if t is None else t)

  def custom(*us: UOp) -> UOp:
    tree = tree_util.structure(tuple(range(len(us))))
    return UOp.multi(Ops.CUSTOM_JVP, us, (graph(tuple((u.shape, u.dtype) for u in us)), rule, tree, _LEAF, 0))[0]

  def node(*us: UOp) -> UOp: return composite(name, custom, *us)[0]

  rule.__name__ = f"{name}_derivative"
  return node
