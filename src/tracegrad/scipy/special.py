"""Special functions, as jax.scipy.special.

>>> tracegrad.scipy.special.erf(tnp.asarray([0.0, 1.0]))
Array([0.       , 0.84270...], dtype=float32)
"""
from __future__ import annotations


import math

from .. import numpy as tnp
from .. import lax
from ..transforms import custom_jvp
from ..array import Array
from ..ir import dtypes
from ..trace import composite

__all__ = ["erf", "logsumexp"]

_h = float.fromhex
# erf(x) = x p(x^2) on [0, 1]; 1 - exp(-x^2) q(x) / r(x) on [1, 4]; 1 beyond. Fits within 1.3e-9 and 7e-11
# (relative) in exact arithmetic, within 2.6 ulp evaluated in float32.
_SMALL = tuple(map(_h, ("0x1.496b80p-14", "-0x1.a3f78ap-11", "0x1.5405c8p-8", "-0x1.b7f910p-6", "0x1.ce2cf8p-4",
                        "-0x1.81273ep-2", "0x1.20dd74p+0")))
_NUM = tuple(map(_h, ("0x1.86c93cp-19", "0x1.80336ap-4", "0x1.d6f952p-2", "0x1.fc7e4cp-1", "0x1.fff344p-1")))
_DEN = tuple(map(_h, ("0x1.54c496p-3", "0x1.a08cccp-1", "0x1.dafed4p+0", "0x1.0f7740p+1", "0x1p0")))


def _horner(coeffs, z):
  p = tnp.zeros_like(z) + coeffs[0]
  for c in coeffs[1:]: p = p * z + c
  return p


def erf(x) -> Array:
  """The error function, as jax.scipy.special.erf (see _erf); its derivative is 2 / sqrt(pi) * exp(-x^2) exactly."""
  return composite("erf", _erf_of, tnp.asarray(x))


def _erf_of(x):
  return _erf_smooth(x if x.dtype.is_float else x.astype(tnp.float32))


@custom_jvp
def _erf_smooth(x):
  return _erf(x)


@_erf_smooth.defjvp
def _erf_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return _erf(x), (2 / math.sqrt(math.pi)) * tnp.exp(-(x * x)) * t


def _erf(x, exp=tnp.exp) -> Array:
  """The error function, 2 / sqrt(pi) * integral of exp(-t^2) from 0 to x: within 3 ulp for float32 (half types
  compute in float32), within 2e-15 relative for float64 (see _erf64). `exp` computes e^x (tracegrad.random passes
  one that rounds alike on every device)."""
  x = tnp.asarray(x)
  d = x.dtype if x.dtype.is_float else dtypes.float32
  if d is dtypes.float64: return _erf64(x, exp)
  a = tnp.abs(x.astype(tnp.float32))
  small = a * _horner(_SMALL, a * a)
  big = 1.0 - exp(-(a * a)) * (_horner(_NUM, a) / _horner(_DEN, a))
  r = tnp.where(a < 1.0, small, tnp.where(a < 4.0, big, 1.0))
  return tnp.where(tnp.isnan(a), a, tnp.copysign(r, x.astype(tnp.float32))).astype(d)


def _erf64(x: Array, exp=tnp.exp) -> Array:
  """Below |x| = 2 the series 2 / sqrt(pi) * exp(-x^2) * sum_n (2x^2)^n x / (1 * 3 * ... * (2n + 1)), whose terms
  share x's sign and so cancel nothing (45 terms); above, 1 - erfc(x) with erfc's continued fraction
  exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + (2/2) / (x + ...))) taken 50 deep; from 6 on, +-1 to the last bit."""
  a = tnp.minimum(tnp.abs(x), 6.0)
  s = tnp.minimum(a, 2.0)
  z, term, total = 2 * s * s, s, s
  for n in range(1, 45):
    term = term * z / (2 * n + 1)
    total = total + term
  series = (2 / math.sqrt(math.pi)) * exp(-(s * s)) * total
  c = tnp.maximum(a, 2.0)
  f = c
  for k in range(50, 0, -1): f = c + (k / 2) / f
  tail = 1.0 - exp(-(c * c)) / (math.sqrt(math.pi) * f)
  r = tnp.where(a < 2.0, series, tail)
  return tnp.where(tnp.isnan(x), x, tnp.copysign(r, x))


def _inexact(x: Array) -> Array:
  return x if x.dtype.is_float else x.astype(tnp.float32)


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False, where=None):
  """log(sum(b * exp(a))) along axis without overflow, as jax.scipy.special.logsumexp (and jax.nn.logsumexp): b
  scales each term, `where` keeps only some; with return_sign=True, (log|sum|, sign(sum)), else NaN for a negative
  sum.

  >>> tracegrad.scipy.special.logsumexp(tnp.asarray([0.0, 0.0]), b=tnp.asarray([2.0, -1.0]))
  Array(0., dtype=float32)
  """
  axis = tuple(axis) if isinstance(axis, list) else axis
  args = [tnp.asarray(a)] + [tnp.asarray(v) for v in (b, where) if v is not None]
  return composite("logsumexp", _logsumexp, *args, axis=axis, keepdims=keepdims, return_sign=return_sign,
                   given=(b is not None, where is not None))


def _logsumexp(x, *rest, axis, keepdims, return_sign, given):
  it = iter(rest)
  b = next(it) if given[0] else None
  where = next(it) if given[1] else None
  x = _inexact(x)
  if b is not None:
    b = _inexact(b)
    x, b = tnp.broadcast_arrays(*(v.astype(tnp.result_type(x, b)) for v in (x, b)))
    x = tnp.where(b != 0, x, -tnp.inf)
  if where is not None: x = tnp.where(where, x, -tnp.inf)
  m = lax.stop_gradient(tnp.max(x, axis=axis, keepdims=True))   # the shift's derivative cancels: none computed
  m = tnp.where(tnp.isfinite(m), m, 0)
  e = tnp.exp(x - m)
  if b is not None: e = e * b
  total = tnp.sum(e, axis=axis, keepdims=True)
  out = tnp.log(tnp.abs(total)) + m
  sign = tnp.sign(total)
  if not keepdims: out, sign = tnp.squeeze(out, axis=axis), tnp.squeeze(sign, axis=axis)
  if return_sign: return out, sign
  return out if b is None else tnp.where(sign < 0, tnp.nan, out)
