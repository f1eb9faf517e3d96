"""log, exp and cos(2 pi u) built from + - * / and bit operations only. IEEE rounds those alike everywhere (numpy on
interp, C without contraction on cpu), so a value computed with these is the same bits eagerly, under jit and under
vmap; tracegrad.random draws through them. Within 3 ulp for float32 and float64 over the ranges noted.

>>> float(log(tnp.float32(2.0)))
0.6931471824645996
"""
from __future__ import annotations

import decimal
import math

import numpy as np

from .. import lax
from .. import numpy as tnp
from ..array import Array
from ..ir import Ops, UOp, dtypes
from ..ir.ops import FUSED


LN2 = decimal.Context(prec=40).ln(2)


def _layout(d):
  """(unsigned word type, mantissa bits, exponent bias, series terms) of float type d."""
  return (tnp.uint64, 52, 1023, 12) if d is dtypes.float64 else (tnp.uint32, 23, 127, 6)


def _ln2(d) -> tuple[float, float]:
  """ln 2 split so that hi times any exponent is exact: hi keeps 16 bits (float32) or 32 bits (float64)."""
  keep = 16 if d is dtypes.float32 else 32
  hi = math.floor(LN2 * 2 ** keep) / 2 ** keep
  return hi, float(LN2 - decimal.Decimal(hi))


def log(x: Array) -> Array:
  """The natural log of positive normal x (0 gives -inf): x = 2^e m with m in [sqrt(1/2), sqrt(2)), and
  log m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| < 0.172, summed as an odd series."""
  x = tnp.asarray(x)
  d = x.dtype
  word, bits, bias, terms = _layout(d)
  w = lax.bitcast_convert_type(x, word)
  e = (w >> bits).astype(tnp.int32) - bias
  m = lax.bitcast_convert_type((w & ((1 << bits) - 1)) | (bias << bits), d)   # in [1, 2)
  big = m > math.sqrt(2)
  m = tnp.where(big, m * 0.5, m)
  e = tnp.where(big, e + 1, e)
  s = (m - 1) / (m + 1)
  s2 = s * s
  p = tnp.zeros_like(s) + 1 / (2 * (2 * terms) + 1)
  for k in range(2 * terms - 1, -1, -1): p = p * s2 + 1 / (2 * k + 1)
  hi, lo = _ln2(d)
  ef = e.astype(d)
  out = ef * hi + (ef * lo + 2 * s * p)
  return tnp.where(x == 0, -tnp.inf, out)


def exp(x: Array) -> Array:
  """e^x for x in [-87, 88] (float32) or [-708, 709] (float64), clamped beyond: 2^n e^r with n = round(x / ln 2),
  |r| <= ln 2 / 2, e^r by its Taylor series."""
  x = tnp.asarray(x)
  d = x.dtype
  word, bits, bias, terms = _layout(d)
  lim = (-87.0, 88.0) if d is dtypes.float32 else (-708.0, 709.0)
  x = tnp.clip(x, *lim)
  n = tnp.floor(x * (1 / math.log(2)) + 0.5)
  hi, lo = _ln2(d)
  r = (x - n * hi) - n * lo
  p = tnp.zeros_like(r) + 1 / math.factorial(2 * terms + 1)
  for k in range(2 * terms, -1, -1): p = p * r + 1 / math.factorial(k)
  scale = lax.bitcast_convert_type((n.astype(tnp.int32) + bias).astype(word) << bits, d)
  return p * scale


def cos_2pi(u: Array) -> Array:
  """cos(2 pi u) for u in [0, 1]: 4u = q + f exactly with q an integer and |f| <= 1/2, then cos or sin of
  r = f pi / 2 (|r| <= pi / 4) by Taylor series, signed by the quadrant q."""
  u = tnp.asarray(u)
  d = u.dtype
  terms = _layout(d)[3] + 1
  t = u * 4
  q = tnp.floor(t + 0.5)
  r = (t - q) * (math.pi / 2)
  r2 = r * r
  c = tnp.zeros_like(r) + (-1) ** terms / math.factorial(2 * terms)
  s = tnp.zeros_like(r) + (-1) ** terms / math.factorial(2 * terms + 1)
  for k in range(terms - 1, -1, -1):
    c = c * r2 + (-1) ** k / math.factorial(2 * k)
    s = s * r2 + (-1) ** k / math.factorial(2 * k + 1)
  s = s * r
  quadrant = q.astype(tnp.int32) % 4
  return tnp.where(quadrant == 0, c, tnp.where(quadrant == 1, -s, tnp.where(quadrant == 2, -c, s)))


