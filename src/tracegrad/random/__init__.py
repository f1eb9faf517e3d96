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

import numpy as np

from .. import lax
from .. import numpy as tnp
from ..array import Array, to_array
from ..config import config
from ..ir import dtypes
from ..numpy.core import normalize_axis
from . import portable_math as pm

__all__ = ["key", "PRNGKey", "key_data", "split", "fold_in", "bits", "uniform", "normal", "truncated_normal", "randint",
           "bernoulli", "gumbel", "exponential", "categorical", "permutation", "shuffle", "choice"]

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


def _partitionable() -> bool:
  return bool(getattr(config, "jax_threefry_partitionable", True))


def _counters(k: Array, shape: tuple) -> tuple[Array, Array]:
  """Threefry of each position's flat index (a 64-bit counter as two words: JAX's partitionable scheme)."""
  lo = tnp.arange(math.prod(shape), dtype=tnp.uint32).reshape(shape)
  return threefry2x32(k[0], k[1], tnp.zeros_like(lo), lo)


def _stream(k: Array, m: int) -> Array:
  """m words of JAX's original scheme: the counters 0..m-1 (and a 0 when m is odd) halved into pairs."""
  h = (m + 1) // 2
  c = tnp.concatenate([tnp.arange(m, dtype=tnp.uint32), tnp.zeros((m % 2,), tnp.uint32)])
  x0, x1 = threefry2x32(k[0], k[1], c[:h], c[h:])
  return tnp.concatenate([x0, x1])[:m]


_UINT = {8: tnp.uint8, 16: tnp.uint16, 32: tnp.uint32, 64: tnp.uint64}


