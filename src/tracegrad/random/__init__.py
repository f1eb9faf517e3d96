"""Pseudo-random numbers as jax.random, from counter-based keys: a key is a uint32[2] array, and every draw is
Threefry-2x32 (20 rounds) of the key and a counter, written with ordinary array operations. Draws are pure functions
of their key, so they give the same values eagerly, under jit and under vmap; split or fold_in a key for new
streams, never reuse one.

>>> k = tracegrad.random.key(0)
>>> k1, k2 = tracegrad.random.split(k)
>>> tracegrad.random.uniform(k1, (3,)).shape
(3,)
"""
from __future__ import annotations

import math

from .. import lax
from .. import numpy as tnp
from ..array import Array, to_array
from ..ir import dtypes
from ..numpy.core import normalize_axis
from . import portable_math as pm

__all__ = ["key", "PRNGKey", "key_data", "split", "fold_in", "bits", "uniform", "normal", "truncated_normal", "randint",
           "bernoulli", "gumbel", "exponential", "categorical", "permutation", "choice"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def _rotl(x: Array, r: int) -> Array: return (x << r) | (x >> (32 - r))


def threefry2x32(k0, k1, x0, x1) -> tuple[Array, Array]:
  """Threefry-2x32 with 20 rounds: the two uint32 words of key (k0, k1) encrypt the counters (x0, x1)."""
  ks = (k0, k1, k0 ^ k1 ^ _PARITY)
  x0, x1 = x0 + ks[0], x1 + ks[1]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x0 = x0 + x1
      x1 = _rotl(x1, r) ^ x0
    x0, x1 = x0 + ks[(i + 1) % 3], x1 + ks[(i + 2) % 3] + (i + 1)
  return x0, x1


def key(seed) -> Array:
  """A key from an integer seed, as jax.random.key (here a uint32[2] array, as jax.random.PRNGKey gives): the seed's
  low 32 bits, after its high 32 bits when 64-bit types are enabled (else 0). A Python int must fit in int64.

  >>> tracegrad.random.key(42)
  Array([ 0, 42], dtype=uint32)
  """
  if isinstance(seed, int):   # a Python bool is an int here, as in JAX
    if not -(1 << 63) <= seed < 1 << 63:
      raise OverflowError(f"key: the seed {seed} does not fit in int64; pass a seed in [-2**63, 2**63)")
    hi = (seed % (1 << 64)) >> 32 if dtypes.x64_enabled() else 0
    return tnp.asarray([hi, seed & 0xffffffff], dtype=tnp.uint32)
  s = to_array(seed, fn="key")
  if s.shape != () or not s.dtype.is_int:
    raise TypeError(f"key: the seed must be an integer scalar, got {s.aval_str()}; for several keys, vmap over seeds")
  hi = (s >> 32).astype(tnp.uint32) if s.dtype.itemsize == 8 else tnp.zeros((), tnp.uint32)
  return tnp.stack([hi, s.astype(tnp.uint32)])


PRNGKey = key


def key_data(k) -> Array:
  """The uint32[2] words of a key (keys are those words already)."""
  return _key(k, "key_data")


def _key(k, fn: str) -> Array:
  a = to_array(k, fn=fn)
  if a.dtype is not dtypes.uint32 or a.shape != (2,):
    raise TypeError(f"{fn}: the key must be a uint32[2] array from tracegrad.random.key or split, got {a.aval_str()}; "
                    f"for several keys, vmap over them")
  return a


def _shape(shape, fn: str) -> tuple[int, ...]:
  shape = (shape,) if isinstance(shape, int) else tuple(shape)
  if any(not isinstance(n, int) or n < 0 for n in shape):
    raise ValueError(f"{fn}: shape must hold non-negative ints, got {shape}")
  return shape


def _check_shape(fn: str, shape: tuple, *params: tuple) -> None:
  """The parameters' shapes must broadcast to `shape` itself, as in JAX."""
  try:
    out = tnp.broadcast_shapes(shape, *params)
  except ValueError:
    out = None
  if out != shape:
    raise ValueError(f"{fn}: parameter shapes {', '.join(map(str, params))} must broadcast to the shape argument "
                     f"{shape}; pass a shape they broadcast to")


def _bits(k: Array, n: int) -> Array:
  """n uint32 words of key k: the counters 0..2m-1 as m pairs, m = ceil(n / 2)."""
  m = (n + 1) // 2
  c = tnp.arange(2 * m, dtype=tnp.uint32)
  x0, x1 = threefry2x32(k[0], k[1], c[:m], c[m:])
  return tnp.concatenate([x0, x1])[:n]


def split(k, num: int = 2) -> Array:
  """num new keys from k, as uint32[num, 2].

  >>> tracegrad.random.split(tracegrad.random.key(0), 3).shape
  (3, 2)
  """
  if not isinstance(num, int) or num < 0: raise ValueError(f"split: num must be an int >= 0, got {num!r}")
  return _bits(_key(k, "split"), 2 * num).reshape(num, 2)


def fold_in(k, data) -> Array:
  """A new key from k and an integer, as jax.random.fold_in."""
  k = _key(k, "fold_in")
  d = to_array(data, fn="fold_in")
  if d.shape != () or not (d.dtype.is_int or d.dtype.is_bool):
    raise TypeError(f"fold_in: data must be an integer scalar, got {d.aval_str()}")
  x0, x1 = threefry2x32(k[0], k[1], tnp.zeros((), tnp.uint32), d.astype(tnp.uint32))
  return tnp.stack([x0, x1])


def bits(k, shape=(), dtype=tnp.uint32) -> Array:
  """Uniformly random uint32 words of `shape`, as jax.random.bits."""
  shape = _shape(shape, "bits")
  if dtypes.as_dtype(dtype, "bits") is not dtypes.uint32: raise TypeError(f"bits: only uint32 words, got {dtype}")
  return _bits(_key(k, "bits"), math.prod(shape)).reshape(shape)


def _float(dtype, fn: str):
  d = dtypes.canonicalize(dtypes.as_dtype(dtype, fn))
  if not d.is_float: raise TypeError(f"{fn}: dtype must be a float type, got {d}")
  return d


def _unit(k: Array, shape: tuple, d) -> Array:
  """Uniform in [0, 1) of dtype d: 23 random bits as a float32 mantissa (52 from two words for float64)."""
  n = math.prod(shape)
  if d is dtypes.float64:
    w = _bits(k, 2 * n)
    hi, lo = w[:n].astype(d), (w[n:] >> 11).astype(d)
    return ((hi * 2.0 ** 21 + lo) * 2.0 ** -53).reshape(shape)
  f = lax.bitcast_convert_type((_bits(k, n) >> 9) | 0x3F800000, tnp.float32) - 1.0
  return f.reshape(shape).astype(d)


def uniform(k, shape=(), dtype=tnp.float32, minval=0.0, maxval=1.0) -> Array:
  """Uniform in [minval, maxval), as jax.random.uniform.

  >>> float(tracegrad.random.uniform(tracegrad.random.key(0), minval=2.0, maxval=3.0)) >= 2.0
  True
  """
  d, shape = _float(dtype, "uniform"), _shape(shape, "uniform")
  lo, hi = (tnp.asarray(v, dtype=d) for v in (minval, maxval))
  _check_shape("uniform", shape, lo.shape, hi.shape)
  u = _unit(_key(k, "uniform"), shape, d)
  return tnp.maximum(lo, lo + (hi - lo) * u)


def normal(k, shape=(), dtype=tnp.float32) -> Array:
  """Standard normal values, as jax.random.normal (Box-Muller of two uniform streams, through portable_math so
  that every device gives the same bits)."""
  d, shape = _float(dtype, "normal"), _shape(shape, "normal")
  w = d if d is dtypes.float64 else dtypes.float32
  u = _unit(_key(k, "normal"), (2, *shape), w)
  z = tnp.sqrt(-2.0 * pm.log(1.0 - u[0])) * pm.cos_2pi(u[1])
  return z.astype(d)


def _erfinv(y: Array) -> Array:
  """The inverse error function on (-1, 1): Winitzki's closed form (within 2e-3), then two Newton steps on erf."""
  from ..scipy.special import _erf
  w = pm.log(1.0 - y * y)
  t = 2 / (math.pi * 0.147) + w / 2
  x = tnp.copysign(tnp.sqrt(tnp.sqrt(t * t - w / 0.147) - t), y)
  for _ in range(2): x = x - (_erf(x, pm.exp) - y) / ((2 / math.sqrt(math.pi)) * pm.exp(-(x * x)))
  return x


def truncated_normal(k, lower=-2.0, upper=2.0, shape=None, dtype=tnp.float32) -> Array:
  """Standard normal values conditioned on lower < x < upper, as jax.random.truncated_normal (the inverse normal
  CDF of a uniform value between the bounds' CDFs)."""
  d = _float(dtype, "truncated_normal")
  lo, hi = tnp.asarray(lower, tnp.float32), tnp.asarray(upper, tnp.float32)
  if shape is None: shape = tnp.broadcast_shapes(lo.shape, hi.shape)
  else: _check_shape("truncated_normal", _shape(shape, "truncated_normal"), lo.shape, hi.shape)
  from ..scipy.special import _erf
  a, b = _erf(lo / math.sqrt(2), pm.exp), _erf(hi / math.sqrt(2), pm.exp)
  edge = 1 - 2.0 ** -23
  u = tnp.clip(uniform(k, shape, tnp.float32, a, b), -edge, edge)
  x = math.sqrt(2) * _erfinv(u)
  return tnp.clip(x, lo, hi).astype(d)


def exponential(k, shape=(), dtype=tnp.float32) -> Array:
  """Exponential values with rate 1, as jax.random.exponential."""
  d, shape = _float(dtype, "exponential"), _shape(shape, "exponential")
  return -pm.log(1.0 - _unit(_key(k, "exponential"), shape, d))


def gumbel(k, shape=(), dtype=tnp.float32) -> Array:
  """Standard Gumbel values, as jax.random.gumbel."""
  d, shape = _float(dtype, "gumbel"), _shape(shape, "gumbel")
  tiny = float(tnp.finfo(d).tiny)
  return -pm.log(-pm.log(uniform(k, shape, d, minval=tiny, maxval=1.0)))


def randint(k, shape, minval, maxval, dtype=tnp.int32) -> Array:
  """Integers in [minval, maxval), as jax.random.randint (the remainder of a random word; its bias is below
  (maxval - minval) / 2^32)."""
  d, shape = dtypes.canonicalize(dtypes.as_dtype(dtype, "randint")), _shape(shape, "randint")
  if not d.is_int: raise TypeError(f"randint: dtype must be an integer type, got {d}")
  _check_shape("randint", shape, tnp.shape(minval), tnp.shape(maxval))
  lo, hi = tnp.broadcast_to(tnp.asarray(minval, d), shape), tnp.broadcast_to(tnp.asarray(maxval, d), shape)
  span = (hi.astype(tnp.int64 if d.itemsize == 8 else tnp.int32) - lo).astype(tnp.uint32)
  r = bits(k, shape) % tnp.maximum(span, 1)
  return tnp.where(hi > lo, (lo.astype(tnp.uint32) + r).astype(d), lo)


def bernoulli(k, p=0.5, shape=None) -> Array:
  """True with probability p, as jax.random.bernoulli."""
  p = tnp.asarray(p)
  if shape is None: shape = p.shape
  else: _check_shape("bernoulli", shape := _shape(shape, "bernoulli"), p.shape)
  return uniform(k, shape, p.dtype if p.dtype.is_float else tnp.float32) < p


def categorical(k, logits, axis: int = -1, shape=None) -> Array:
  """Indices drawn with probabilities softmax(logits) along axis, as jax.random.categorical (argmax of logits
  plus Gumbel noise)."""
  lg = tnp.moveaxis(tnp.asarray(logits), axis, -1)
  batch = lg.shape[:-1] if shape is None else _shape(shape, "categorical")
  _check_shape("categorical", batch, lg.shape[:-1])
  noise = gumbel(k, (*batch, lg.shape[-1]), lg.dtype if lg.dtype.is_float else tnp.float32)
  return tnp.argmax(lg + noise, axis=-1)


def permutation(k, x, axis: int = 0) -> Array:
  """A random permutation of range(x) for an int, else of x's entries along axis, as jax.random.permutation."""
  if isinstance(x, int):
    if x < 0: raise ValueError(f"permutation: x must be >= 0, got {x}")
    return tnp.argsort(bits(k, (x,))).astype(tnp.int32)
  a = tnp.asarray(x)
  axis = normalize_axis(axis, a.ndim, "permutation")
  return tnp.take(a, tnp.argsort(bits(k, (a.shape[axis],))), axis=axis)


def choice(k, a, shape=(), replace: bool = True, p=None, axis: int = 0) -> Array:
  """Entries of a (or of range(a) for an int or a scalar array) drawn along axis, with probabilities p (one per
  entry; default: all equal), as jax.random.choice.

  >>> tracegrad.random.choice(tracegrad.random.key(0), 5, (3,), replace=False).shape
  (3,)
  """
  shape = _shape(shape, "choice")
  if not isinstance(a, int) and (arr := tnp.asarray(a)).ndim == 0: a = int(arr)
  if isinstance(a, int): n, what = a, "a"
  else: n, what = arr.shape[normalize_axis(axis, arr.ndim, "choice")], "a.shape[axis]"
  size = math.prod(shape)
  if n < 0 or (n == 0 and size):
    raise ValueError(f"choice: {what} must be greater than 0 unless no samples are taken, got {n} for shape {shape}")
  if not replace and size > n:
    raise ValueError(f"choice: cannot take a sample of {size} (shape {shape}) from a population of {n} without "
                     f"replacement (replace=False); pass replace=True or a smaller shape")
  if p is not None and (pa := tnp.asarray(p)).shape != (n,):
    raise ValueError(f"choice: p must be None or a 1-D array with one probability per choice ({what} = {n}), got p "
                     f"of shape {pa.shape}")
  if p is None:
    idx = randint(k, shape, 0, n) if replace else permutation(k, n)[:size].reshape(shape)
  else:
    logp = pm.log(pa.astype(tnp.float32))
    if replace: idx = categorical(k, logp, shape=shape)
    else: idx = tnp.argsort(-(logp + gumbel(k, (n,))))[:size].reshape(shape)
  return idx if isinstance(a, int) else tnp.take(tnp.asarray(a), idx, axis=axis)
