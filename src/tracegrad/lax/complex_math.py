"""Complex elementary functions as compositions on UOps: each reads a complex value's real and imaginary parts (REAL,
IMAG), computes with real primitives in forms that keep numpy's values where a naive formula overflows or cancels,
and joins the parts again (COMPLEX). Differentiating them needs no rules of their own: the rules of REAL, IMAG and
COMPLEX give JAX's conventions. Where a formula is taken only in a region, its operands are read through a select
that gives them harmless values outside it, so that no nan of a branch not taken reaches a gradient (0 * nan).

Values at infinities, nans and signed zeros follow C99's Annex G (as numpy's libm does): each function computes the
finite case with the usual formula and then selects the special cases, so that the selects are the only extra work.

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
from .float_math import INF, NAN, add, div, exp, fabs, hypot, k, log, lt, mul, sel, sub

PI, HALF_PI, LN2 = math.pi, math.pi / 2, math.log(2.0)


def re(z: UOp) -> UOp: return z.alu(Ops.REAL)
def im(z: UOp) -> UOp: return z.alu(Ops.IMAG)
def cx(a: UOp, b: UOp) -> UOp: return a.alu(Ops.COMPLEX, b)
def conj(z: UOp) -> UOp: return cx(re(z), -im(z))
def times_i(z: UOp) -> UOp: return cx(-im(z), re(z))        # i z
def over_i(z: UOp) -> UOp: return cx(im(z), -re(z))         # z / i = -i z
def ck(z: UOp, v: complex) -> UOp: return UOp.const(z.dtype, complex(v), z.shape)


def _and(a: UOp, b: UOp) -> UOp: return a.alu(Ops.AND, b)
def _or(a: UOp, b: UOp) -> UOp: return a.alu(Ops.OR, b)
def _not(a: UOp) -> UOp: return a.alu(Ops.XOR, UOp.const(dtypes.bool_, True, a.shape))
def _isinf(x: UOp) -> UOp: return fm.eq(fabs(x), INF)
def _finite(x: UOp) -> UOp: return fm.eq(sub(x, x), 0.0)    # false for inf and nan


def _unit(x: UOp) -> UOp:
  """-1 where x's sign bit is set, else 1: folding by x * _unit(x) and unfolding by the same product keeps the
  derivative right at -0 (fabs and copysign would flip its sign there)."""
  return sel(fm.signbit(x), -1.0, k(x, 1.0))


# float_math's expm1 and log1p select x itself where 1 + x rounds to 1; the branch not taken then divides 0 by 0, whose
# nan would reach gradients through the select: these carry their derivatives instead
_expm1 = fm.smooth(fm.expm1, lambda x, y: (add(y, 1.0),), "expm1")
_log1p = fm.smooth(fm.log1p, lambda x, y: (div(k(x, 1.0), add(x, 1.0)),), "log1p")
_sinh = fm.smooth(fm.sinh, lambda x, y: (fm.cosh(x),), "sinh")     # float_math's sinh is made of its expm1


def _finite_or(x: UOp, v) -> UOp: return sel(_finite(x), x, v)


def _wide(x: UOp) -> bool: return x.dtype.real.itemsize == 8


def _big(x: UOp) -> float:
  """A magnitude past which tanh(x) rounds to 1 in x's type."""
  return 20.0 if _wide(x) else 10.0


def _far(x: UOp) -> float:
  """A magnitude past which the inverse functions' leading asymptotic term is exact to the type's precision."""
  return 1e8 if _wide(x) else 1e4


def _pick(cond: UOp, a: UOp, b: UOp) -> UOp:
  return cx(cond.where(re(a), re(b)), cond.where(im(a), im(b)))


def abs_(z: UOp) -> UOp: return hypot(re(z), im(z))


def arg(z: UOp) -> UOp: return im(z).alu(Ops.ATAN2, re(z))


