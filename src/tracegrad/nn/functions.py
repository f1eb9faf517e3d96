"""Activations and normalisers as jax.nn, written with tracegrad.numpy so every transform applies.

>>> tracegrad.nn.relu(tnp.asarray([-1.0, 2.0]))
Array([0., 2.], dtype=float32)
"""
from __future__ import annotations

import math

from .. import lax
from .. import numpy as tnp
from ..array import Array
from ..scipy.special import logsumexp
from ..trace import composite
from ..transforms import custom_jvp
from ..typing import Inexact, Matrices

__all__ = ["relu", "relu6", "sigmoid", "softplus", "log_sigmoid", "silu", "swish", "gelu", "elu", "selu", "leaky_relu",
           "hard_tanh", "softmax", "log_softmax", "logsumexp", "standardize", "one_hot", "dot_product_attention",
           "celu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "identity", "log1mexp", "logmeanexp", "mish",
           "soft_sign", "sparse_plus", "sparse_sigmoid", "squareplus", "tanh"]


def relu(x) -> Array:
  """max(x, 0); its derivative is 0 at 0, as jax.nn.relu's."""
  return _relu(tnp.asarray(x))


@custom_jvp
def _relu(x): return tnp.maximum(x, 0)


_relu.defjvps(lambda g, ans, x: tnp.where(x > 0, g, tnp.zeros_like(g)))


def relu6(x) -> Array:
  """min(max(x, 0), 6); its derivative is 0 at 0 and 6, as jax.nn.relu6's."""
  return _relu6(tnp.asarray(x))


@custom_jvp
def _relu6(x): return tnp.minimum(tnp.maximum(x, 0), 6)


_relu6.defjvps(lambda g, ans, x: tnp.where((x > 0) & (x < 6), g, tnp.zeros_like(g)))


def sigmoid(x) -> Array:
  """1 / (1 + exp(-x)), without overflow for large |x|."""
  x = tnp.asarray(x)
  e = tnp.exp(-tnp.abs(x))
  return tnp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def softplus(x) -> Array:
  """log(1 + exp(x)), exact for large |x|."""
  return composite("softplus", _softplus, tnp.asarray(x))


def _softplus(x): return tnp.logaddexp(x, 0.0)


def log_sigmoid(x) -> Array:
  """log(sigmoid(x)) = -softplus(-x)."""
  return composite("log_sigmoid", _log_sigmoid, tnp.asarray(x))


def _log_sigmoid(x): return -_softplus(-x)


def silu(x) -> Array:
  """x * sigmoid(x)."""
  x = tnp.asarray(x)
  return x * sigmoid(x)


swish = silu


def gelu(x, approximate: bool = True) -> Array:
  """x * Phi(x), Phi the standard normal CDF; with approximate=True (the default, as jax.nn.gelu) its tanh form."""
  return composite("gelu", _gelu_tanh if approximate else _gelu_erf, tnp.asarray(x))


def _gelu_tanh(x): return 0.5 * x * (1 + tnp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))


def _gelu_erf(x):
  from ..scipy.special import erf
  return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def elu(x, alpha=1.0) -> Array:
  """x for x > 0, else alpha * (exp(x) - 1)."""
  x = tnp.asarray(x)
  return tnp.where(x > 0, x, alpha * tnp.expm1(tnp.where(x > 0, 0, x)))


def selu(x) -> Array:
  """scale * elu(x, alpha) with the self-normalising constants of jax.nn.selu.

  >>> tracegrad.nn.selu(tnp.asarray([0.0, 1.0])).round(4)
  Array([0.    , 1.0507], dtype=float32)
  """
  alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
  return scale * elu(x, alpha)


def leaky_relu(x, negative_slope=0.01) -> Array:
  """x for x >= 0, else negative_slope * x."""
  x = tnp.asarray(x)
  return tnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x) -> Array:
  """x clipped to [-1, 1]."""
  return tnp.clip(tnp.asarray(x), -1, 1)


def _static_axis(axis):
  """axis as a hashable static argument (a list of axes becomes a tuple)."""
  return tuple(axis) if isinstance(axis, list) else axis


def _masked(x, where=None):
  """x with -inf where `where` is False (x itself without a mask)."""
  return x if where is None else tnp.where(where, x, -tnp.inf)


def _reduce_masked(name: str, fun, x, where, **static) -> Array:
  """composite(name, fun, x[, where]): `where` travels as an argument only when given."""
  x, static = tnp.asarray(x), {k: _static_axis(v) for k, v in static.items()}
  return composite(name, fun, x, **static) if where is None else composite(name, fun, x, where, **static)


