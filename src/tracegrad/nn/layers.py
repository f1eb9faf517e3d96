"""Layers as pytrees: each is built from a PRNG key, holds its arrays as leaves and is called as
`layer(x, *, key=None, training=False)`. Weights start as PyTorch's do: uniform in +-1/sqrt(fan_in).

>>> model = tracegrad.nn.Sequential(tracegrad.nn.Linear(4, 8, key=tracegrad.random.key(0)), tracegrad.nn.relu,
...                                 tracegrad.nn.Linear(8, 2, key=tracegrad.random.key(1)))
>>> model(tnp.ones((5, 4))).shape
(5, 2)
"""
from __future__ import annotations

import math
from typing import Callable

from .. import lax
from .. import numpy as tnp
from .. import random
from ..array import Array
from .module import Lambda, Module, State, record_state

__all__ = ["Linear", "Conv2d", "Embedding", "LayerNorm", "RMSNorm", "BatchNorm", "Dropout", "Sequential",
           "MaxPool2d", "AvgPool2d", "Flatten"]


def _uniform(key, shape, fan_in: int, dtype) -> Array:
  bound = 1 / math.sqrt(fan_in)
  return random.uniform(key, shape, dtype, -bound, bound)


def _pair(v, name: str, fn: str) -> tuple[int, int]:
  t = (v, v) if isinstance(v, int) else tuple(v)
  if len(t) != 2 or not all(isinstance(i, int) and i >= 1 for i in t):
    raise ValueError(f"{fn}: {name} must be a positive int or a pair of them, got {v!r}")
  return t


def _padding2d(padding):
  """'SAME' / 'VALID' as they are, an int as that many on every side, else ((top, bottom), (left, right))."""
  if isinstance(padding, str): return padding
  if isinstance(padding, int): return ((padding, padding), (padding, padding))
  return tuple(tuple(p) for p in padding)


def _check_last(x: Array, size: int, what: str, fn: str) -> None:
  if x.ndim == 0 or x.shape[-1] != size:
    raise ValueError(f"{fn}: the input's last dimension must be {what}={size}, got an input of shape {x.shape}")


class Linear(Module):
  """y = x @ weight.T + bias, weight of shape (out_features, in_features)."""
  static = ("in_features", "out_features")

  def __init__(self, in_features: int, out_features: int, *, key, use_bias: bool = True, dtype=tnp.float32):
    wkey, bkey = random.split(key)
    self.in_features, self.out_features = in_features, out_features
    self.weight = _uniform(wkey, (out_features, in_features), in_features, dtype)
    self.bias = _uniform(bkey, (out_features,), in_features, dtype) if use_bias else None

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    _check_last(x, self.in_features, "in_features", "Linear")
    y = x @ self.weight.T
    return y if self.bias is None else y + self.bias


