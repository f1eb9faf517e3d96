"""Complex elementary functions as compositions on UOps: each reads a complex value's real and imaginary parts (REAL,
IMAG), computes with real primitives in forms that keep numpy's values where a naive formula overflows or cancels,
and joins the parts again (COMPLEX). Differentiating them needs no rules of their own: the rules of REAL, IMAG and
COMPLEX give JAX's conventions.

`BODIES` maps a function's name to its complex body; lax and tracegrad.numpy look up the name when an operand is
complex.

>>> z = UOp.const(dtypes.complex64, 1j)
>>> BODIES["exp"](z).dtype
DType(complex64)
"""
from __future__ import annotations

import math

from ..ir import Ops, UOp, dtypes
from . import float_math as fm
from .float_math import INF, add, div, exp, fabs, hypot, k, log, lt, mul, sel, sub


def re(z: UOp) -> UOp: return z.alu(Ops.REAL)
def im(z: UOp) -> UOp: return z.alu(Ops.IMAG)
def cx(a: UOp, b: UOp) -> UOp: return a.alu(Ops.COMPLEX, b)
def conj(z: UOp) -> UOp: return cx(re(z), -im(z))
def times_i(z: UOp) -> UOp: return cx(-im(z), re(z))        # i z
def over_i(z: UOp) -> UOp: return cx(im(z), -re(z))         # z / i = -i z
def ck(z: UOp, v: complex) -> UOp: return UOp.const(z.dtype, complex(v), z.shape)


def _big(x: UOp) -> float:
  """A magnitude past which tanh(x) rounds to 1 in x's type."""
  return 10.0 if x.dtype.itemsize == 4 else 20.0


def abs_(z: UOp) -> UOp: return hypot(re(z), im(z))


def arg(z: UOp) -> UOp: return im(z).alu(Ops.ATAN2, re(z))


def sign(z: UOp) -> UOp:
  """z / |z|, 0 at 0."""
  r = abs_(z)
  zero = fm.eq(r, 0.0)
  s = sel(zero, 1.0, r)
  return cx(sel(zero, 0.0, div(re(z), s)), sel(zero, 0.0, div(im(z), s)))


def exp_(z: UOp) -> UOp:
  x, y = re(z), im(z)
  e = exp(x)
  # a zero imaginary part stays exact (exp(inf + 0j) is inf + 0j, not inf * sin(0) = nan)
  return cx(sel(fm.eq(y, 0.0), e, mul(e, y.alu(Ops.COS))), sel(fm.eq(y, 0.0), y, mul(e, y.alu(Ops.SIN))))


def expm1(z: UOp) -> UOp:
  """exp(z) - 1 with expm1 and a half-angle sine for the real part, accurate near 0."""
  x, y = re(z), im(z)
  s = mul(y, 0.5).alu(Ops.SIN)
  em = fm.expm1(x)
  # Re = expm1(x) cos y - 2 sin^2(y/2)
  real = sub(mul(em, y.alu(Ops.COS)), mul(mul(s, s), 2.0))
  return cx(real, mul(exp(x), y.alu(Ops.SIN)))


def log_(z: UOp) -> UOp: return cx(log(abs_(z)), arg(z))


def log1p(z: UOp) -> UOp:
  """log(1 + z): the real part as log1p(2x + x^2 + y^2) / 2 where |1 + z| is near 1, accurate near 0."""
  x, y = re(z), im(z)
  r = abs_(add(z, ck(z, 1.0)))
  near = lt(fabs(sub(r, 1.0)), 0.5)
  small = mul(fm.log1p(add(mul(x, 2.0), add(mul(x, x), mul(y, y)))), 0.5)
  return cx(sel(near, small, log(r)), y.alu(Ops.ATAN2, add(x, 1.0)))


def log2(z: UOp) -> UOp:
  w = log_(z)
  return cx(mul(re(w), 1.0 / math.log(2.0)), mul(im(w), 1.0 / math.log(2.0)))


def log10(z: UOp) -> UOp:
  w = log_(z)
  return cx(mul(re(w), 1.0 / math.log(10.0)), mul(im(w), 1.0 / math.log(10.0)))


def exp2(z: UOp) -> UOp:
  return exp_(cx(mul(re(z), math.log(2.0)), mul(im(z), math.log(2.0))))


def sqrt_(z: UOp) -> UOp:
  """The principal square root, as C99's csqrt: t = sqrt((|x| + |z|) / 2) on the side of x's sign, no cancellation."""
  x, y = re(z), im(z)
  t = fm.sqrt(mul(add(fabs(x), abs_(z)), 0.5))
  zero = fm.eq(t, 0.0)
  other = div(fabs(y), mul(sel(zero, 1.0, t), 2.0))
  other = sel(zero, 0.0, sel(fm.eq(fabs(y), INF), INF, other))
  neg = lt(x, 0.0)
  real = sel(neg, other, t)
  imag = sel(neg, fm.copysign(t, y), fm.copysign(other, y))
  return cx(real, sel(zero, y, imag))


def rsqrt(z: UOp) -> UOp: return ck(z, 1.0).alu(Ops.DIV, sqrt_(z))


def sin(z: UOp) -> UOp:
  x, y = re(z), im(z)
  return cx(mul(x.alu(Ops.SIN), fm.cosh(y)), mul(x.alu(Ops.COS), fm.sinh(y)))


def cos(z: UOp) -> UOp:
  x, y = re(z), im(z)
  return cx(mul(x.alu(Ops.COS), fm.cosh(y)), -mul(x.alu(Ops.SIN), fm.sinh(y)))