def sign(z: UOp) -> UOp:
  """z / |z|, 0 at 0; with an infinite part, the unit vector along it (nan if both are), as numpy."""
  x, y = re(z), im(z)
  # a finite z whose modulus overflows is halved first
  over = _and(_and(_finite(x), _finite(y)), fm.eq(abs_(z), INF))
  x, y = sel(over, mul(x, 0.5), x), sel(over, mul(y, 0.5), y)
  r = hypot(x, y)
  zero = fm.eq(r, 0.0)
  s = sel(zero, 1.0, r)
  a, b = sel(zero, 0.0, div(x, s)), sel(zero, 0.0, div(y, s))
  ix, iy = _isinf(x), _isinf(y)
  unit = lambda v: sel(lt(v, 0.0), -1.0, k(v, 1.0))
  a = sel(ix, sel(iy, NAN, unit(x)), sel(iy, 0.0, a))
  b = sel(ix, sel(iy, NAN, k(y, 0.0)), sel(iy, unit(y), b))
  return cx(a, b)


def exp_(z: UOp) -> UOp:
  x, y = re(z), im(z)
  e = exp(x)
  yz = fm.eq(y, 0.0)
  # a zero imaginary part stays exact (exp(inf + 0j) is inf + 0j, not inf * sin(0) = nan), as y e^x (its derivative)
  a, b = sel(yz, e, mul(e, y.alu(Ops.COS))), sel(yz, mul(y, _finite_or(e, 1.0)), mul(e, y.alu(Ops.SIN)))
  # an infinite or nan imaginary part: 0 for x = -inf, inf + nan i for x = +inf
  bad = _not(_finite(y))
  lo, hi = _and(bad, fm.eq(x, -INF)), _and(bad, fm.eq(x, INF))
  return cx(sel(lo, 0.0, sel(hi, INF, a)), sel(lo, 0.0, sel(hi, NAN, b)))


def expm1(z: UOp) -> UOp:
  """exp(z) - 1 with expm1 and a half-angle sine for the real part, accurate near 0."""
  x, y = re(z), im(z)
  s = mul(y, 0.5).alu(Ops.SIN)
  em = _expm1(x)
  # Re = expm1(x) cos y - 2 sin^2(y/2)
  real = sub(mul(em, y.alu(Ops.COS)), mul(mul(s, s), 2.0))
  yz = fm.eq(y, 0.0)   # a zero imaginary part stays exact, as JAX (expm1(inf + 0j) is inf + 0j; numpy's is inf + nan j)
  return cx(sel(yz, em, real), sel(yz, y, mul(exp(x), y.alu(Ops.SIN))))


def log_(z: UOp) -> UOp:
  """log|z| + i arg z; near the unit circle log|z| is log1p(x^2 + y^2 - 1) / 2, with the larger part's square less 1
  formed as (a - 1)(a + 1), exact there."""
  x, y = re(z), im(z)
  r = abs_(z)
  ax, ay = fabs(x), fabs(y)
  hi, lo = ax.alu(Ops.MAX, ay), ax.alu(Ops.MIN, ay)
  near = _and(lt(k(r, 0.5), r), lt(r, k(r, 2.0)))
  m1 = add(mul(sub(hi, 1.0), add(hi, 1.0)), mul(lo, lo))
  return cx(sel(near, mul(_log1p(m1), 0.5), log(r)), arg(z))


def log1p(z: UOp) -> UOp:
  """log(1 + z): the real part as log1p(2x + x^2 + y^2) / 2 where |1 + z| is near 1, accurate near 0."""
  x, y = re(z), im(z)
  r = abs_(add(z, ck(z, 1.0)))
  near = lt(fabs(sub(r, 1.0)), 0.5)
  small = mul(_log1p(add(mul(x, 2.0), add(mul(x, x), mul(y, y)))), 0.5)
  return cx(sel(near, small, log(r)), y.alu(Ops.ATAN2, add(x, 1.0)))


def log2(z: UOp) -> UOp:
  w = log_(z)
  return cx(mul(re(w), 1.0 / math.log(2.0)), mul(im(w), 1.0 / math.log(2.0)))


def log10(z: UOp) -> UOp:
  w = log_(z)
  return cx(mul(re(w), 1.0 / math.log(10.0)), mul(im(w), 1.0 / math.log(10.0)))


