"""The gamma family of jax.scipy.special on lax's special functions: gamma, gammasgn, loggamma, digamma, polygamma,
zeta, beta, poch, factorial, multigammaln, and the inverse error function and scaled Bessel functions.

>>> tracegrad.scipy.special.gamma(tnp.asarray([0.5, 5.0])).round(4)
Array([ 1.7725, 24.    ], dtype=float32)
"""
from __future__ import annotations

import math

from .. import lax
from .. import numpy as tnp
from ..array import Array
from ..lax import special as lax_special


def _float(*xs) -> list[Array]:
  """The arguments broadcast, as arrays of one floating dtype (float32 for integers)."""
  d = tnp.result_type(*xs)
  d = d if d.is_float else tnp.float32
  return tnp.broadcast_arrays(*(tnp.asarray(x).astype(d) for x in xs))


def gammasgn(x) -> Array:
  """The sign of Gamma(x): 1, or -1 on (-2k - 1, -2k); NaN at the negative integers and NaN.

  >>> tracegrad.scipy.special.gammasgn(tnp.asarray([1.0, -0.5, -1.5]))
  Array([ 1., -1.,  1.], dtype=float32)
  """
  (x,) = _float(x)
  fl = tnp.floor(x)
  neg = (x < 0) & (tnp.mod(fl, 2) == 1)
  sign = tnp.where(neg, -1.0, 1.0).astype(x.dtype)
  return tnp.where(((x < 0) & (fl == x)) | tnp.isnan(x), tnp.nan, sign)


def gamma(x) -> Array:
  """The gamma function, as jax.scipy.special.gamma: gammasgn(x) exp(gammaln(x)).

  >>> tracegrad.scipy.special.gamma(tnp.asarray(4.0)).round(3)
  Array(6., dtype=float32)
  """
  (x,) = _float(x)
  return gammasgn(x) * tnp.exp(lax.lgamma(x))


def loggamma(x) -> Array:
  """log Gamma(x) for real x > 0 (NaN from 0 down), as jax.scipy.special.loggamma.

  >>> tracegrad.scipy.special.loggamma(tnp.asarray(3.0)).round(4)
  Array(0.6931, dtype=float32)
  """
  (x,) = _float(x)
  return tnp.where(x <= 0, tnp.nan, lax.lgamma(x))


def digamma(x) -> Array:
  """The logarithmic derivative of Gamma, as jax.scipy.special.digamma.

  >>> tracegrad.scipy.special.digamma(tnp.asarray(1.0)).round(4)
  Array(-0.5772, dtype=float32)
  """
  (x,) = _float(x)
  return lax.digamma(x)


def polygamma(n, x) -> Array:
  """The n-th derivative of digamma, as jax.scipy.special.polygamma (n a nonnegative integer).

  >>> tracegrad.scipy.special.polygamma(1, tnp.asarray(1.0)).round(4)
  Array(1.6449, dtype=float32)
  """
  n, x = _float(n, x)
  return lax.polygamma(n, x)


def zeta(x, q=None) -> Array:
  """The Hurwitz zeta function sum_k (q + k)^-x (Riemann's for q = None), as jax.scipy.special.zeta.

  >>> tracegrad.scipy.special.zeta(2.0).round(4)
  Array(1.6449, dtype=float32)
  """
  x, q = _float(x, 1.0 if q is None else q)
  return lax.zeta(x, q)


def beta(a, b) -> Array:
  """The beta function Gamma(a) Gamma(b) / Gamma(a + b), as jax.scipy.special.beta.

  >>> tracegrad.scipy.special.beta(2.0, 3.0).round(4)
  Array(0.0833, dtype=float32)
  """
  a, b = _float(a, b)
  sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  return sign * tnp.exp(lax.lgamma(a) + lax.lgamma(b) - lax.lgamma(a + b))


def poch(z, m) -> Array:
  """The rising factorial Gamma(z + m) / Gamma(z), as jax.scipy.special.poch.

  >>> tracegrad.scipy.special.poch(3.0, 2.0).round(3)
  Array(12., dtype=float32)
  """
  z, m = _float(z, m)
  sign = gammasgn(z + m) * gammasgn(z)
  return tnp.where(m == 0, 1.0, sign * tnp.exp(lax.lgamma(z + m) - lax.lgamma(z)))


def factorial(n, exact: bool = False) -> Array:
  """n! = Gamma(n + 1), 0 for n < 0, as jax.scipy.special.factorial (exact=True is not supported, as JAX).

  >>> tracegrad.scipy.special.factorial(tnp.asarray([0.0, 4.0, -1.0])).round(3)
  Array([ 1., 24.,  0.], dtype=float32)
  """
  if exact: raise NotImplementedError("factorial with exact=True")
  (n,) = _float(n)
  return tnp.where(n < 0, 0.0, tnp.exp(lax.lgamma(n + 1))).astype(n.dtype)


def multigammaln(a, d: int) -> Array:
  """The log of the multivariate gamma function of dimension d, as jax.scipy.special.multigammaln.

  >>> tracegrad.scipy.special.multigammaln(tnp.asarray(2.0), 2).round(4)
  Array(0.4516, dtype=float32)
  """
  (a,) = _float(a)
  total = sum(lax.lgamma(a - 0.5 * j) for j in range(d))
  return (d * (d - 1) / 4 * math.log(math.pi) + total).astype(a.dtype)


def erfinv(x) -> Array:
  """The inverse error function, as jax.scipy.special.erfinv.

  >>> tracegrad.scipy.special.erfinv(tnp.asarray([0.0, 0.5]))
  Array([0.        , 0.47693628], dtype=float32)
  """
  (x,) = _float(x)
  return lax.erf_inv(x)


def erfcx(x) -> Array:
  """The scaled complementary error function exp(x^2) erfc(x), as jax.scipy.special.erfcx.

  >>> tracegrad.scipy.special.erfcx(tnp.asarray(0.0))
  Array(1., dtype=float32)
  """
  (x,) = _float(x)
  return lax_special.erfcx(x)


def i0e(x) -> Array:
  """exp(-|x|) I0(x), as jax.scipy.special.i0e.

  >>> tracegrad.scipy.special.i0e(tnp.asarray(0.0))
  Array(1., dtype=float32)
  """
  (x,) = _float(x)
  return lax.bessel_i0e(x)


def i1e(x) -> Array:
  """exp(-|x|) I1(x), as jax.scipy.special.i1e.

  >>> tracegrad.scipy.special.i1e(tnp.asarray(0.0))
  Array(0., dtype=float32)
  """
  (x,) = _float(x)
  return lax.bessel_i1e(x)


def i0(x) -> Array:
  """The modified Bessel function of order 0, as jax.scipy.special.i0.

  >>> tracegrad.scipy.special.i0(tnp.asarray(0.0))
  Array(1., dtype=float32)
  """
  (x,) = _float(x)
  return tnp.exp(tnp.abs(x)) * lax.bessel_i0e(x)


def i1(x) -> Array:
  """The modified Bessel function of order 1, as jax.scipy.special.i1.

  >>> tracegrad.scipy.special.i1(tnp.asarray(0.0))
  Array(0., dtype=float32)
  """
  (x,) = _float(x)
  return tnp.exp(tnp.abs(x)) * lax.bessel_i1e(x)