def _raw_bits(k: Array, width: int, shape: tuple) -> Array:
  """Unsigned words of `width` bits, as JAX's threefry_random_bits in the configured scheme."""
  u = _UINT[width]
  n = math.prod(shape)
  if _partitionable():
    x0, x1 = _counters(k, shape)
    if width == 64: return (x0.astype(u) << 32) | x1.astype(u)
    return (x0 ^ x1).astype(u)
  if width == 64:
    w = _stream(k, 2 * n)
    return ((w[:n].astype(u) << 32) | w[n:].astype(u)).reshape(shape)
  if width == 32: return _stream(k, n).reshape(shape)
  per = 32 // width
  w = _stream(k, -(-n * width // 32))
  parts = (w[:, None] >> (tnp.arange(per, dtype=tnp.uint32) * width)[None, :]) & ((1 << width) - 1)
  return parts.reshape(-1)[:n].astype(u).reshape(shape)


def split(k, num=2) -> Array:
  """num new keys from k (num an int or a shape), as uint32[*num, 2], as jax.random.split.

  >>> tracegrad.random.split(tracegrad.random.key(0))
  Array([[1797259609, 2579123966],
         [ 928981903, 3453687069]], dtype=uint32)
  """
  shape = tuple(num) if isinstance(num, (tuple, list)) else (num,)
  if any(not isinstance(n, int) or n < 0 for n in shape):
    raise ValueError(f"split: num must be an int >= 0 or a shape, got {num!r}")
  k = _key(k, "split")
  if _partitionable(): return tnp.stack(_counters(k, shape), axis=-1)
  return _stream(k, 2 * math.prod(shape)).reshape(*shape, 2)


def fold_in(k, data) -> Array:
  """A new key from k and an integer, as jax.random.fold_in.

  >>> tracegrad.random.fold_in(tracegrad.random.key(0), 1)
  Array([ 928981903, 3453687069], dtype=uint32)
  """
  k = _key(k, "fold_in")
  d = to_array(data, fn="fold_in")
  if d.shape != () or not (d.dtype.is_int or d.dtype.is_bool):
    raise TypeError(f"fold_in: data must be an integer scalar, got {d.aval_str()}")
  x0, x1 = threefry2x32(k[0], k[1], tnp.zeros((), tnp.uint32), d.astype(tnp.uint32))
  return tnp.stack([x0, x1])


def bits(k, shape=(), dtype=None) -> Array:
  """Uniformly random unsigned integers of `shape`, as jax.random.bits (uint64 by default with 64-bit types on,
  else uint32).

  >>> tracegrad.random.bits(tracegrad.random.key(0), (3,))
  Array([4070199207, 4202968722, 1427181096], dtype=uint32)
  """
  shape = _shape(shape, "bits")
  d = dtypes.canonicalize(dtypes.as_dtype(dtype, "bits")) if dtype is not None else \
    (dtypes.uint64 if dtypes.x64_enabled() else dtypes.uint32)
  if not d.is_unsigned: raise ValueError(f"bits: dtype must be an unsigned int type, got {d}")
  return _raw_bits(_key(k, "bits"), d.itemsize * 8, shape)


def _float(dtype, fn: str):
  d = dtypes.canonicalize(dtypes.as_dtype(dtype, fn))
  if not d.is_float: raise TypeError(f"{fn}: dtype must be a float type, got {d}")
  return d


_MANTISSA = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}


def _fma(a: Array, b: Array, c: Array) -> Array:
  """a * b + c rounded once (as XLA contracts it); 16-bit floats in float32, rounded at the end."""
  d = a.dtype
  if d in (dtypes.float32, dtypes.float64): return pm.fma(a, b, c)
  f = tnp.float32
  return pm.fma(a.astype(f), b.astype(f), c.astype(f)).astype(d)


_ONE_BITS = {"float16": 0x3C00, "bfloat16": 0x3F80, "float32": 0x3F800000, "float64": 0x3FF0000000000000}


def _uniform(k: Array, shape: tuple, d, lo=0.0, hi=1.0) -> Array:
  """JAX's uniform: random mantissa bits under the exponent of 1.0, minus 1, scaled into [lo, hi)."""
  nbits, nmant = d.itemsize * 8, _MANTISSA[d.name]
  rng = nbits if nmant >= 8 else 8
  w = _raw_bits(k, rng, shape).astype(_UINT[nbits])
  f = lax.bitcast_convert_type((w >> (rng - nmant)) | _ONE_BITS[d.name], d) - tnp.asarray(1.0, d)
  lo, hi = tnp.asarray(lo, d), tnp.asarray(hi, d)
  return tnp.maximum(lo, _fma(f, hi - lo, lo))


def uniform(k, shape=(), dtype=tnp.float32, minval=0.0, maxval=1.0) -> Array:
  """Uniform in [minval, maxval), as jax.random.uniform.

  >>> tracegrad.random.uniform(tracegrad.random.key(0), (3,))
  Array([0.947667  , 0.9785799 , 0.33229148], dtype=float32)
  """
  d, shape = _float(dtype, "uniform"), _shape(shape, "uniform")
  lo, hi = (tnp.asarray(v, dtype=d) for v in (minval, maxval))
  _check_shape("uniform", shape, lo.shape, hi.shape)
  return _uniform(_key(k, "uniform"), shape, d, lo, hi)


def _as32(d):
  """The float type the float32 transcendentals run in for d (float64 runs in float64 through portable_math)."""
  return d if d is dtypes.float64 else dtypes.float32


def _log(x: Array) -> Array:
  return pm.logf(x) if x.dtype is dtypes.float32 else pm.log(x)


def _log1p(x: Array) -> Array:
  return pm.log1pf(x) if x.dtype is dtypes.float32 else pm.log(1.0 + x)


def _erf_inv(u: Array) -> Array:
  return pm.erf_invf(u) if u.dtype is dtypes.float32 else _erfinv(u)


def normal(k, shape=(), dtype=tnp.float32) -> Array:
  """Standard normal values, as jax.random.normal: sqrt(2) erfinv(u) of u uniform in (-1, 1). float16, bfloat16
  and float32 match JAX bit for bit; float64 within a few ulp.

  >>> tracegrad.random.normal(tracegrad.random.key(0), (3,))
  Array([ 1.6226422 ,  2.0252647 , -0.43359444], dtype=float32)
  """
  d, shape = _float(dtype, "normal"), _shape(shape, "normal")
  k = _key(k, "normal")
  u = _uniform(k, shape, d, -1.0 + 2.0 ** -(_MANTISSA[d.name] + 1), 1.0)   # the float after -1
  w = _as32(d)
  return (_erf_inv(u.astype(w)) * math.sqrt(2)).astype(d)


def _erfinv(y: Array) -> Array:
  """The inverse error function on (-1, 1): Winitzki's closed form (within 2e-3), then two Newton steps on erf."""
  from ..scipy.special import _erf
  w = pm.log(1.0 - y * y)
  t = 2 / (math.pi * 0.147) + w / 2
  x = tnp.copysign(tnp.sqrt(tnp.sqrt(t * t - w / 0.147) - t), y)
  for _ in range(2): x = x - (_erf(x, pm.exp) - y) / ((2 / math.sqrt(math.pi)) * pm.exp(-(x * x)))
  return x


def truncated_normal(k, lower=-2.0, upper=2.0, shape=None, dtype=tnp.float32) -> Array:
  """Standard normal values conditioned on lower < x < upper, as jax.random.truncated_normal (sqrt(2) erfinv of a
  uniform value between erf(lower / sqrt(2)) and erf(upper / sqrt(2))).

  >>> tracegrad.random.truncated_normal(tracegrad.random.key(0), -1.0, 1.0, (3,))
  Array([ 0.8618594,  0.9412883, -0.2910484], dtype=float32)
  """
  d = _float(dtype, "truncated_normal")
  lo, hi = tnp.asarray(lower, d), tnp.asarray(upper, d)
  if shape is None: shape = tnp.broadcast_shapes(lo.shape, hi.shape)
  else: _check_shape("truncated_normal", shape := _shape(shape, "truncated_normal"), lo.shape, hi.shape)
  from ..scipy.special import _erf
  w, r2 = _as32(d), math.sqrt(2)
  erf = pm.erff if w is dtypes.float32 else (lambda x: _erf(x, pm.exp))
  a, b = (erf(v.astype(w) / tnp.asarray(r2, w)).astype(d) for v in (lo, hi))
  u = _uniform(_key(k, "truncated_normal"), shape, d, a, b)
  x = (_erf_inv(u.astype(w)) * r2).astype(d)
  return tnp.clip(x, tnp.nextafter(lo, tnp.asarray(tnp.inf, d)), tnp.nextafter(hi, tnp.asarray(-tnp.inf, d)))


def exponential(k, shape=(), dtype=tnp.float32) -> Array:
  """Exponential values with rate 1, as jax.random.exponential (-log1p(-u)).

  >>> tracegrad.random.exponential(tracegrad.random.key(0), (3,))
  Array([2.950128  , 3.8434246 , 0.40390354], dtype=float32)
  """
  d, shape = _float(dtype, "exponential"), _shape(shape, "exponential")
  u = _uniform(_key(k, "exponential"), shape, d).astype(_as32(d))
  return (-_log1p(-u)).astype(d)


def gumbel(k, shape=(), dtype=tnp.float32) -> Array:
  """Standard Gumbel values, as jax.random.gumbel (-log(-log(u)), u uniform in [tiny, 1)).

  >>> tracegrad.random.gumbel(tracegrad.random.key(0), (3,))
  Array([ 2.9233725 ,  3.8326178 , -0.09689324], dtype=float32)
  """
  d, shape = _float(dtype, "gumbel"), _shape(shape, "gumbel")
  u = _uniform(_key(k, "gumbel"), shape, d, float(tnp.finfo(d).tiny), 1.0).astype(_as32(d))
  return (-_log(-_log(u))).astype(d)


def randint(k, shape, minval, maxval, dtype=tnp.int32) -> Array:
  """Integers in [minval, maxval), as jax.random.randint (two random words per value, their remainders
  combined, so the bias is below (maxval - minval)^2 / 2^64 for 32-bit types).

  >>> tracegrad.random.randint(tracegrad.random.key(0), (3,), 0, 10)
  Array([9, 0, 2], dtype=int32)
  """
  d, shape = dtypes.canonicalize(dtypes.as_dtype(dtype, "randint")), _shape(shape, "randint")
  if not d.is_int: raise TypeError(f"randint: dtype must be an integer type, got {d}")
  _check_shape("randint", shape, tnp.shape(minval), tnp.shape(maxval))
  info = tnp.iinfo(d)

  def clipped(v):
    v = tnp.asarray(v)
    if not v.dtype.is_int: v = v.astype(tnp.int64 if dtypes.x64_enabled() else tnp.int32)
    vi = tnp.iinfo(v.dtype)
    return tnp.clip(v, max(info.min, vi.min), min(info.max, vi.max)).astype(d), v > min(info.max, vi.max)

  lo, _ = clipped(minval)
  hi, over = clipped(maxval)
  nbits = d.itemsize * 8
  u = _UINT[nbits]
  k1, k2 = split(_key(k, "randint"))
  high, low = _raw_bits(k1, nbits, shape), _raw_bits(k2, nbits, shape)
  span = tnp.where(hi <= lo, tnp.ones((), u), (hi - lo).astype(u))
  span = tnp.where(over & (hi > lo), span + tnp.ones((), u), span)
  span = tnp.broadcast_to(span, shape)
  safe = tnp.where(span == 0, tnp.ones((), u), span)

  def rem(x): return tnp.where(span == 0, x, x % safe)

  mult = rem(tnp.full(shape, 1 << (nbits // 2), u))
  mult = rem(mult * mult)
  off = rem(rem(high) * mult + rem(low))
  return lo + off.astype(d)


def bernoulli(k, p=0.5, shape=None) -> Array:
  """True with probability p, as jax.random.bernoulli (a uniform value of p's float type below p).

  >>> tracegrad.random.bernoulli(tracegrad.random.key(0), 0.5, (3,))
  Array([False, False,  True], dtype=bool)
  """
  p = tnp.asarray(p)
  if not p.dtype.is_float: p = p.astype(tnp.float32)
  if shape is None: shape = p.shape
  else: _check_shape("bernoulli", shape := _shape(shape, "bernoulli"), p.shape)
  return _uniform(_key(k, "bernoulli"), shape, p.dtype) < p


def categorical(k, logits, axis: int = -1, shape=None) -> Array:
  """Indices drawn with probabilities softmax(logits) along axis, as jax.random.categorical (argmax of logits
  plus Gumbel noise).

  >>> tracegrad.random.categorical(tracegrad.random.key(0), tnp.zeros(4), shape=(3,))
  Array([1, 3, 2], dtype=int32)
  """
  lg = tnp.asarray(logits)
  if not lg.dtype.is_float: lg = lg.astype(tnp.float32)
  axis = normalize_axis(axis, lg.ndim, "categorical")
  batch = lg.shape[:axis] + lg.shape[axis + 1:]
  shape = batch if shape is None else _shape(shape, "categorical")
  _check_shape("categorical", shape, batch)
  prefix = shape[:len(shape) - len(batch)]
  noise_shape = (*shape[len(prefix):][:axis], lg.shape[axis], *shape[len(prefix):][axis:])
  noise = gumbel(k, (*prefix, *noise_shape), lg.dtype)
  return tnp.argmax(noise + lg, axis=len(prefix) + axis).astype(tnp.int32)


def _shuffle(k: Array, x: Array, axis: int) -> Array:
  """x sorted along axis by fresh random words, in as many rounds as make ties unlikely (as JAX's shuffle)."""
  rounds = math.ceil(3 * math.log(max(1, x.size)) / math.log(2 ** 32 - 1))
  for _ in range(rounds):
    k, sub = split(k)
    order = tnp.argsort(_raw_bits(sub, 32, x.shape), axis=axis, stable=True)
    x = tnp.take_along_axis(x, order, axis=axis)
  return x


def permutation(k, x, axis: int = 0, independent: bool = False) -> Array:
  """A random permutation of range(x) for an int, else of x's entries along axis, as jax.random.permutation
  (with independent=True, each slice along the other axes on its own).

  >>> tracegrad.random.permutation(tracegrad.random.key(0), 5)
  Array([0, 1, 4, 3, 2], dtype=int32)
  """
  k = _key(k, "permutation")
  if isinstance(x, int) or (not isinstance(x, Array) and np.ndim(x) == 0):
    n = int(x)
    if n < 0: raise ValueError(f"permutation: x must be >= 0, got {n}")
    return _shuffle(k, tnp.arange(n, dtype=tnp.int32), 0)
  a = tnp.asarray(x)
  if a.ndim == 0: raise ValueError("permutation: x must be an int or an array of at least one dimension")
  axis = normalize_axis(axis, a.ndim, "permutation")
  if independent or a.ndim == 1: return _shuffle(k, a, axis)
  return tnp.take(a, _shuffle(k, tnp.arange(a.shape[axis], dtype=tnp.int32), 0), axis=axis)


def shuffle(k, x, axis: int = 0) -> Array:
  """x's entries shuffled along axis, each slice on its own, as jax.random.shuffle (permutation with
  independent=True).

  >>> tracegrad.random.shuffle(tracegrad.random.key(0), tnp.arange(5))
  Array([0, 1, 4, 3, 2], dtype=int32)
  """
  return permutation(k, tnp.asarray(x), axis, independent=True)


def choice(k, a, shape=(), replace: bool = True, p=None, axis: int = 0) -> Array:
  """Entries of a (or of range(a) for an int or a scalar array) drawn along axis, with probabilities p (one per
  entry; default: all equal), as jax.random.choice.

  >>> tracegrad.random.choice(tracegrad.random.key(0), 5, (3,), replace=False)
  Array([0, 1, 4], dtype=int32)
  """
  shape = _shape(shape, "choice")
  if not isinstance(a, int) and (arr := tnp.asarray(a)).ndim == 0: a = int(arr)
  if isinstance(a, int): n, what = a, "a"
  else:
    axis = normalize_axis(axis, arr.ndim, "choice")
    n, what = arr.shape[axis], "a.shape[axis]"
  size = math.prod(shape)
  if n < 0 or (n == 0 and size):
    raise ValueError(f"choice: {what} must be greater than 0 unless no samples are taken, got {n} for shape {shape}")
  if not replace and size > n:
    raise ValueError(f"choice: cannot take a sample of {size} (shape {shape}) from a population of {n} without "
                     f"replacement (replace=False); pass replace=True or a smaller shape")
  if p is not None and (pa := tnp.asarray(p)).shape != (n,):
    raise ValueError(f"choice: p must be None or a 1-D array with one probability per choice ({what} = {n}), got p "
                     f"of shape {pa.shape}")
  k = _key(k, "choice")
  if size == 0: return tnp.zeros(shape, tnp.int32 if isinstance(a, int) else arr.dtype)
  if p is None and not replace:
    perm = permutation(k, n if isinstance(a, int) else arr, axis)
    if isinstance(a, int): return perm[:size].reshape(shape)
    return lax.slice_in_dim(perm, 0, size, axis=axis).reshape(arr.shape[:axis] + shape + arr.shape[axis + 1:])
  if p is None: idx = randint(k, shape, 0, n)
  else:
    if not pa.dtype.is_float: pa = pa.astype(tnp.float32)
    if replace:
      cum = tnp.cumsum(pa)
      r = cum[-1] * (1 - _uniform(k, shape, pa.dtype))
      idx = tnp.searchsorted(cum, r).astype(tnp.int32)
    else:
      g = gumbel(k, (n,), pa.dtype) + _log(pa)
      idx = tnp.argsort(-g, stable=True)[:size].reshape(shape).astype(tnp.int32)
  if isinstance(a, int): return idx
  return tnp.take(arr, idx.reshape(-1), axis=axis).reshape(arr.shape[:axis] + shape + arr.shape[axis + 1:])