def exp2(z: UOp) -> UOp:
  return exp_(cx(mul(re(z), LN2), mul(im(z), LN2)))


def sqrt_(z: UOp) -> UOp:
  """The principal square root, as C99's csqrt: t = sqrt((|x| + |z|) / 2) on the side of x's sign, no cancellation."""
  x, y = re(z), im(z)
  t = fm.sqrt(mul(add(fabs(x), abs_(z)), 0.5))
  zero = fm.eq(t, 0.0)
  sy = _unit(y)
  other = div(y, mul(sel(zero, 1.0, t), 2.0))        # y / 2t: the other part, with y's sign
  neg = lt(x, 0.0)
  real = sel(neg, sel(zero, 0.0, mul(other, sy)), t)
  imag = sel(neg, mul(t, sy), other)
  iy = _isinf(y)   # sqrt(x + inf i) is inf + inf i, even for a nan x
  return cx(sel(iy, INF, real), sel(iy, y, sel(zero, y, imag)))


def rsqrt(z: UOp) -> UOp: return ck(z, 1.0).alu(Ops.DIV, sqrt_(z))


def _mid_exp(x: UOp) -> tuple[UOp, UOp]:
  """Whether 10 < |x| < 20, and e^|x| there (e^15 elsewhere, so that the branch not taken stays finite)."""
  inside = _and(lt(k(x, 10.0), fabs(x)), lt(fabs(x), k(x, 20.0)))
  return inside, exp(fabs(sel(inside, x, 15.0)))


def _sh(x: UOp) -> UOp:
  """sinh of a real part. float_math.sinh drops e^-|x| past |x| = 10, which float64 still resolves up to |x| = 20."""
  if not _wide(x): return _sinh(x)
  inside, e = _mid_exp(x)
  mid = mul(sub(e, div(k(e, 1.0), e)), 0.5)
  return sel(inside, sel(fm.signbit(x), -mid, mid), _sinh(x))


def _ch(x: UOp) -> UOp:
  """cosh of a real part, as _sh."""
  if not _wide(x): return fm.cosh(x)
  inside, e = _mid_exp(x)
  return sel(inside, mul(add(e, div(k(e, 1.0), e)), 0.5), fm.cosh(x))


def _hyp(x: UOp, t: UOp, odd: bool) -> UOp:
  """sinh(x) t (odd) or cosh(x) t, finite where only sinh(x) or cosh(x) overflows: (e^(|x|/2) t / 2) e^(|x|/2)."""
  big = lt(k(x, _big(x)), fabs(x))
  h = exp(mul(fabs(sel(big, x, 0.0)), 0.5))
  far = mul(mul(mul(h, 0.5), t), h)
  if odd: far = sel(fm.signbit(x), -far, far)
  xn = sel(big, 0.0, x)
  return sel(big, far, mul(_sh(xn) if odd else _ch(xn), t))


def sinh(z: UOp) -> UOp:
  x, y = re(z), im(z)
  yz, bad = fm.eq(y, 0.0), _not(_finite(y))
  a = sel(yz, _sh(x), _hyp(x, y.alu(Ops.COS), True))
  # sinh(+-0 + inf i) = +-0 + nan i, sinh(+-inf + inf i) = inf + nan i (C99 leaves the sign open; glibc's)
  a = sel(_and(bad, fm.eq(x, 0.0)), x, sel(_and(bad, _isinf(x)), INF, a))
  # on the real axis the imaginary part is y cosh(x) (exactly +-0, with the derivative cosh x)
  return cx(a, sel(yz, mul(y, _finite_or(_ch(x), 1.0)), _hyp(x, y.alu(Ops.SIN), False)))


def cosh(z: UOp) -> UOp:
  x, y = re(z), im(z)
  yz, bad = fm.eq(y, 0.0), _not(_finite(y))
  a = sel(yz, _ch(x), _hyp(x, y.alu(Ops.COS), False))
  a = sel(_and(bad, _isinf(x)), INF, a)                                   # cosh(inf + inf i) = inf + nan i
  # on the real axis the imaginary part is y sinh(x), a signed zero, also for infinite or nan x
  b = sel(yz, mul(y, _finite_or(_sh(x), fm.copysign(k(x, 1.0), x))), _hyp(x, y.alu(Ops.SIN), True))
  b = sel(_and(bad, fm.eq(x, 0.0)), 0.0, b)                               # cosh(0 + inf i) = nan + 0i
  return cx(a, b)


