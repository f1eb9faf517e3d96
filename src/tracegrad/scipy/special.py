"""Special functions, as jax.scipy.special: the error and incomplete gamma and beta functions here, the gamma family
in special_gamma.py, logistic and entropy functions in special_logistic.py, all on lax's special functions.

>>> tracegrad.scipy.special.erf(tnp.asarray([0.0, 1.0]))
Array([0.       , 0.84270...], dtype=float32)
"""
from __future__ import annotations


import math

from .. import numpy as tnp
from .. import lax
from ..lax import special as lax_special
from ..array import Array
from ..ir import dtypes
from ..trace import composite
from .special_gamma import (beta, digamma, erfcx, erfinv, factorial, gamma, gammasgn, i0, i0e, i1, i1e, loggamma,
                            multigammaln, poch, polygamma, zeta)
from .special_logistic import boxcox, boxcox1p, entr, expit, kl_div, log_softmax, logit, rel_entr, softmax
from .special_combinatorics import bernoulli, comb
from .special_integrals import dawsn, exp1, expi, expn, fresnel, sici, spence
from .special_bessel import bessel_jn
from .special_hyp2f1 import hyp2f1
from .special_hypergeometric import hyp1f1
from .special_owens import owens_t

__all__ = ["erf", "erfc", "logsumexp", "gammaln", "betaln", "xlogy", "xlog1py", "ndtr", "log_ndtr", "ndtri",
           "gammainc", "gammaincc", "betainc", "beta", "digamma", "erfcx", "erfinv", "factorial", "gamma", "gammasgn",
           "i0", "i0e", "i1", "i1e", "loggamma", "multigammaln", "poch", "polygamma", "zeta", "boxcox", "boxcox1p",
           "entr", "expit", "kl_div", "log_softmax", "logit", "rel_entr", "softmax", "bessel_jn", "hyp1f1", "hyp2f1",
           "owens_t", "bernoulli", "comb", "dawsn", "exp1", "expi", "expn", "fresnel", "sici", "spence"]


def erf(x) -> Array:
  """The error function, as jax.scipy.special.erf (lax.erf after promoting integers to float32).

  >>> tracegrad.scipy.special.erf(2)
  Array(0.9953223, dtype=float32)
  """
  (x,) = _float(x)
  return lax.erf(x)


def _erf(x, exp=None) -> Array:
  """erf(x), e^x computed by `exp` when given (tracegrad.random passes one that rounds alike on every device)."""
  x = tnp.asarray(x)
  return erf(x) if exp is None else lax_special.erf_using(x, exp)


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
  if b is None and not return_sign:   # a sum of exponentials: positive, no sign to carry
    out = tnp.log(total) + m
    return out if keepdims else tnp.squeeze(out, axis=axis)
  out, sign = tnp.log(tnp.abs(total)) + m, tnp.sign(total)
  if not keepdims: out, sign = tnp.squeeze(out, axis=axis), tnp.squeeze(sign, axis=axis)
  if return_sign: return out, sign
  return tnp.where(sign < 0, tnp.nan, out)


def _float(*xs) -> list[Array]:
  """The arguments as arrays of one floating dtype, as JAX promotes to inexact types: integers of up to 32 bits to
  float32, 64-bit ones and Python ints to the default float (float64 under x64)."""
  arrs = [tnp.asarray(x) for x in xs]
  d = tnp.result_type(*arrs)
  if not d.is_float:
    wide = d.itemsize == 8 or all(a.weak_type for a in arrs)
    d = dtypes.default_float() if wide else tnp.float32
  return [a.astype(d) for a in arrs]


def erfc(x) -> Array:
  """1 - erf(x), as jax.scipy.special.erfc, without losing the tail to rounding.

  >>> float(tracegrad.scipy.special.erfc(tnp.asarray(5.0))) > 0
  True
  """
  (x,) = _float(x)
  return lax.erfc(x)


def ndtr(x) -> Array:
  """The standard normal CDF, as jax.scipy.special.ndtr.

  >>> tracegrad.scipy.special.ndtr(tnp.asarray([0.0]))
  Array([0.5], dtype=float32)
  """
  (x,) = _float(x)
  return 0.5 * erfc(-x / math.sqrt(2))


def log_ndtr(x) -> Array:
  """log(ndtr(x)), as jax.scipy.special.log_ndtr, finite far into the lower tail.

  >>> round(float(tracegrad.scipy.special.log_ndtr(tnp.asarray(-20.0))), 2)
  -203.92
  """
  (x,) = _float(x)
  z = -x / math.sqrt(2)
  near, far = tnp.clip(z, 0.0, 5.0), tnp.maximum(z, 5.0)
  tail = -(far * far) + tnp.log(lax_special.erfcx(far))
  log_lower = math.log(0.5) + tnp.where(z < 5.0, tnp.log(lax.erfc(near)), tail)
  upper = tnp.log1p(-0.5 * lax.erfc(tnp.maximum(-z, 0.0)))
  return tnp.where(z > 0, log_lower, upper)


