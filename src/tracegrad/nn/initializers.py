"""Parameter initializers as jax.nn.initializers: each returns init(key, shape, dtype=float32) -> Array.

>>> init = tracegrad.nn.initializers.glorot_uniform()
>>> init(tracegrad.random.key(0), (3, 4)).shape
(3, 4)
"""
from __future__ import annotations

import math
from typing import Any, Callable, Protocol

import numpy as np

from .. import numpy as tnp
from .. import random

__all__ = ["zeros", "ones", "constant", "uniform", "normal", "truncated_normal", "variance_scaling", "glorot_uniform",
           "glorot_normal", "xavier_uniform", "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform",
           "he_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "delta_orthogonal", "Initializer"]

TRUNCATED_STDDEV = 0.87962566103423978   # the standard deviation of a standard normal truncated to (-2, 2)


class Initializer(Protocol):
  """What an initializer is: init(key, shape, dtype) -> Array (as jax.nn.initializers.Initializer)."""

  def __call__(self, key, shape, dtype=tnp.float32) -> Any: ...


def zeros(key, shape, dtype=tnp.float32): return tnp.zeros(shape, dtype)
def ones(key, shape, dtype=tnp.float32): return tnp.ones(shape, dtype)


def constant(value, dtype=tnp.float32) -> Callable:
  """Every entry value."""
  return lambda key, shape, dtype=dtype: tnp.full(shape, value, dtype)


def uniform(scale: float = 1e-2, dtype=tnp.float32) -> Callable:
  """Uniform in [0, scale)."""
  return lambda key, shape, dtype=dtype: random.uniform(key, shape, dtype, 0.0, scale)


def normal(stddev: float = 1e-2, dtype=tnp.float32) -> Callable:
  """Normal with standard deviation stddev."""
  return lambda key, shape, dtype=dtype: random.normal(key, shape, dtype) * stddev


def truncated_normal(stddev: float = 1e-2, dtype=tnp.float32, lower: float = -2.0, upper: float = 2.0) -> Callable:
  """stddev times a standard normal truncated to (lower, upper)."""
  return lambda key, shape, dtype=dtype: random.truncated_normal(key, lower, upper, shape, dtype) * stddev


def _fans(shape, in_axis, out_axis, batch_axis) -> tuple[float, float]:
  n = len(shape)
  if n < 2: raise ValueError(f"variance_scaling: needs a shape of 2 or more dimensions, got {shape}")
  ins, outs = in_axis % n, out_axis % n
  batch = {b % n for b in ((batch_axis,) if isinstance(batch_axis, int) else batch_axis)}
  receptive = math.prod(s for i, s in enumerate(shape) if i not in (ins, outs) and i not in batch)
  return shape[ins] * receptive, shape[outs] * receptive


def variance_scaling(scale: float, mode: str, distribution: str, in_axis: int = -2, out_axis: int = -1,
                     batch_axis=(), dtype=tnp.float32) -> Callable:
  """Variance scale / fan (fan_in, fan_out or their mean), drawn from a truncated normal, a normal or a uniform,
  as jax.nn.initializers.variance_scaling."""
  if mode not in ("fan_in", "fan_out", "fan_avg"):
    raise ValueError(f"variance_scaling: mode must be fan_in, fan_out or fan_avg, got {mode!r}")
  if distribution not in ("truncated_normal", "normal", "uniform"):
    raise ValueError(f"variance_scaling: distribution must be truncated_normal, normal or uniform, got {distribution!r}")

  def init(key, shape, dtype=dtype):
    fan_in, fan_out = _fans(tuple(shape), in_axis, out_axis, batch_axis)
    var = scale / {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
    if distribution == "truncated_normal":
      return random.truncated_normal(key, -2.0, 2.0, shape, dtype) * (math.sqrt(var) / TRUNCATED_STDDEV)
    if distribution == "normal": return random.normal(key, shape, dtype) * math.sqrt(var)
    return random.uniform(key, shape, dtype, -1.0, 1.0) * math.sqrt(3 * var)
  return init


def glorot_uniform(**kw): return variance_scaling(1.0, "fan_avg", "uniform", **kw)
def glorot_normal(**kw): return variance_scaling(1.0, "fan_avg", "truncated_normal", **kw)
def lecun_uniform(**kw): return variance_scaling(1.0, "fan_in", "uniform", **kw)
def lecun_normal(**kw): return variance_scaling(1.0, "fan_in", "truncated_normal", **kw)
def he_uniform(**kw): return variance_scaling(2.0, "fan_in", "uniform", **kw)
def he_normal(**kw): return variance_scaling(2.0, "fan_in", "truncated_normal", **kw)


xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal = glorot_uniform, glorot_normal, he_uniform, he_normal


def _orthonormal_columns(z):
  """Q of z = QR (z of shape (n, k), n >= k) with R's diagonal positive: Gram-Schmidt, each column orthogonalised
  twice against the ones before it, so it stays orthonormal in float32."""
  cols = []
  for j in range(z.shape[1]):
    v = z[:, j]
    if cols:
      q = tnp.stack(cols, axis=1)
      for _ in range(2): v = v - q @ (q.T @ v)
    cols.append(v / tnp.linalg.norm(v))
  return tnp.stack(cols, axis=1)


def orthogonal(scale: float = 1.0, column_axis: int = -1, dtype=tnp.float32) -> Callable:
  """scale times a uniformly distributed orthogonal matrix (orthonormal rows or columns, whichever are fewer), the
  other axes flattened into rows, as jax.nn.initializers.orthogonal. It takes the Q factor of the same normal draw
  as JAX; JAX's QR comes from LAPACK and this one from Gram-Schmidt, so they agree to rounding, not bit for bit.

  >>> w = tracegrad.nn.initializers.orthogonal()(tracegrad.random.key(0), (3, 3))
  >>> bool(tnp.allclose(w @ w.T, tnp.eye(3), atol=1e-5))
  True
  """
  def init(key, shape, dtype=dtype):
    shape = tuple(shape)
    if len(shape) < 2:
      raise ValueError(f"orthogonal: the initializer needs a shape of 2 or more dimensions, got {shape}")
    if 0 in shape: return tnp.zeros(shape, dtype)
    n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
    n, k = max(n_rows, n_cols), min(n_rows, n_cols)
    q = _orthonormal_columns(random.normal(key, (n, k), dtype))
    if n_rows < n_cols: q = q.T
    q = tnp.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
    return tnp.asarray(scale, dtype) * tnp.moveaxis(q, -1, column_axis)
  return init


def delta_orthogonal(scale: float = 1.0, column_axis: int = -1, dtype=tnp.float32) -> Callable:
  """A 3-, 4- or 5-dimensional convolution kernel that is zero except at its spatial centre, which holds an
  orthogonal matrix (orthogonal(scale, column_axis)), as jax.nn.initializers.delta_orthogonal.

  >>> w = tracegrad.nn.initializers.delta_orthogonal()(tracegrad.random.key(0), (3, 2, 2))
  >>> [float(tnp.abs(w[i]).sum() > 0) for i in range(3)]
  [0.0, 1.0, 0.0]
  """
  def init(key, shape, dtype=dtype):
    shape = tuple(shape)
    if len(shape) not in (3, 4, 5):
      raise ValueError(f"delta_orthogonal: the initializer needs a 3D, 4D or 5D shape, got {shape}")
    if shape[-1] < shape[-2]:
      raise ValueError(f"delta_orthogonal: fan_in (shape[-2] = {shape[-2]}) must be at most fan_out "
                       f"(shape[-1] = {shape[-1]}), got shape {shape}")
    ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    return tnp.zeros(shape, dtype).at[centre].set(ortho)
  return init