def sin(z: UOp) -> UOp:
  """-i sinh(i z); with an infinite imaginary part beside a non-finite real one, nan + inf i (glibc's sign)."""
  w = over_i(sinh(times_i(z)))
  odd = _and(_isinf(im(z)), _not(_finite(re(z))))
  return cx(re(w), sel(odd, INF, im(w)))
def cos(z: UOp) -> UOp: return cosh(times_i(z))             # cos z = cosh(i z)


def tanh(z: UOp) -> UOp:
  """(sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y): the denominator is cosh 2x + cos 2y halved without its
  cancellation near the poles; tanh's limit +-1 + 0i where sinh^2 x overflows."""
  x, y = re(z), im(z)
  big = lt(k(x, _big(x)), fabs(x))
  xn = sel(big, 0.0, x)          # the near formula reads a harmless x where it is not taken (its nan would reach grads)
  sx, cy, sy = _sh(xn), y.alu(Ops.COS), y.alu(Ops.SIN)
  d = add(mul(sx, sx), mul(cy, cy))
  sc = mul(sy, cy)
  real = sel(big, fm.copysign(k(x, 1.0), x), div(mul(sx, _ch(xn)), d))
  # where sinh^2 x overflows, sin 2y / cosh 2x is 4 sin y cos y e^(-2|x|)
  tail = mul(mul(sc, 4.0), exp(mul(fabs(x), -2.0)))
  imag = sel(big, tail, div(sc, d))
  # a finite x beside an infinite or nan y gives nan (but +-0 keeps its real part); an infinite x gives +-1 + 0i
  bad = _not(_finite(y))
  real, imag = sel(bad, sel(fm.eq(x, 0.0), x, NAN), real), sel(bad, NAN, imag)
  ix = _isinf(x)
  real = sel(ix, fm.copysign(k(x, 1.0), x), real)
  imag = sel(ix, fm.copysign(k(x, 0.0), sel(_isinf(y), y, sc)), imag)
  nx = fm.isnan(x)
  return cx(sel(nx, x, real), sel(nx, sel(fm.eq(y, 0.0), y, NAN), imag))


def tan(z: UOp) -> UOp: return over_i(tanh(times_i(z)))   # tan z = -i tanh(i z)


def _series(z: UOp, terms) -> UOp:
  """z (c0 + c1 z^2 + c2 z^4 + ...): the odd series used for inverse functions near 0."""
  z2, acc = z * z, ck(z, terms[-1])
  for c in reversed(terms[:-1]): acc = acc * z2 + ck(z, c)
  return z * acc


def _near_zero(z: UOp) -> UOp: return lt(abs_(z), k(re(z), 1e-2 if _wide(z) else 0.1))


def _swap(z: UOp) -> UOp: return cx(im(z), re(z))          # i conj(z): asin z = swap(asinh(swap z)), and so on


