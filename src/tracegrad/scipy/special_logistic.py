"""The logistic and entropy functions of jax.scipy.special: expit, logit, softmax, log_softmax, entr, rel_entr,
kl_div, boxcox and boxcox1p.

>>> tracegrad.scipy.special.expit(tnp.asarray(0.0))
Array(0.5, dtype=float32)
"""
from __future__ import annotations

from .. import lax
from .. import numpy as tnp
from ..array import Array
from .special_gamma import _float


def expit(x) -> Array:
  """The logistic function 1 / (1 + exp(-x)), as jax.scipy.special.expit.

  >>> tracegrad.scipy.special.expit(tnp.asarray([0.0, 100.0]))
  Array([0.5, 1. ], dtype=float32)
  """
  (x,) = _float(x)
  e = tnp.exp(-tnp.abs(x))
  return tnp.where(x < 0, e, 1.0) / (1.0 + e)


def logit(x) -> Array:
  """log(x / (1 - x)), the inverse of expit, as jax.scipy.special.logit.

  >>> tracegrad.scipy.special.logit(tnp.asarray([0.5, 1.0]))
  Array([ 0., inf], dtype=float32)
  """
  (x,) = _float(x)
  return tnp.log(x) - tnp.log1p(-x)


def softmax(x, axis=-1) -> Array:
  """exp(x) / sum(exp(x)) along axis, as jax.scipy.special.softmax.

  >>> tracegrad.scipy.special.softmax(tnp.asarray([0.0, 0.0]))
  Array([0.5, 0.5], dtype=float32)
  """
  (x,) = _float(x)
  e = tnp.exp(x - lax.stop_gradient(tnp.max(x, axis=axis, keepdims=True)))
  return e / tnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1) -> Array:
  """x - logsumexp(x) along axis, as jax.scipy.special.log_softmax.

  >>> tracegrad.scipy.special.log_softmax(tnp.asarray([0.0, 0.0])).round(4)
  Array([-0.6931, -0.6931], dtype=float32)
  """
  (x,) = _float(x)
  shifted = x - lax.stop_gradient(tnp.max(x, axis=axis, keepdims=True))
  return shifted - tnp.log(tnp.sum(tnp.exp(shifted), axis=axis, keepdims=True))


def entr(x) -> Array:
  """-x log(x) for x > 0, 0 at 0, -inf below, as jax.scipy.special.entr.

  >>> tracegrad.scipy.special.entr(tnp.asarray([0.5, -1.0])).round(4)
  Array([0.3466,   -inf], dtype=float32)
  """
  (x,) = _float(x)
  return tnp.where(x < 0, -tnp.inf, -x * tnp.log(tnp.where(x == 0, 1.0, x)))


def rel_entr(p, q) -> Array:
  """p log(p / q) for p, q > 0, 0 at p = 0 (q >= 0), inf otherwise, as jax.scipy.special.rel_entr.

  >>> tracegrad.scipy.special.rel_entr(tnp.asarray([0.0, 1.0]), tnp.asarray([1.0, 1.0]))
  Array([0., 0.], dtype=float32)
  """
  p, q = _float(p, q)
  both = (p > 0) & (q > 0)
  val = p * tnp.log(tnp.where(both, p, 1.0) / tnp.where(both, q, 1.0))
  return tnp.where(both, val, tnp.where((p == 0) & (q >= 0), 0.0, tnp.inf))


def kl_div(p, q) -> Array:
  """p log(p / q) - p + q for p, q > 0, q at p = 0 (q >= 0), inf otherwise, as jax.scipy.special.kl_div.

  >>> tracegrad.scipy.special.kl_div(tnp.asarray([0.0, 1.0]), tnp.asarray([2.0, 1.0]))
  Array([2., 0.], dtype=float32)
  """
  p, q = _float(p, q)
  both = (p > 0) & (q > 0)
  val = p * tnp.log(tnp.where(both, p, 1.0) / tnp.where(both, q, 1.0)) - p + q
  out = tnp.where(both, val, tnp.where((p == 0) & (q >= 0), q, tnp.inf))
  return tnp.where(tnp.isnan(p) | tnp.isnan(q), tnp.nan, out)


def boxcox(x, lmbda) -> Array:
  """The Box-Cox transform (x^lmbda - 1) / lmbda, log(x) at lmbda = 0, as jax.scipy.special.boxcox.

  >>> tracegrad.scipy.special.boxcox(tnp.asarray(1.0), 0.5)
  Array(0., dtype=float32)
  """
  x, lmbda = _float(x, lmbda)
  return _boxcox_log(tnp.log(x), lmbda)


def boxcox1p(x, lmbda) -> Array:
  """boxcox(1 + x, lmbda), accurate for small x, as jax.scipy.special.boxcox1p.

  >>> tracegrad.scipy.special.boxcox1p(tnp.asarray(0.0), 2.0)
  Array(0., dtype=float32)
  """
  x, lmbda = _float(x, lmbda)
  return _boxcox_log(tnp.log1p(x), lmbda)


def _boxcox_log(log_x: Array, lmbda: Array) -> Array:
  """(exp(lmbda log x) - 1) / lmbda through expm1, log x at lmbda = 0."""
  zero = lmbda == 0
  return tnp.where(zero, log_x, tnp.expm1(lmbda * log_x) / tnp.where(zero, 1.0, lmbda))