def _horner(coeffs, z):
  p = tnp.zeros_like(z) + coeffs[0]
  for c in coeffs[1:]: p = p * z + c
  return p


_ACKLAM_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
             -3.066479806614716e+01, 2.506628277459239e+00)
_ACKLAM_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
             -1.328068155288572e+01, 1.0)
_ACKLAM_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
             4.374664141464968e+00, 2.938163982698783e+00)
_ACKLAM_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00, 1.0)


def ndtri(p) -> Array:
  """The inverse of ndtr, as jax.scipy.special.ndtri: rational fits of relative error 1.2e-9 (Acklam's), refined by
  one Halley step for float64; -inf at 0, inf at 1, NaN outside [0, 1].

  >>> tracegrad.scipy.special.ndtri(tnp.asarray([0.5, 0.975])).round(3)
  Array([0.  , 1.96], dtype=float32)
  """
  (p,) = _float(p)
  low = 0.02425
  inner = tnp.clip(p, low, 1 - low) - 0.5
  r = inner * inner
  central = _horner(_ACKLAM_A, r) * inner / _horner(_ACKLAM_B, r)
  tail_p = tnp.clip(tnp.minimum(p, 1 - p), 1e-300 if p.dtype is dtypes.float64 else 1e-38, low)
  q = tnp.sqrt(-2 * tnp.log(tail_p))
  tail = _horner(_ACKLAM_C, q) / _horner(_ACKLAM_D, q)
  x = tnp.where(p < low, tail, tnp.where(p > 1 - low, -tail, central))
  if p.dtype is dtypes.float64:
    e = ndtr(x) - p
    u = e * math.sqrt(2 * math.pi) * tnp.exp(x * x / 2)
    x = x - u / (1 + x * u / 2)
  x = tnp.where(p == 0, -tnp.inf, tnp.where(p == 1, tnp.inf, x))
  return tnp.where((p < 0) | (p > 1) | tnp.isnan(p), tnp.nan, x)


def gammaln(x) -> Array:
  """log|Gamma(x)|, as jax.scipy.special.gammaln (inf at 0 and the negative integers).

  >>> tracegrad.scipy.special.gammaln(tnp.asarray([1.0, 5.0])).round(4)
  Array([0.    , 3.1781], dtype=float32)
  """
  (x,) = _float(x)
  return lax.lgamma(x)


def betaln(a, b) -> Array:
  """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b).

  >>> tracegrad.scipy.special.betaln(tnp.asarray(1.0), tnp.asarray(2.0)).round(4)
  Array(-0.6931, dtype=float32)
  """
  a, b = _float(a, b)
  return gammaln(a) + gammaln(b) - gammaln(a + b)


def xlogy(x, y) -> Array:
  """x * log(y), 0 where x is 0 (whatever y).

  >>> tracegrad.scipy.special.xlogy(tnp.asarray([0.0, 2.0]), tnp.asarray([0.0, 1.0]))
  Array([0., 0.], dtype=float32)
  """
  x, y = _float(x, y)
  zero = x == 0
  return tnp.where(zero, 0, x * tnp.log(tnp.where(zero, 1, y)))


def xlog1py(x, y) -> Array:
  """x * log1p(y), 0 where x is 0 (whatever y).

  >>> tracegrad.scipy.special.xlog1py(tnp.asarray([0.0]), tnp.asarray([-1.0]))
  Array([0.], dtype=float32)
  """
  x, y = _float(x, y)
  zero = x == 0
  return tnp.where(zero, 0, x * tnp.log1p(tnp.where(zero, 0, y)))


def gammainc(a, x) -> Array:
  """The regularized lower incomplete gamma function P(a, x), as jax.scipy.special.gammainc.

  >>> tracegrad.scipy.special.gammainc(tnp.asarray(1.0), tnp.asarray([0.0, 1.0])).round(4)
  Array([0.    , 0.6321], dtype=float32)
  """
  return lax.igamma(*tnp.broadcast_arrays(*_float(a, x)))


def gammaincc(a, x) -> Array:
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), as jax.scipy.special.gammaincc.

  >>> tracegrad.scipy.special.gammaincc(tnp.asarray(1.0), tnp.asarray([1.0])).round(4)
  Array([0.3679], dtype=float32)
  """
  return lax.igammac(*tnp.broadcast_arrays(*_float(a, x)))


def betainc(a, b, x) -> Array:
  """The regularized incomplete beta function I_x(a, b), as jax.scipy.special.betainc.

  >>> tracegrad.scipy.special.betainc(tnp.asarray(2.0), tnp.asarray(3.0), tnp.asarray([0.0, 0.5, 1.0])).round(4)
  Array([0.    , 0.6875, 1.    ], dtype=float32)
  """
  return lax.betainc(*tnp.broadcast_arrays(*_float(a, b, x)))