def sinh(z: UOp) -> UOp:
  x, y = re(z), im(z)
  return cx(sel(fm.eq(y, 0.0), fm.sinh(x), mul(fm.sinh(x), y.alu(Ops.COS))),
            sel(fm.eq(y, 0.0), y, mul(fm.cosh(x), y.alu(Ops.SIN))))


def cosh(z: UOp) -> UOp:
  x, y = re(z), im(z)
  return cx(sel(fm.eq(y, 0.0), fm.cosh(x), mul(fm.cosh(x), y.alu(Ops.COS))),
            sel(fm.eq(y, 0.0), mul(y, x), mul(fm.sinh(x), y.alu(Ops.SIN))))


def tanh(z: UOp) -> UOp:
  """(sinh 2x + i sin 2y) / (cosh 2x + cos 2y), with tanh's limit +-1 + 0i where cosh 2x overflows."""
  x, y = re(z), im(z)
  x2, y2 = mul(x, 2.0), mul(y, 2.0)
  d = add(fm.cosh(x2), y2.alu(Ops.COS))
  big = lt(k(x, _big(x)), fabs(x))
  real = sel(big, fm.copysign(k(x, 1.0), x), div(fm.sinh(x2), d))
  # where cosh 2x overflows, sin 2y / cosh 2x is 4 sin y cos y e^(-2|x|)
  tail = mul(mul(mul(y.alu(Ops.SIN), y.alu(Ops.COS)), 4.0), exp(mul(fabs(x), -2.0)))
  imag = sel(big, tail, sel(fm.eq(y, 0.0), y, div(y2.alu(Ops.SIN), d)))
  return cx(real, imag)


def tan(z: UOp) -> UOp: return over_i(tanh(times_i(z)))   # tan z = -i tanh(i z)


def _series(z: UOp, terms) -> UOp:
  """z (c0 + c1 z^2 + c2 z^4 + ...): the odd series used for inverse functions near 0."""
  z2, acc = z * z, ck(z, terms[-1])
  for c in reversed(terms[:-1]): acc = acc * z2 + ck(z, c)
  return z * acc


def _near_zero(z: UOp) -> UOp: return lt(abs_(z), k(re(z), 1e-2 if z.dtype.itemsize == 8 else 0.1))


def asinh(z: UOp) -> UOp:
  """log(z + sqrt(z^2 + 1)) on the right half plane, odd symmetry on the left, a series near 0."""
  flip = lt(re(z), 0.0)
  w = cx(fabs(re(z)), sel(flip, -im(z), im(z)))
  big = log_(w + sqrt_(w * w + ck(w, 1.0)))
  big = cx(sel(flip, -re(big), re(big)), sel(flip, -im(big), im(big)))
  small = _series(z, [1.0, -1 / 6, 3 / 40, -5 / 112, 35 / 1152, -63 / 2816])
  return _pick(_near_zero(z), small, big)


def asin(z: UOp) -> UOp: return over_i(asinh(times_i(z)))   # asin z = -i asinh(i z)


def acos(z: UOp) -> UOp:
  """pi/2 - asin z, with the real part kept for z on the real axis beyond 1 (numpy's branch cut)."""
  a = asin(z)
  return cx(sub(k(re(a), math.pi / 2), re(a)), -im(a))


def atanh(z: UOp) -> UOp:
  """(log1p(z) - log1p(-z)) / 2, a series near 0."""
  big = log1p(z) - log1p(-z)
  big = cx(mul(re(big), 0.5), mul(im(big), 0.5))
  small = _series(z, [1.0, 1 / 3, 1 / 5, 1 / 7, 1 / 9, 1 / 11])
  return _pick(_near_zero(z), small, big)


def atan(z: UOp) -> UOp: return over_i(atanh(times_i(z)))   # atan z = -i atanh(i z)


def acosh(z: UOp) -> UOp:
  """log(z + sqrt(z + 1) sqrt(z - 1)): the principal branch numpy uses."""
  one = ck(z, 1.0)
  return log_(z + sqrt_(z + one) * sqrt_(z - one))


def _pick(cond: UOp, a: UOp, b: UOp) -> UOp:
  return cx(cond.where(re(a), re(b)), cond.where(im(a), im(b)))


def reciprocal(z: UOp) -> UOp: return z.alu(Ops.RECIP)
def square(z: UOp) -> UOp: return z * z


def power(z: UOp, w: UOp) -> UOp:
  """exp(w log z), with 0 ** w = 0 for Re(w) > 0 and 1 for w = 0, as numpy."""
  p = exp_(w * log_(z))
  zero = fm.eq(abs_(z), 0.0)
  w0 = fm.eq(abs_(w), 0.0)
  return _pick(w0, ck(z, 1.0), _pick(zero.alu(Ops.AND, lt(k(re(w), 0.0), re(w))), ck(z, 0.0), p))


BODIES = {
  "exp": exp_, "exp2": exp2, "expm1": expm1, "log": log_, "log2": log2, "log10": log10, "log1p": log1p,
  "sqrt": sqrt_, "rsqrt": rsqrt, "sin": sin, "cos": cos, "tan": tan, "sinh": sinh, "cosh": cosh, "tanh": tanh,
  "arcsin": asin, "asin": asin, "arccos": acos, "acos": acos, "arctan": atan, "atan": atan,
  "arcsinh": asinh, "asinh": asinh, "arccosh": acosh, "acosh": acosh, "arctanh": atanh, "atanh": atanh,
  "reciprocal": reciprocal, "square": square,
}