def _asin_acos(z: UOp) -> tuple[UOp, UOp]:
  """asin z and acos z by Hull, Fairgrieve and Tang's algorithm (ACM TOMS 23, 1997): on the first quadrant, with
  A = (|z + 1| + |z - 1|) / 2 and B = x / A, Re asin = asin B and Im asin = log(A + sqrt(A^2 - 1)), each in a form
  without cancellation in its region; the other quadrants by symmetry, log(2|z|) far out."""
  X, Y = re(z), im(z)
  sx, sy = _unit(X), _unit(Y)
  x, y = mul(X, sx), mul(Y, sy)
  xp1, xm1, omx = add(x, 1.0), sub(x, 1.0), sub(k(x, 1.0), x)
  r, s = hypot(xp1, y), hypot(xm1, y)
  A = mul(add(r, s), 0.5)
  B = div(x, A)
  y2, rx1, apx = mul(y, y), add(r, xp1), add(A, x)
  below, under = _not(lt(k(x, 1.0), x)), lt(x, 1.0)                 # x <= 1, x < 1
  # Each branch reads its operands through sel(its region, operand, a harmless value), so that a branch not taken
  # cannot divide by zero or take a square root of a negative there: its nan would reach the gradient (0 * nan).
  # The real parts: asin B and acos B where B is away from 1, else atan2 against D = A sqrt(1 - B^2) formed exactly
  d_lo = fm.sqrt(sel(below, mul(mul(apx, 0.5), add(div(y2, rx1), add(s, omx))), 1.0))
  d_hi = mul(y, fm.sqrt(mul(add(div(apx, rx1), div(apx, sel(below, 1.0, add(s, xm1)))), 0.5)))
  d = sel(below, d_lo, d_hi)
  cross = _not(lt(k(B, 0.6417), B))
  bq = sel(cross, B, 0.5)
  q = fm.sqrt(mul(sub(k(bq, 1.0), bq), add(bq, 1.0)))
  ra, rc = sel(cross, B.alu(Ops.ATAN2, q), x.alu(Ops.ATAN2, d)), sel(cross, q.alu(Ops.ATAN2, B), d.alu(Ops.ATAN2, x))
  # the imaginary part: log1p(Am1 + sqrt(Am1 (A + 1))) with Am1 = A - 1 formed exactly, while A <= 1.5
  am1 = mul(add(div(y2, rx1), sel(under, div(y2, sel(under, add(s, omx), 1.0)), add(s, xm1))), 0.5)
  tiny = _and(under, lt(y, mul(omx, 1e-8 if _wide(x) else 1e-4)))
  i = _log1p(add(am1, fm.sqrt(sel(tiny, 1.0, mul(am1, add(A, 1.0))))))
  wide = lt(k(A, 1.5), A)
  aw = sel(wide, A, 2.0)
  i = sel(wide, log(add(aw, fm.sqrt(mul(sub(aw, 1.0), add(aw, 1.0))))), i)
  # a y so small beside 1 - x that y^2 underflows: Im asin = y / sqrt(1 - x^2)
  i = sel(tiny, div(y, fm.sqrt(mul(sel(under, omx, 1.0), xp1))), i)
  # far out (and at infinities): asin z = atan2(x, y) + i log(2|z|)
  far = lt(k(A, _far(A)), A)
  ra, rc = sel(far, x.alu(Ops.ATAN2, y), ra), sel(far, y.alu(Ops.ATAN2, x), rc)
  i = sel(far, add(log(A), LN2), i)
  zx = _and(fm.eq(x, 0.0), fm.isnan(y))                            # asin(0 + nan i) = 0 + nan i
  ra, rc = sel(zx, x, ra), sel(zx, HALF_PI, rc)
  si = mul(i, sy)
  return cx(mul(ra, sx), si), cx(sel(fm.signbit(X), sub(k(rc, PI), rc), rc), -si)


def asin(z: UOp) -> UOp: return _asin_acos(z)[0]
def acos(z: UOp) -> UOp: return _asin_acos(z)[1]
def asinh(z: UOp) -> UOp: return _swap(asin(_swap(z)))    # asinh(i conj z) = i conj(asin z)


def acosh(z: UOp) -> UOp:
  """+-i acos z, the sign that gives a real part >= 0 (numpy's branch); nan + i pi/2 at +-0 + nan i, as glibc."""
  w = acos(z)
  rx, ry = re(w), im(w)
  y = im(z)
  b = sel(_and(fm.isnan(ry), _not(fm.isnan(rx))), ry, mul(rx, _unit(y)))
  return cx(fabs(ry), sel(_and(fm.eq(re(z), 0.0), fm.isnan(y)), HALF_PI, b))