def _word(d): return tnp.uint64 if d is dtypes.float64 else tnp.uint32


def _f32(bits: int) -> float: return float(np.frombuffer(np.uint32(bits).tobytes(), np.float32)[0])


def fma(a, b, c) -> Array:
  """a * b + c rounded once, as a fused multiply-add (a FUSED product: every device rounds it once).

  >>> float(fma(tnp.float32(1 + 2 ** -12), tnp.float32(1 - 2 ** -12), tnp.float32(-1.0)))
  -5.960464477539063e-08
  """
  a, b, c = tnp.broadcast_arrays(*(tnp.asarray(v) for v in (a, b, c)))
  d = tnp.result_type(a, b, c)
  a, b, c = (v.astype(d).uop for v in (a, b, c))
  return Array(UOp(Ops.MUL, d, (a, b), FUSED).alu(Ops.ADD, c))


_LOG_P = [_f32(w) for w in (0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF, 0xBE2AAE50, 0x3E4CCEAC,
                              0xBE7FFFFC, 0x3EAAAAAA)]
_LN2_HI, _LN2_LO, _SQRT_HALF = _f32(0x3F318000), _f32(0xB95E8083), _f32(0x3F3504F3)


def logf(x) -> Array:
  """The natural log of float32 x, rounded as XLA's cpu backend rounds it (the Cephes polynomial, its steps fused
  multiply-adds), so that draws match JAX's bit for bit; 0 gives -inf, inf inf, negatives and nan nan.

  >>> float(logf(tnp.float32(2.0)))
  0.6931471824645996
  """
  x = tnp.asarray(x, tnp.float32)
  w = lax.bitcast_convert_type(tnp.maximum(x, _f32(0x00800000)), tnp.uint32)
  m = lax.bitcast_convert_type((w & tnp.uint32(0x807FFFFF)) | 0x3F000000, tnp.float32)   # in [0.5, 1)
  small = m < _SQRT_HALF
  e = ((w >> 23).astype(tnp.int32) - 127).astype(tnp.float32) + 1.0 - tnp.where(small, 1.0, 0.0)
  r = (m - 1.0) + tnp.where(small, m, 0.0)
  r2 = r * r
  r3 = r2 * r
  p = _LOG_P
  a = fma(fma(r, p[0], p[1]), r, p[2])
  b = fma(fma(r, p[3], p[4]), r, p[5])
  c = fma(fma(r, p[6], p[7]), r, p[8])
  y = fma(fma(fma(a, r3, b), r3, c), r3, e * _LN2_LO)
  out = fma(e, _LN2_HI, (r - r2 * 0.5) + y)
  out = tnp.where(x > 0, out, tnp.nan)
  return tnp.where(x == 0, -tnp.inf, tnp.where(x == tnp.inf, tnp.inf, out))


_LOG1P_P = [_f32(w) for w in (0x417101AD, 0x42A6185B, 0x435DC32D, 0x439A8CA3, 0x43586D8A, 0x42707982)]
_LOG1P_Q = [4.527e-05] + [_f32(w) for w in (0x3EFF40C5, 0x40D284FA, 0x41EF4B9C, 0x4273CC76, 0x426473AD, 0x41A05101)]