def softmax(x, axis=-1, where=None) -> Array:
  """exp(x) / sum(exp(x)) along axis."""
  return _reduce_masked("softmax", _softmax, x, where, axis=axis)


def _softmax(x, where=None, *, axis):
  x = _masked(x, where)
  e = tnp.exp(x - lax.stop_gradient(tnp.max(x, axis=axis, keepdims=True)))
  return e / tnp.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1, where=None) -> Array:
  """x - logsumexp(x) along axis."""
  return _reduce_masked("log_softmax", _log_softmax, x, where, axis=axis)


def _log_softmax(x, where=None, *, axis):
  s = _masked(x, where)
  s = s - lax.stop_gradient(tnp.max(s, axis=axis, keepdims=True))
  return s - tnp.log(tnp.sum(tnp.exp(s), axis=axis, keepdims=True))


def standardize(x, axis=-1, mean=None, variance=None, epsilon: float = 1e-5) -> Array:
  """(x - mean) / sqrt(variance + epsilon) along axis, as jax.nn.standardize."""
  given = (mean is not None, variance is not None)
  stats = [s for s in (mean, variance) if s is not None]
  return composite("standardize", _standardize, tnp.asarray(x), *stats, axis=_static_axis(axis), epsilon=epsilon,
                   given=given)


def _standardize(x, *stats, axis, epsilon, given):
  it = iter(stats)
  mean = next(it) if given[0] else tnp.mean(x, axis=axis, keepdims=True)
  variance = next(it) if given[1] else tnp.mean(tnp.square(x - mean), axis=axis, keepdims=True)
  return (x - mean) / tnp.sqrt(variance + epsilon)


def one_hot(x, num_classes: int, dtype=tnp.float32, axis=-1) -> Array:
  """x's integers as one-hot vectors of num_classes along axis (out-of-range values give all zeros)."""
  if not isinstance(num_classes, int) or num_classes < 0:
    raise ValueError(f"one_hot: num_classes must be an int >= 0, got {num_classes!r}")
  x = tnp.asarray(x)
  out = (tnp.expand_dims(x, -1) == tnp.arange(num_classes)).astype(dtype)
  return tnp.moveaxis(out, -1, axis)


def dot_product_attention(query: Inexact[Matrices, "*batch t n h"], key: Inexact[Matrices, "*batch s n h"],
                          value: Inexact[Matrices, "*batch s n h"], bias=None, mask=None, *, scale: float | None = None,
                          is_causal: bool = False) -> Inexact[Array, "*batch t n h"]:
  """softmax(query . key * scale + bias, masked) . value over inputs of shape (batch..., T, heads, head_dim), as
  jax.nn.dot_product_attention; `mask` is True where attention is allowed, is_causal keeps only S <= T."""
  q, k, v = tnp.asarray(query), tnp.asarray(key), tnp.asarray(value)
  if q.ndim < 3 or k.ndim != q.ndim or v.shape != k.shape or q.shape[-1] != k.shape[-1] or \
     q.shape[:-3] != k.shape[:-3] or q.shape[-2] != k.shape[-2]:
    raise ValueError(f"dot_product_attention: query, key and value must be (..., T, N, H), (..., S, N, H) and "
                     f"(..., S, N, H); got {q.shape}, {k.shape} and {v.shape}")
  scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
  logits = tnp.einsum("...tnh,...snh->...nts", q, k) * scale
  if bias is not None: logits = logits + bias
  allowed = None if mask is None else tnp.asarray(mask)
  if is_causal:
    causal = tnp.tril(tnp.ones((q.shape[-3], k.shape[-3]), bool))
    allowed = causal if allowed is None else allowed & causal
  if allowed is not None: logits = tnp.where(allowed, logits, tnp.finfo(logits.dtype).min)
  return tnp.einsum("...nts,...snh->...tnh", softmax(logits, axis=-1), v)


def celu(x, alpha=1.0) -> Array:
  """max(x, 0) + alpha * expm1(min(x, 0) / alpha), as jax.nn.celu.

  >>> tracegrad.nn.celu(tnp.asarray([-1.0, 2.0])).round(4)
  Array([-0.6321,  2.    ], dtype=float32)
  """
  x = tnp.asarray(x)
  return tnp.maximum(x, 0.0) + alpha * tnp.expm1(tnp.minimum(x, 0.0) / alpha)