class Conv2d(Module):
  """A 2-d convolution over NCHW (or unbatched CHW) inputs, weight of shape (out, in // groups, kh, kw).
  padding is 'SAME', 'VALID', an int or ((top, bottom), (left, right))."""
  static = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups")

  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding="SAME", dilation=1,
               groups: int = 1, *, key, use_bias: bool = True, dtype=tnp.float32):
    fn = "Conv2d"
    if in_channels % groups or out_channels % groups:
      raise ValueError(f"{fn}: in_channels={in_channels} and out_channels={out_channels} must divide by groups={groups}")
    self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
    self.kernel_size, self.stride = _pair(kernel_size, "kernel_size", fn), _pair(stride, "stride", fn)
    self.dilation = _pair(dilation, "dilation", fn)
    self.padding = _padding2d(padding)
    fan_in = in_channels // groups * math.prod(self.kernel_size)
    wkey, bkey = random.split(key)
    self.weight = _uniform(wkey, (out_channels, in_channels // groups, *self.kernel_size), fan_in, dtype)
    self.bias = _uniform(bkey, (out_channels,), fan_in, dtype) if use_bias else None

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    if x.ndim not in (3, 4) or x.shape[-3] != self.in_channels:
      raise ValueError(f"Conv2d: expects an input of shape (N, {self.in_channels}, H, W) or ({self.in_channels}, H, W)"
                       f", got {x.shape}")
    unbatched = x.ndim == 3
    if unbatched: x = x[None]
    y = lax.conv_general_dilated(x, self.weight, self.stride, self.padding, rhs_dilation=self.dilation,
                                 feature_group_count=self.groups)
    if self.bias is not None: y = y + self.bias[:, None, None]
    return y[0] if unbatched else y


class Embedding(Module):
  """Rows of a (num_embeddings, features) table looked up by integer ids, drawn from a standard normal."""
  static = ("num_embeddings", "features")

  def __init__(self, num_embeddings: int, features: int, *, key, dtype=tnp.float32):
    self.num_embeddings, self.features = num_embeddings, features
    self.weight = random.normal(key, (num_embeddings, features), dtype)

  def __call__(self, ids, *, key=None, training: bool = False) -> Array:
    ids = tnp.asarray(ids)
    if not tnp.issubdtype(ids.dtype, tnp.integer):
      raise TypeError(f"Embedding: ids must be integers, got dtype {ids.dtype}")
    return tnp.take(self.weight, ids, axis=0)


class LayerNorm(Module):
  """Normalise over the trailing dimensions `shape`, then scale by weight and shift by bias."""
  static = ("shape", "eps")

  def __init__(self, shape, eps: float = 1e-5, *, use_weight: bool = True, use_bias: bool = True,
               dtype=tnp.float32):
    self.shape, self.eps = (shape,) if isinstance(shape, int) else tuple(shape), eps
    self.weight = tnp.ones(self.shape, dtype) if use_weight else None
    self.bias = tnp.zeros(self.shape, dtype) if use_bias else None

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    n = len(self.shape)
    if x.shape[x.ndim - n:] != self.shape:
      raise ValueError(f"LayerNorm: the input's trailing dimensions must be {self.shape}, got shape {x.shape}")
    axes = tuple(range(x.ndim - n, x.ndim))
    mean = tnp.mean(x, axis=axes, keepdims=True)
    var = tnp.mean(tnp.square(x - mean), axis=axes, keepdims=True)
    y = (x - mean) / tnp.sqrt(var + self.eps)
    if self.weight is not None: y = y * self.weight
    return y if self.bias is None else y + self.bias


class RMSNorm(Module):
  """x / sqrt(mean(x**2) + eps) over the trailing dimensions `shape`, scaled by weight."""
  static = ("shape", "eps")

  def __init__(self, shape, eps: float = 1e-6, *, use_weight: bool = True, dtype=tnp.float32):
    self.shape, self.eps = (shape,) if isinstance(shape, int) else tuple(shape), eps
    self.weight = tnp.ones(self.shape, dtype) if use_weight else None

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    n = len(self.shape)
    if x.shape[x.ndim - n:] != self.shape:
      raise ValueError(f"RMSNorm: the input's trailing dimensions must be {self.shape}, got shape {x.shape}")
    axes = tuple(range(x.ndim - n, x.ndim))
    y = x / tnp.sqrt(tnp.mean(tnp.square(x), axis=axes, keepdims=True) + self.eps)
    return y if self.weight is None else y * self.weight


class BatchNorm(Module):
  """Batch normalisation over every axis but `axis` (1: the channels of NCHW). Training normalises by the batch's
  statistics and, inside `tracegrad.nn.apply`, moves the running ones: running = momentum * running +
  (1 - momentum) * batch. Inference normalises by the running statistics."""
  static = ("num_features", "axis", "momentum", "eps")

  def __init__(self, num_features: int, axis: int = 1, momentum: float = 0.9, eps: float = 1e-5, *,
               dtype=tnp.float32):
    self.num_features, self.axis, self.momentum, self.eps = num_features, axis, momentum, eps
    self.weight, self.bias = tnp.ones(num_features, dtype), tnp.zeros(num_features, dtype)
    self.running_mean, self.running_var = State(tnp.zeros(num_features, dtype)), State(tnp.ones(num_features, dtype))

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    axis = self.axis if x.ndim == 0 else self.axis % max(x.ndim, 1)
    if x.ndim < 2 or x.shape[axis] != self.num_features:
      raise ValueError(f"BatchNorm: the input's axis {self.axis} must have num_features={self.num_features} entries, "
                       f"got shape {x.shape}")
    axes = tuple(i for i in range(x.ndim) if i != axis)
    shape = [1] * x.ndim
    shape[axis] = self.num_features
    if training:
      mean = tnp.mean(x, axis=axes)
      var = tnp.mean(tnp.square(x - mean.reshape(shape)), axis=axes)
      m = self.momentum
      record_state(self.running_mean, m * self.running_mean.value + (1 - m) * mean)
      record_state(self.running_var, m * self.running_var.value + (1 - m) * var)
    else:
      mean, var = self.running_mean.value, self.running_var.value
    scale = self.weight / tnp.sqrt(var + self.eps)
    return (x - mean.reshape(shape)) * scale.reshape(shape) + self.bias.reshape(shape)


class Dropout(Module):
  """In training, zero each entry with probability `rate` and scale the rest by 1 / (1 - rate); otherwise the
  identity. Training needs a key."""
  static = ("rate",)

  def __init__(self, rate: float = 0.5):
    if not 0 <= rate < 1: raise ValueError(f"Dropout: rate must be in [0, 1), got {rate}")
    self.rate = rate

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    if not training or self.rate == 0: return x
    if key is None: raise ValueError("Dropout: training=True needs a PRNG key; call it as layer(x, key=k, training=True)")
    keep = random.bernoulli(key, 1 - self.rate, x.shape)
    return tnp.where(keep, x / (1 - self.rate), tnp.zeros((), x.dtype))


class Sequential(Module):
  """Layers applied in order; plain functions (activations) become Lambda layers. The key, if given, is split
  among the layers."""

  def __init__(self, *layers: Module | Callable):
    self.layers = tuple(l if isinstance(l, Module) else Lambda(l) for l in layers)

  def __call__(self, x, *, key=None, training: bool = False):
    keys = random.split(key, len(self.layers)) if key is not None and self.layers else [None] * len(self.layers)
    for layer, k in zip(self.layers, keys):
      x = layer(x, key=k, training=training)
    return x

  def __getitem__(self, i): return self.layers[i] if isinstance(i, int) else Sequential(*self.layers[i])
  def __len__(self) -> int: return len(self.layers)


class _Pool(Module):
  static = ("kernel_size", "stride", "padding")

  def __init__(self, kernel_size, stride=None, padding="VALID"):
    fn = type(self).__name__
    self.kernel_size = _pair(kernel_size, "kernel_size", fn)
    self.stride = self.kernel_size if stride is None else _pair(stride, "stride", fn)
    self.padding = _padding2d(padding)

  def _window(self, x: Array, init, op) -> Array:
    if x.ndim < 2:
      raise ValueError(f"{type(self).__name__}: expects an input of shape (..., H, W), got {x.shape}")
    lead = (1,) * (x.ndim - 2)
    pad = self.padding if isinstance(self.padding, str) else ((0, 0),) * (x.ndim - 2) + self.padding
    return lax.reduce_window(x, init, op, lead + self.kernel_size, lead + self.stride, pad)


class MaxPool2d(_Pool):
  """The maximum over each kernel_size window of the last two axes (stride defaults to kernel_size)."""

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    return self._window(x, -tnp.inf, tnp.maximum)


class AvgPool2d(_Pool):
  """The mean over each kernel_size window of the last two axes, padding counted as zeros."""

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    return self._window(x, 0.0, tnp.add) / math.prod(self.kernel_size)


class Flatten(Module):
  """Flatten every axis from start_dim on (default: all but the batch axis)."""
  static = ("start_dim",)

  def __init__(self, start_dim: int = 1): self.start_dim = start_dim

  def __call__(self, x, *, key=None, training: bool = False) -> Array:
    x = tnp.asarray(x)
    return x.reshape(x.shape[:self.start_dim] + (-1,))