def log1pf(x) -> Array:
  """log(1 + x) of float32 x, rounded as XLA's cpu backend rounds it: a rational function of x for |x| < 0.4142,
  else logf(1 + x).

  >>> float(log1pf(tnp.float32(-0.5)))
  -0.6931471824645996
  """
  x = tnp.asarray(x, tnp.float32)
  num, den = tnp.ones_like(x), tnp.full_like(x, _LOG1P_Q[0])
  for c in _LOG1P_P: num = fma(num, x, c)
  for c in _LOG1P_Q[1:]: den = fma(den, x, c)
  x2 = x * x
  near = x + ((x2 * -0.5) + (x * x2) * (den / num))
  return tnp.where(tnp.abs(x) < _f32(0x3ED413CD), near, logf(1.0 + x))


_EXP_P = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1]


def expf(x) -> Array:
  """e^x of float32 x, rounded as XLA's cpu backend rounds it: 2^n e^r with n = floor(x log2(e) + 1/2) clamped to
  [-127, 127], r = x - n ln 2 in two fused steps, e^r by the Cephes polynomial; results below 2^-126 are 0.

  >>> float(expf(tnp.float32(1.0)))
  2.7182817459106445
  """
  x = tnp.clip(tnp.asarray(x, tnp.float32), -87.8, 88.8)
  n = tnp.clip(tnp.floor(fma(x, _f32(0x3FB8AA3B), tnp.float32(0.5))), -127.0, 127.0)
  r = fma(n, tnp.float32(-0.693359375), x)
  r = fma(n, tnp.float32(2.12194440e-4), r)
  z = fma(r, tnp.float32(_EXP_P[0]), tnp.float32(_EXP_P[1]))
  for c in _EXP_P[2:]: z = fma(z, r, tnp.float32(c))
  z = fma(z, r * r, r) + 1.0
  out = z * lax.bitcast_convert_type((n.astype(tnp.int32) + 127).astype(tnp.uint32) << 23, tnp.float32)
  return tnp.where(out < _f32(0x00800000), tnp.float32(0.0), out)


_ERFINV_SMALL = [_f32(w) for w in (0x32F16588, 0x34B84B36, 0xB66C7357, 0xB6935AC1, 0x396532DB, 0xBAA45408,
                                     0xBB88E4EF, 0x3E7C8F63, 0x3FC02E2F)]
_ERFINV_LARGE = [_f32(w) for w in (0xB951F09B, 0x38D3B56B, 0x3AB0DC72, 0xBB70BDE7, 0x3BBC127B, 0xBBF9C5D7,
                                     0x3C1AA57E, 0x3F8036DB, 0x40354F7E)]


def erf_invf(u) -> Array:
  """The inverse error function of float32 u in [-1, 1], rounded as XLA computes it (Giles' polynomials in
  w = -log1p(-u^2), their steps fused multiply-adds).

  >>> float(erf_invf(tnp.float32(0.5)))
  0.4769362807273865
  """
  u = tnp.asarray(u, tnp.float32)
  w = -log1pf(-(u * u))
  central = w < 5.0
  z = tnp.where(central, w - 2.5, tnp.sqrt(w) - 3.0)
  p = tnp.where(central, _ERFINV_SMALL[0], _ERFINV_LARGE[0])
  for c, d in zip(_ERFINV_SMALL[1:], _ERFINV_LARGE[1:]): p = fma(p, z, tnp.where(central, c, d))
  return u * tnp.where(tnp.abs(u) == 1.0, tnp.inf, p)


_ERF_NUM = [_f32(w) for w in (0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA)]
_ERF_DEN = [_f32(w) for w in (0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A)] + [1.0]


def erff(x) -> Array:
  """The error function of float32 x, rounded as XLA's cpu backend rounds it (a ratio of polynomials in x^2, their
  steps fused multiply-adds; +-1 from |x| >= 3.832).

  >>> float(erff(tnp.float32(0.5)))
  0.5204998850822449
  """
  x = tnp.asarray(x, tnp.float32)
  x2 = x * x
  num = fma(x2, _ERF_NUM[0], _ERF_NUM[1])
  for c in _ERF_NUM[2:]: num = fma(x2, num, c)
  den = fma(x2, _ERF_DEN[0], _ERF_DEN[1])
  for c in _ERF_DEN[2:]: den = fma(x2, den, c)
  return tnp.where(tnp.abs(x) >= _f32(0x407547CB), tnp.copysign(1.0, x), (x * num) / den)