def atanh(z: UOp) -> UOp:
  """Re = log1p(4x / ((1 - x)^2 + y^2)) / 4, Im = atan2(2y, (1 - x)(1 + x) - y^2) / 2; 1/z + i pi/2 far out, a series
  near 0."""
  x, y = re(z), im(z)
  sx = _unit(x)
  ax = mul(x, sx)
  omx, oma = sub(k(x, 1.0), x), sub(k(x, 1.0), ax)
  # Re is odd in x: on |x| the argument of log1p is >= 0; near |x| = 1, where (1 - |x|)^2 + y^2 may underflow, it is
  # (log|1 + |x| + iy| - log|1 - |x| - iy|) / 2, a difference without cancellation there
  a = mul(_log1p(div(mul(ax, 4.0), add(mul(oma, oma), mul(y, y)))), 0.25)
  d = hypot(oma, y)
  a = sel(lt(d, 0.5), mul(sub(log(hypot(add(ax, 1.0), y)), log(d)), 0.5), a)
  a = mul(a, sx)
  b = mul(mul(y, 2.0).alu(Ops.ATAN2, sub(mul(omx, add(x, 1.0)), mul(y, y))), 0.5)
  r = abs_(z)
  inf = fm.eq(r, INF)
  s = sel(inf, 1.0, r)
  far_re = sel(inf, fm.copysign(k(x, 0.0), x), div(div(x, s), s))
  far_im = sub(fm.copysign(k(y, HALF_PI), y), sel(inf, 0.0, div(div(y, s), s)))
  out = _pick(lt(k(r, _far(r)), r), cx(far_re, sel(fm.isnan(y), y, far_im)), cx(a, b))
  out = _pick(_near_zero(z), _series(z, [1.0, 1 / 3, 1 / 5, 1 / 7, 1 / 9, 1 / 11]), out)
  return cx(sel(_and(fm.eq(x, 0.0), fm.isnan(y)), x, re(out)), im(out))     # atanh(0 + nan i) = 0 + nan i


def atan(z: UOp) -> UOp: return _swap(atanh(_swap(z)))


def reciprocal(z: UOp) -> UOp:
  """1 / z by numpy's formula (Smith's, with the smaller part divided by the larger): nan + nan i at 0, as numpy."""
  x, y = re(z), im(z)
  small = fm.eq(fabs(y).alu(Ops.MAX, fabs(x)), fabs(x))    # |y| <= |x| (or a nan)
  r1 = div(y, sel(small, x, 1.0))     # each branch divides by the larger part only where it is taken
  d1 = add(x, mul(y, r1))
  r2 = div(x, sel(small, 1.0, y))
  d2 = add(mul(x, r2), y)
  return cx(sel(small, div(k(x, 1.0), d1), div(r2, d2)), sel(small, div(-r1, d1), div(k(y, -1.0), d2)))


def square(z: UOp) -> UOp: return z * z


def power(z: UOp, w: UOp) -> UOp:
  """exp(w log z); at z = 0, as numpy: 0 for Re(w) > 0, 1 for w = 0, else nan."""
  r = abs_(z)
  zero = fm.eq(r, 0.0)
  p = exp_(w * log_(_pick(zero, ck(z, 1.0), z)))     # log 0 only where it is not taken: no nan in gradients at 0
  pos = lt(k(r, 0.0), re(w))
  out = _pick(zero, _pick(pos, ck(z, 0.0), ck(z, complex(NAN, NAN))), p)
  # z ** 0 is 1 also where log z is not finite (elsewhere exp(0 log z) is exactly 1, with the derivative log z in w)
  w0 = _and(fm.eq(abs_(w), 0.0), _or(zero, _not(_finite(r))))
  return _pick(w0, ck(z, 1.0), out)


BODIES = {
  "exp": exp_, "exp2": exp2, "expm1": expm1, "log": log_, "log2": log2, "log10": log10, "log1p": log1p,
  "sqrt": sqrt_, "rsqrt": rsqrt, "sin": sin, "cos": cos, "tan": tan, "sinh": sinh, "cosh": cosh, "tanh": tanh,
  "arcsin": asin, "asin": asin, "arccos": acos, "acos": acos, "arctan": atan, "atan": atan,
  "arcsinh": asinh, "asinh": asinh, "arccosh": acosh, "acosh": acosh, "arctanh": atanh, "atanh": atanh,
  "reciprocal": reciprocal, "square": square,
}