def glu(x, axis: int = -1) -> Array:
  """a * sigmoid(b), a and b the two halves of x along axis, as jax.nn.glu.

  >>> tracegrad.nn.glu(tnp.asarray([2.0, 0.0]))
  Array([1.], dtype=float32)
  """
  x = tnp.asarray(x)
  size = x.shape[axis]
  if size % 2:
    raise AssertionError(f"glu: the size of axis {axis} of x must be divisible by 2, got shape {x.shape}")
  a, b = tnp.split(x, 2, axis)
  return a * sigmoid(b)


def hard_sigmoid(x) -> Array:
  """relu6(x + 3) / 6.

  >>> tracegrad.nn.hard_sigmoid(tnp.asarray([-4.0, 0.0, 4.0]))
  Array([0. , 0.5, 1. ], dtype=float32)
  """
  return relu6(tnp.asarray(x) + 3.0) / 6.0


def hard_silu(x) -> Array:
  """x * hard_sigmoid(x) (also named hard_swish).

  >>> tracegrad.nn.hard_silu(tnp.asarray([-4.0, 1.0]))
  Array([-0.       ,  0.6666667], dtype=float32)
  """
  x = tnp.asarray(x)
  return x * hard_sigmoid(x)


hard_swish = hard_silu


def identity(x) -> Array:
  """x as an Array.

  >>> tracegrad.nn.identity([1.0, 2.0])
  Array([1., 2.], dtype=float32)
  """
  return tnp.asarray(x)


@custom_jvp
def _log1mexp(x):
  return tnp.where(x < math.log(2.0), tnp.log(-tnp.expm1(-x)), tnp.log1p(-tnp.exp(-x)))


_log1mexp.defjvps(lambda g, ans, x: g / tnp.expm1(x))


def log1mexp(x) -> Array:
  """log(1 - exp(-x)), accurate for small and large x (NaN for x < 0), as jax.nn.log1mexp.

  >>> tracegrad.nn.log1mexp(tnp.asarray([math.log(2.0)]))
  Array([-0.6931472], dtype=float32)
  """
  return _log1mexp(tnp.asarray(x).astype(tnp.result_type(x, float)))


def logmeanexp(x, axis=None, where=None, keepdims: bool = False) -> Array:
  """log(mean(exp(x))) along axis (over the entries where `where` is True), as jax.nn.logmeanexp.

  >>> tracegrad.nn.logmeanexp(tnp.asarray([0.0, 0.0, 0.0]))
  Array(0., dtype=float32)
  """
  x = tnp.asarray(x)
  lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
  ones = tnp.ones(x.shape, lse.dtype)
  count = tnp.sum(ones if where is None else tnp.where(where, ones, 0), axis=_static_axis(axis), keepdims=keepdims)
  return lse - tnp.log(count)


def mish(x) -> Array:
  """x * tanh(softplus(x)).

  >>> tracegrad.nn.mish(tnp.asarray([0.0, 1.0])).round(4)
  Array([0.    , 0.8651], dtype=float32)
  """
  x = tnp.asarray(x)
  return x * tnp.tanh(softplus(x))


def soft_sign(x) -> Array:
  """x / (|x| + 1).

  >>> tracegrad.nn.soft_sign(tnp.asarray([-1.0, 3.0]))
  Array([-0.5 ,  0.75], dtype=float32)
  """
  x = tnp.asarray(x)
  return x / (tnp.abs(x) + 1)


def sparse_plus(x) -> Array:
  """0 for x <= -1, x for x >= 1, (x + 1)^2 / 4 between.

  >>> tracegrad.nn.sparse_plus(tnp.asarray([-2.0, 0.0, 2.0]))
  Array([0.  , 0.25, 2.  ], dtype=float32)
  """
  x = tnp.asarray(x)
  return tnp.where(x <= -1.0, 0.0, tnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x) -> Array:
  """(x + 1) / 2 clipped to [0, 1].

  >>> tracegrad.nn.sparse_sigmoid(tnp.asarray([-2.0, 0.0, 2.0]))
  Array([0. , 0.5, 1. ], dtype=float32)
  """
  return 0.5 * tnp.clip(tnp.asarray(x) + 1.0, 0.0, 2.0)


def squareplus(x, b=4) -> Array:
  """(x + sqrt(x^2 + b)) / 2.

  >>> tracegrad.nn.squareplus(tnp.asarray([0.0, 1.5]))
  Array([1., 2.], dtype=float32)
  """
  x, b = tnp.asarray(x), tnp.asarray(b)
  return (x + tnp.sqrt(tnp.square(x) + b)) / 2


tanh = tnp.tanh
