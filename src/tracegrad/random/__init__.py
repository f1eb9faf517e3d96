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
           "bernoulli", "gumbel", "exponential", "categorical", "permutation", "shuffle", "choice", "wrap_key_data",
           "key_impl", "key_dtype", "clone", "laplace", "logistic", "cauchy",
           "rademacher", "maxwell", "double_sided_maxwell", "weibull_min", "pareto", "rayleigh", "triangular", "wald",
           "lognormal", "geometric", "gamma", "loggamma", "chisquare", "f", "t", "beta", "dirichlet",
           "generalized_normal", "ball", "poisson", "binomial", "multinomial", "orthogonal", "multivariate_normal"]

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


# --- keys as JAX's typed-key functions see them ---

def wrap_key_data(key_bits_array, *, impl=None, dtype=None) -> Array:
  """Keys from their uint32 words, as jax.random.wrap_key_data. tracegrad's keys are those words already (uint32
  arrays whose last axis holds the 2 words of threefry2x32), so this checks them and returns them.

  >>> tracegrad.random.wrap_key_data(tracegrad.random.key_data(tracegrad.random.key(42)))
  Array([ 0, 42], dtype=uint32)
  """
  if impl is not None and dtype is not None:
    raise ValueError("wrap_key_data: cannot specify both impl and dtype; pass one of them")
  _impl_name(impl if dtype is None else dtype, "wrap_key_data")
  a = to_array(key_bits_array, fn="wrap_key_data")
  if a.dtype is not dtypes.uint32 or a.ndim < 1 or a.shape[-1] != 2:
    raise TypeError(f"wrap_key_data: key_bits_array must be a uint32 array whose last axis has the 2 words of a "
                    f"threefry2x32 key, got {a.aval_str()}")
  return a


def _impl_name(impl, fn: str) -> str:
  name = getattr(impl, "name", impl)
  if impl is not None and name not in ("threefry2x32", dtypes.uint32) and impl is not tnp.uint32:
    raise ValueError(f"{fn}: tracegrad.random has the threefry2x32 implementation only, got {impl!r}")
  return "threefry2x32"


def key_impl(keys) -> str:
  """The name of the keys' implementation, as jax.random.key_impl: always "threefry2x32".

  >>> tracegrad.random.key_impl(tracegrad.random.key(0))
  'threefry2x32'
  """
  a = to_array(keys, fn="key_impl")
  if a.dtype is not dtypes.uint32 or a.ndim < 1 or a.shape[-1] != 2:
    raise TypeError(f"key_impl: keys must be uint32 arrays of 2 words from tracegrad.random.key, got {a.aval_str()}")
  return "threefry2x32"


def key_dtype(impl=None):
  """The dtype of a key's elements for impl (only "threefry2x32" or None), as jax.random.key_dtype. JAX answers with
  a typed-key dtype; tracegrad's keys are raw uint32[2] arrays, so this is uint32.

  >>> tracegrad.random.key_dtype() == tnp.uint32
  True
  """
  _impl_name(impl, "key_dtype")
  return dtypes.uint32


def clone(k) -> Array:
  """The same key, as jax.random.clone (tracegrad checks no key reuse, so this is the identity).

  >>> tracegrad.random.clone(tracegrad.random.key(1))
  Array([0, 1], dtype=uint32)
  """
  return _key(k, "clone")


# --- distributions: transforms of uniform and normal draws ---

def _dtype(dtype, fn: str, kind: str = "float"):
  """dtype, or the default float (int) type when None, checked to be of kind as JAX checks it."""
  d = dtypes.canonicalize(dtypes.as_dtype(dtype if dtype is not None else (float if kind == "float" else int), fn))
  if (kind == "float" and not d.is_float) or (kind == "int" and not d.is_int):
    raise ValueError(f"{fn}: dtype must be a{'n int' if kind == 'int' else ' float'} dtype, got {d}")
  return d


def _out_shape(fn: str, shape, *params) -> tuple[int, ...]:
  """shape, or the parameters' broadcast shape when None; they must broadcast to it."""
  shapes = [tnp.shape(p) for p in params]
  if shape is None: return tnp.broadcast_shapes(*shapes) if shapes else ()
  shape = _shape(shape, fn)
  _check_shape(fn, shape, *shapes)
  return shape


def _exp(x: Array) -> Array:
  return pm.expf(x) if x.dtype is dtypes.float32 else pm.exp(x)


def _in32(f, *xs: Array) -> Array:
  """f of xs computed in the float type the transcendentals run in, returned in xs[0]'s type."""
  d = xs[0].dtype
  return f(*(x.astype(_as32(d)) for x in xs)).astype(d)


def laplace(k, shape=(), dtype=None) -> Array:
  """Laplace values (density exp(-|x|) / 2), as jax.random.laplace: sign(u) log1p(-|u|), u uniform in (-1, 1).

  >>> tracegrad.random.laplace(tracegrad.random.key(0), (3,))
  Array([-2.2569816 , -3.1502788 ,  0.40859544], dtype=float32)
  """
  d, shape = _dtype(dtype, "laplace"), _shape(shape, "laplace")
  u = _uniform(_key(k, "laplace"), shape, d, -1.0 + float(tnp.finfo(d).epsneg), 1.0)
  return _in32(lambda u: tnp.sign(u) * _log1p(-tnp.abs(u)), u)


def logistic(k, shape=(), dtype=None) -> Array:
  """Standard logistic values, as jax.random.logistic: log(u) - log1p(-u), u uniform in [tiny, 1).

  >>> tracegrad.random.logistic(tracegrad.random.key(0), (3,))
  Array([ 2.896376 ,  3.8217716, -0.6978392], dtype=float32)
  """
  d, shape = _dtype(dtype, "logistic"), _shape(shape, "logistic")
  u = _uniform(_key(k, "logistic"), shape, d, float(tnp.finfo(d).tiny), 1.0)
  return _in32(lambda u: _log(u) - _log1p(-u), u)


def cauchy(k, shape=(), dtype=None) -> Array:
  """Standard Cauchy values, as jax.random.cauchy: tan(pi (u - 1/2)), u uniform in [eps, 1); within an ulp or so of
  JAX's (its tan rounds differently).

  >>> tracegrad.random.cauchy(tracegrad.random.key(0), (3,)).shape
  (3,)
  """
  d, shape = _dtype(dtype, "cauchy"), _shape(shape, "cauchy")
  u = _uniform(_key(k, "cauchy"), shape, d, float(tnp.finfo(d).eps), 1.0)
  return tnp.tan(tnp.asarray(math.pi, d) * (u - tnp.asarray(0.5, d)))


def rademacher(k, shape=(), dtype=None) -> Array:
  """-1 or 1 with equal probability, as jax.random.rademacher (2 bernoulli(0.5) - 1).

  >>> tracegrad.random.rademacher(tracegrad.random.key(0), (4,))
  Array([-1, -1,  1,  1], dtype=int32)
  """
  d, shape = _dtype(dtype, "rademacher", "any"), _shape(shape, "rademacher")
  b = bernoulli(_key(k, "rademacher"), 0.5, shape).astype(d)
  return (2 * b - 1).astype(d)


def maxwell(k, shape=(), dtype=None) -> Array:
  """One-sided Maxwell values, as jax.random.maxwell: the norm of 3 standard normal values.

  >>> tracegrad.random.maxwell(tracegrad.random.key(0), (2,))
  Array([2.6310966, 0.9910329], dtype=float32)
  """
  d, shape = _dtype(dtype, "maxwell"), _shape(shape, "maxwell")
  z = normal(_key(k, "maxwell"), (*shape, 3), d)
  return tnp.sqrt(tnp.sum(z * z, axis=-1))


def double_sided_maxwell(k, loc, scale, shape=(), dtype=None) -> Array:
  """Double-sided Maxwell values, as jax.random.double_sided_maxwell: a Maxwell value times a random sign, times
  scale, plus loc. As in JAX the result's shape is shape + the broadcast shape of loc and scale (shape defaults to
  that broadcast shape when empty).

  >>> tracegrad.random.double_sided_maxwell(tracegrad.random.key(0), 0.0, 1.0, (2,)).shape
  (2,)
  """
  d, shape = _dtype(dtype, "double_sided_maxwell"), _shape(shape, "double_sided_maxwell")
  loc, scale = tnp.asarray(loc), tnp.asarray(scale)
  params = tnp.broadcast_shapes(loc.shape, scale.shape)
  shape = (shape or params) + params
  k1, k2 = split(_key(k, "double_sided_maxwell"))
  return rademacher(k2, shape, d) * maxwell(k1, shape, d) * scale.astype(d) + loc.astype(d)


def weibull_min(k, scale, concentration, shape=(), dtype=None) -> Array:
  """Weibull values, as jax.random.weibull_min: scale (-log1p(-u))^(1 / concentration); within an ulp or so of JAX's
  (its pow rounds differently).

  >>> tracegrad.random.weibull_min(tracegrad.random.key(0), 1.0, 2.0, (3,)).shape
  (3,)
  """
  d, shape = _dtype(dtype, "weibull_min"), _shape(shape, "weibull_min")
  u = _uniform(_key(k, "weibull_min"), shape, d)
  e = _in32(lambda u: -_log1p(-u), u)
  return tnp.power(e, 1.0 / tnp.asarray(concentration, d)) * tnp.asarray(scale, d)


def pareto(k, b, shape=None, dtype=None) -> Array:
  """Pareto values with shape b (density b / x^(b+1) for x >= 1), as jax.random.pareto: exp(e / b), e exponential.

  >>> tracegrad.random.pareto(tracegrad.random.key(0), 3.0, (3,))
  Array([2.6734667, 3.6007476, 1.1441185], dtype=float32)
  """
  d = _dtype(dtype, "pareto")
  shape = _out_shape("pareto", shape, b)
  e = exponential(_key(k, "pareto"), shape, d)
  if isinstance(b, (int, float)): return _in32(_exp, e * (tnp.asarray(1, d) / tnp.asarray(b, d)))  # as XLA folds it
  return _in32(_exp, e / tnp.asarray(b, d))


def rayleigh(k, scale, shape=None, dtype=None) -> Array:
  """Rayleigh values, as jax.random.rayleigh: scale sqrt(-2 log u), u uniform.

  >>> tracegrad.random.rayleigh(tracegrad.random.key(0), 1.0, (3,))
  Array([0.32787833, 0.20810027, 1.4844142 ], dtype=float32)
  """
  d = _dtype(dtype, "rayleigh")
  shape = _out_shape("rayleigh", shape, scale)
  u = _uniform(_key(k, "rayleigh"), shape, d)
  return tnp.asarray(scale, d) * tnp.sqrt(_in32(_log, u) * tnp.asarray(-2.0, d))


def triangular(k, left, mode, right, shape=None, dtype=None) -> Array:
  """Triangular values on [left, right] peaking at mode, as jax.random.triangular (the inverse of its CDF).

  >>> tracegrad.random.triangular(tracegrad.random.key(0), 0.0, 0.5, 1.0, (3,))
  Array([0.8382394, 0.8965106, 0.4076098], dtype=float32)
  """
  d = _dtype(dtype, "triangular")
  shape = _out_shape("triangular", shape, left, mode, right)
  lo, mid, hi = (tnp.broadcast_to(tnp.asarray(v, d), shape) for v in (left, mode, right))
  u = _uniform(_key(k, "triangular"), shape, d)
  below = lo + tnp.sqrt(u * (hi - lo) * (mid - lo))
  above = hi - tnp.sqrt((1 - u) * (hi - lo) * (hi - mid))
  return tnp.where(u < (mid - lo) / (hi - lo), below, above)


def wald(k, mean, shape=None, dtype=None) -> Array:
  """Wald (inverse Gaussian, scale 1) values, as jax.random.wald (Michael, Schucany and Haas: a normal and a uniform
  draw per value).

  >>> tracegrad.random.wald(tracegrad.random.key(0), 1.0, (3,)).shape
  (3,)
  """
  d = _dtype(dtype, "wald")
  shape = _out_shape("wald", shape, mean)
  k1, k2 = split(_key(k, "wald"))
  mu = tnp.broadcast_to(tnp.asarray(mean, d), shape)
  v, z = normal(k1, shape, d), _uniform(k2, shape, d)
  y = v * v
  mu2 = mu * mu
  root = tnp.sqrt(_fma(mu2, y * y, 4 * mu * y))
  x = _fma(-(mu / 2), root, mu + mu2 * y / 2)
  return tnp.where(z <= mu / (mu + x), x, mu2 / x)


def lognormal(k, sigma=1.0, shape=None, dtype=None) -> Array:
  """Log-normal values, as jax.random.lognormal: exp(sigma n), n standard normal.

  >>> tracegrad.random.lognormal(tracegrad.random.key(0), shape=(3,))
  Array([5.066459  , 7.578117  , 0.64817506], dtype=float32)
  """
  d = _dtype(dtype, "lognormal")
  shape = _out_shape("lognormal", shape, sigma)
  if isinstance(sigma, (int, float)) and d is dtypes.float32:   # XLA folds sigma into normal's sqrt(2)
    u = _uniform(_key(k, "lognormal"), shape, d, -1.0 + 2.0 ** -24, 1.0)
    return pm.expf(pm.erf_invf(u) * (tnp.float32(math.sqrt(2)) * tnp.float32(sigma)))
  return _in32(_exp, normal(_key(k, "lognormal"), shape, d) * tnp.asarray(sigma, d))


def geometric(k, p, shape=None, dtype=None) -> Array:
  """The number of Bernoulli(p) trials up to the first success, as jax.random.geometric:
  floor(log(u) / log1p(-p)) + 1.

  >>> tracegrad.random.geometric(tracegrad.random.key(0), 0.5, (4,))
  Array([1, 1, 2, 2], dtype=int32)
  """
  d = _dtype(dtype, "geometric", "int")
  shape = _out_shape("geometric", shape, p)
  p = tnp.asarray(p)
  if not p.dtype.is_float: p = p.astype(_dtype(None, "geometric"))
  u = _uniform(_key(k, "geometric"), shape, p.dtype)
  u = tnp.where(u == 0, tnp.ones((), p.dtype), u)
  g = tnp.floor(_in32(_log, u) / tnp.broadcast_to(_in32(_log1p, -p), shape)) + 1
  return g.astype(d)


# --- gamma and what is built on it ---

def _gamma_one(k: Array, alpha: Array, log_space: bool) -> Array:
  """One Marsaglia-Tsang gamma value for one key, splitting and looping as JAX does (alpha < 1 draws for alpha + 1
  and scales by u^(1/alpha))."""
  d = alpha.dtype
  one, zero = tnp.ones((), d), tnp.zeros((), d)
  boost = alpha >= 1
  a = tnp.where(boost, alpha, alpha + 1)
  dd = a - tnp.asarray(1 / 3, d)
  c = tnp.asarray(1 / 3, d) / tnp.sqrt(dd)
  f32 = d is dtypes.float32

  def lg(x): return _in32(_log, x)

  def rejected(s):
    _, x2, v, u = s
    squeeze = u >= (_fma(tnp.asarray(-0.0331, d), x2, one) if f32 else one - 0.0331 * x2)
    return squeeze & (lg(u) >= x2 * 0.5 + dd * ((one - v) + lg(v)))

  def draw(s):
    kk, x_key, u_key = split(s[0], 3)

    def again(t):
      kx, sub = split(t[0])
      x = normal(sub, (), d)
      return kx, x, (_fma(x, c, one) if f32 else one + x * c)

    _, x, v = lax.while_loop(lambda t: t[2] <= zero, again, (x_key, zero, -one))
    return kk, x * x, v * v * v, _uniform(u_key, (), d)

  kk, sub = split(k)
  _, _, v, _ = lax.while_loop(rejected, draw, (kk, zero, one, tnp.asarray(2, d)))
  if log_space:
    e = -exponential(sub, (), d)
    lb = tnp.where(boost | (e == 0), zero, e * (one / alpha))
    return lg(dd) + lg(v) + lb
  u = one - _uniform(sub, (), d)
  return dd * v * tnp.where(boost, one, tnp.power(u, one / alpha))


def _gamma(k, a, shape, dtype, fn: str, log_space: bool) -> Array:
  d = _dtype(dtype, fn)
  shape = _out_shape(fn, shape, a)
  a = tnp.broadcast_to(tnp.asarray(a).astype(d), shape)
  n = math.prod(shape)
  if n == 0: return tnp.zeros(shape, d)
  keys = split(_key(k, fn), n)
  return _gamma_values(keys, a.reshape(-1), log_space).reshape(shape)


def _gamma_values_of(keys: Array, a: Array, log_space: bool) -> Array:
  from ..transforms.vmap import vmap
  return vmap(lambda kk, aa: _gamma_one(kk, aa, log_space))(keys, a)


def _gamma_values_jvp(log_space: bool, primals, tangents):
  """The implicit reparameterisation: a sample moves with a as its quantile stays fixed (lax.random_gamma_grad)."""
  (keys, a), (_, da) = primals, tangents
  x = _gamma_values(keys, a, log_space)
  if not log_space: return x, lax.random_gamma_grad(a, x) * da
  ex = tnp.exp(x)
  return x, lax.random_gamma_grad(a, ex) / ex * da


def _custom_gamma():
  from ..transforms.custom import custom_jvp
  f = custom_jvp(_gamma_values_of, nondiff_argnums=(2,))
  f.defjvp(_gamma_values_jvp)
  return f


_gamma_values = _custom_gamma()


def gamma(k, a, shape=None, dtype=None) -> Array:
  """Standard gamma values of shape a, as jax.random.gamma: Marsaglia and Tsang's rejection method with one key per
  value, split and looped as JAX does. Most values agree with JAX's to a few ulp, not bit for bit (XLA rounds some
  steps differently), and so a few take another branch of the rejection loop: the distribution is the same.
  Gradients with respect to a are JAX's implicit reparameterised ones (lax.random_gamma_grad).

  >>> tracegrad.random.gamma(tracegrad.random.key(0), 2.0, (3,))
  Array([1.5897877, 1.7599413, 1.1290071], dtype=float32)
  """
  return _gamma(k, a, shape, dtype, "gamma", False)


def loggamma(k, a, shape=None, dtype=None) -> Array:
  """The log of standard gamma values, as jax.random.loggamma (accurate for small a too, where gamma underflows);
  as gamma, the same algorithm and keys as JAX's, most values within a few ulp of its.

  >>> tracegrad.random.loggamma(tracegrad.random.key(0), 0.5, (3,))
  Array([-0.12265953,  0.02866279, -3.05603   ], dtype=float32)
  """
  return _gamma(k, a, shape, dtype, "loggamma", True)


def chisquare(k, df, shape=None, dtype=None) -> Array:
  """Chi-square values with df degrees of freedom, as jax.random.chisquare (2 exp(loggamma(df / 2))).

  >>> tracegrad.random.chisquare(tracegrad.random.key(0), 3.0, (3,)).shape
  (3,)
  """
  d = _dtype(dtype, "chisquare")
  shape = _out_shape("chisquare", shape, df)
  half = tnp.asarray(df, d) / 2
  return _in32(_exp, loggamma(k, half, shape, d)) * 2


def f(k, dfnum, dfden, shape=None, dtype=None) -> Array:
  """F values, as jax.random.f (two chi-square values, each divided by its degrees of freedom).

  >>> tracegrad.random.f(tracegrad.random.key(0), 2.0, 5.0, (3,)).shape
  (3,)
  """
  d = _dtype(dtype, "f")
  shape = _out_shape("f", shape, dfnum, dfden)
  num, den = tnp.asarray(dfnum, d), tnp.asarray(dfden, d)
  k_den, k_num = split(_key(k, "f"))
  return (chisquare(k_num, num, shape, d) / num) / (chisquare(k_den, den, shape, d) / den)


def t(k, df, shape=None, dtype=None) -> Array:
  """Student's t values, as jax.random.t: n sqrt(df / 2 / g), n normal, g gamma(df / 2).

  >>> tracegrad.random.t(tracegrad.random.key(0), 3.0, (3,)).shape
  (3,)
  """
  d = _dtype(dtype, "t")
  shape = _out_shape("t", shape, df)
  half = tnp.asarray(df, d) / 2
  k_n, k_g = split(_key(k, "t"))
  return normal(k_n, shape, d) * tnp.sqrt(half / gamma(k_g, half, shape, d))


def beta(k, a, b, shape=None, dtype=None) -> Array:
  """Beta values, as jax.random.beta (two loggamma draws, normalised in log space).

  >>> tracegrad.random.beta(tracegrad.random.key(0), 2.0, 3.0, (3,)).shape
  (3,)
  """
  d = _dtype(dtype, "beta")
  shape = _out_shape("beta", shape, a, b)
  ka, kb = split(_key(k, "beta"))
  la = loggamma(ka, tnp.broadcast_to(tnp.asarray(a, d), shape), shape, d)
  lb = loggamma(kb, tnp.broadcast_to(tnp.asarray(b, d), shape), shape, d)
  top = tnp.maximum(la, lb)
  ga, gb = _in32(_exp, la - top), _in32(_exp, lb - top)
  return ga / (ga + gb)


def dirichlet(k, alpha, shape=None, dtype=None) -> Array:
  """Dirichlet values with concentrations alpha (..., n), as jax.random.dirichlet (softmax of loggamma draws).

  >>> tracegrad.random.dirichlet(tracegrad.random.key(0), tnp.ones(3), (2,)).shape
  (2, 3)
  """
  d = _dtype(dtype, "dirichlet")
  alpha = tnp.asarray(alpha)
  if alpha.ndim < 1: raise ValueError(f"dirichlet: alpha must have ndim >= 1, got alpha.ndim == {alpha.ndim}")
  batch = alpha.shape[:-1]
  if shape is not None: _check_shape("dirichlet", batch := _shape(shape, "dirichlet"), alpha.shape[:-1])
  g = loggamma(k, alpha.astype(d), (*batch, alpha.shape[-1]), d)
  e = _in32(_exp, g - tnp.max(g, axis=-1, keepdims=True))
  return e / tnp.sum(e, axis=-1, keepdims=True)


def generalized_normal(k, p, shape=(), dtype=None) -> Array:
  """Values with density proportional to exp(-|x|^p), as jax.random.generalized_normal (a random sign times
  gamma(1/p)^(1/p)); within an ulp or so of JAX's.

  >>> tracegrad.random.generalized_normal(tracegrad.random.key(0), 2.0, (3,)).shape
  (3,)
  """
  d, shape = _dtype(dtype, "generalized_normal"), _shape(shape, "generalized_normal")
  k1, k2 = split(_key(k, "generalized_normal"))
  inv = tnp.asarray(1, d) / tnp.asarray(p, d)
  return rademacher(k2, shape, d) * tnp.power(gamma(k1, inv, shape, d), inv)


def ball(k, d: int, p=2, shape=(), dtype=None) -> Array:
  """Points uniform in the d-dimensional unit p-norm ball, as jax.random.ball; within an ulp or so of JAX's.

  >>> tracegrad.random.ball(tracegrad.random.key(0), 3, shape=(2,)).shape
  (2, 3)
  """
  dt, shape = _dtype(dtype, "ball"), _shape(shape, "ball")
  if not isinstance(d, int) or d < 0: raise ValueError(f"ball: d must be an int >= 0, got {d!r}")
  k1, k2 = split(_key(k, "ball"))
  g = generalized_normal(k1, p, (*shape, d), dt)
  e = exponential(k2, shape, dt)
  pp = tnp.asarray(p, dt)
  return g / tnp.power(tnp.sum(tnp.power(tnp.abs(g), pp), axis=-1) + e, 1 / pp)[..., None]


# --- counts: poisson, binomial, multinomial ---

def poisson(k, lam, shape=None, dtype=None) -> Array:
  """Poisson values with rate lam, as jax.random.poisson: Knuth's product of uniforms for lam < 10 (the same draws
  as JAX's, so the same values), Hormann's transformed rejection above (JAX's loop and keys; its lgamma rounds
  differently, so values there match in distribution, not always bit for bit).

  >>> tracegrad.random.poisson(tracegrad.random.key(0), 3.0, (4,)).shape
  (4,)
  """
  d = _dtype(dtype, "poisson", "int")
  shape = _out_shape("poisson", shape, lam)
  k = _key(k, "poisson")
  lam = tnp.broadcast_to(tnp.asarray(lam).astype(tnp.float32), shape)
  knuth = (lam != lam) | (lam < 10)
  lk = tnp.where(knuth, lam, 0.0)
  lr = tnp.where(knuth, 1e5, lam)

  def knuth_step(s):
    i, n, kk, lp = s
    kk, sub = split(kk)
    return i + 1, tnp.where(lp > -lk, n + 1, n), kk, lp + pm.logf(_uniform(sub, shape, dtypes.float32))

  n = lax.while_loop(lambda s: tnp.any(s[3] > -lk), knuth_step,
                     (0, tnp.zeros(shape, d), k, tnp.zeros(shape, tnp.float32)))[1] - 1
  from ..scipy.special import gammaln
  log_lam = pm.logf(lr)
  b = 0.931 + 2.53 * tnp.sqrt(lr)
  a = -0.059 + 0.02483 * b
  inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
  v_r = 0.9277 - 3.6224 / (b - 2)

  def reject_step(s):
    i, out, done, kk = s
    kk, k0, k1 = split(kk, 3)
    u = _uniform(k0, shape, dtypes.float32) - 0.5
    v = _uniform(k1, shape, dtypes.float32)
    us = 0.5 - tnp.abs(u)
    m = tnp.floor((2 * a / us + b) * u + lr + 0.43)
    lhs = pm.logf(v * inv_alpha / (a / (us * us) + b))
    rhs = -lr + m * log_lam - gammaln(m + 1)
    ok = ((us >= 0.07) & (v <= v_r)) | (~((m < 0) | ((us < 0.013) & (v > us))) & (lhs <= rhs))
    return i + 1, tnp.where(ok, m, out), done | ok, kk

  r = lax.while_loop(lambda s: ~tnp.all(s[2]), reject_step,
                     (0, tnp.full(shape, -1.0, tnp.float32), tnp.zeros(shape, bool), k))[1]
  out = tnp.where(knuth, n, r.astype(d))
  return tnp.where(lam == 0, tnp.zeros((), d), out)


_STIRLING = [0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
             0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287]


def _stirling_tail(x: Array) -> Array:
  """log k! minus Stirling's approximation of it: tabulated for k <= 9, a series beyond."""
  c = tnp.clip(x, 0.0, 9.0)
  sq = (x + 1) * (x + 1)
  series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / sq) / sq) / (x + 1)
  return tnp.where(x <= 9, tnp.asarray(_STIRLING, x.dtype)[tnp.floor(c).astype(tnp.int32)], series)


def binomial(k, n, p, shape=None, dtype=None) -> Array:
  """Binomial values (successes in n trials of probability p), as jax.random.binomial: summed geometric gaps for
  n min(p, 1 - p) <= 10, else the BTRS transformed rejection; JAX's loops and keys. nan for p outside [0, 1] or
  n < 0, inf for n = inf.

  >>> tracegrad.random.binomial(tracegrad.random.key(0), 10.0, 0.5, (4,)).shape
  (4,)
  """
  d = _dtype(dtype, "binomial")
  shape = _out_shape("binomial", shape, n, p)
  k = _key(k, "binomial")
  p = tnp.asarray(p)
  if not p.dtype.is_float: p = p.astype(_dtype(None, "binomial"))
  w = p.dtype
  count = tnp.broadcast_to(tnp.asarray(n).astype(w), shape)
  p = tnp.broadcast_to(p, shape)
  low = p < 0.5
  q = tnp.where(low, p, 1.0 - p)
  bad_n, inf_n, nan_q, neg_q = (count != count) | (count < 0), tnp.isinf(count), q != q, q < 0
  q = tnp.where(nan_q | neg_q, tnp.asarray(0.01, w), q)
  inversion = bad_n | (count * q <= 10.0)
  count = tnp.floor(count)
  c_inv, c_btrs = tnp.where(inversion, count, 0.0), tnp.where(inversion, 1e4, count)
  q_btrs = tnp.where(inversion, 0.5, q)

  l1q = _in32(_log1p, -q)

  def geo_step(s):
    i, m, total, kk = s
    sub, kk = split(kk)
    m = tnp.where(total <= c_inv, m + 1, m)
    total = total + tnp.ceil(_in32(_log, _uniform(sub, shape, w)) / l1q)
    return i + 1, m, total, kk

  zeros = tnp.zeros(shape, w)
  inv = lax.while_loop(lambda s: tnp.any(s[2] <= c_inv), geo_step, (0, zeros, zeros, k))[1] - 1

  cb, pb = c_btrs, q_btrs
  sd = tnp.sqrt(cb * pb * (1 - pb))
  b = 1.15 + 2.53 * sd
  a = -0.0873 + 0.0248 * b + 0.01 * pb
  c = cb * pb + 0.5
  v_r = 0.92 - 4.2 / b
  r = pb / (1 - pb)
  alpha = (2.83 + 5.1 / b) * sd
  mode = tnp.floor((cb + 1) * pb)
  lg = lambda x: _in32(_log, x)   # noqa: E731

  def btrs_step(s):
    i, out, done, kk = s
    kk, k0, k1 = split(kk, 3)
    u = _uniform(k0, shape, w) - 0.5
    v = _uniform(k1, shape, w)
    us = 0.5 - tnp.abs(u)
    first = (us >= 0.07) & (v <= v_r)
    m = tnp.floor((2 * a / us + b) * u + c)
    off = (m < 0) | (m > cb)
    lv = lg(v * alpha / (a / (us * us) + b))
    ub = ((mode + 0.5) * lg((mode + 1) / (r * (cb - mode + 1))) + (cb + 1) * lg((cb - mode + 1) / (cb - m + 1))
          + (m + 0.5) * lg(r * (cb - m + 1) / (m + 1)) + _stirling_tail(mode) + _stirling_tail(cb - mode)
          - _stirling_tail(m) - _stirling_tail(cb - m))
    ok = first | (~off & (lv <= ub))
    return i + 1, tnp.where(ok, m, out), done | ok, kk

  bt = lax.while_loop(lambda s: ~tnp.all(s[2]), btrs_step, (0, tnp.full(shape, -1.0, w), tnp.zeros(shape, bool), k))[1]
  out = tnp.where(inversion, inv, bt).astype(d)
  invalid = neg_q | nan_q | bad_n
  out = tnp.where(invalid, tnp.asarray(tnp.nan, d), out)
  out = tnp.where(inf_n & ~invalid, tnp.asarray(tnp.inf, d), out)
  return tnp.where(low | bad_n | nan_q | inf_n, out, count.astype(d) - out)


def multinomial(k, n, p, *, shape=None, dtype=None, unroll=1) -> Array:
  """Counts of n trials over the outcomes of probabilities p (last axis), as jax.random.multinomial: one binomial
  draw per outcome on what the earlier outcomes left, a key each. unroll is accepted for JAX's signature.

  >>> tracegrad.random.multinomial(tracegrad.random.key(0), 10.0, tnp.asarray([0.2, 0.3, 0.5])).sum()
  Array(10., dtype=float32)
  """
  d = _dtype(dtype, "multinomial")
  p = tnp.asarray(p)
  if not p.dtype.is_float: p = p.astype(_dtype(None, "multinomial"))
  if p.ndim < 1: raise ValueError(f"multinomial: p must have ndim >= 1, got p.shape == {p.shape}")
  shape = p.shape if shape is None else _shape(shape, "multinomial")
  rest = tnp.broadcast_to(tnp.asarray(n).astype(p.dtype), shape[:-1])
  p = tnp.moveaxis(tnp.broadcast_to(p, shape), -1, 0)
  left = tnp.flip(tnp.cumsum(tnp.flip(p, 0), axis=0), 0)
  ratios = p / tnp.where(left == 0, 1, left)
  keys = split(_key(k, "multinomial"), ratios.shape[0])
  scheme = _partitionable()
  if scheme not in _MULTINOMIAL:   # one compiled program per threefry scheme, which the draws read when traced
    from ..transforms.jit import jit
    _MULTINOMIAL[scheme] = jit(lambda *a: _multinomial_counts(*a))
  return _MULTINOMIAL[scheme](keys, rest, ratios).astype(d)


_MULTINOMIAL: dict = {}


def _multinomial_counts(keys: Array, rest: Array, ratios: Array) -> Array:
  """One binomial draw per outcome on the trials left (compiled as one program: eagerly, each draw's loop would
  recompute the draws before it)."""
  counts = []
  for i in range(ratios.shape[0]):
    c = binomial(keys[i], rest, tnp.clip(ratios[i], 0, 1), dtype=rest.dtype)
    rest = rest - c
    counts.append(c)
  return tnp.moveaxis(tnp.stack(counts), 0, -1)


# --- matrices: orthogonal, multivariate_normal ---

def orthogonal(k, n: int, shape=(), dtype=None, m=None) -> Array:
  """A Haar-random orthogonal n x m matrix (semi-orthogonal when n != m), as jax.random.orthogonal: the QR
  factor of a normal matrix with its columns signed by diag(R). Same distribution as JAX's, not the same values
  (tracegrad's Householder QR is not LAPACK's).

  >>> q = tracegrad.random.orthogonal(tracegrad.random.key(0), 3)
  >>> bool(tnp.allclose(q @ q.T, tnp.eye(3), atol=1e-5))
  True
  """
  from .small_linalg import qr
  d, shape = _dtype(dtype, "orthogonal"), _shape(shape, "orthogonal")
  m = n if m is None else m
  if not isinstance(n, int) or not isinstance(m, int) or n < 0 or m < 0:
    raise ValueError(f"orthogonal: n and m must be ints >= 0, got n={n!r}, m={m!r}")
  z = normal(_key(k, "orthogonal"), (*shape, max(n, m), min(n, m)), d)
  q, r = qr(z)
  diag = tnp.diagonal(r, axis1=-2, axis2=-1)
  x = q * tnp.sign(diag)[..., None, :]
  return tnp.swapaxes(x, -1, -2) if n < m else x


def multivariate_normal(k, mean, cov, shape=None, dtype=None, method="cholesky") -> Array:
  """Normal vectors with mean (..., n) and covariance cov (..., n, n), as jax.random.multivariate_normal: mean + L z
  with L the Cholesky factor of cov and z the same normal draws as JAX's, so values agree with JAX's to rounding.
  Only method="cholesky" (JAX's default) is here.

  >>> tracegrad.random.multivariate_normal(tracegrad.random.key(0), tnp.zeros(2), tnp.eye(2), (3,)).shape
  (3, 2)
  """
  from .small_linalg import cholesky
  if method not in ("svd", "eigh", "cholesky"):
    raise ValueError(f"multivariate_normal: method must be one of 'svd', 'eigh', 'cholesky', got {method!r}")
  if method != "cholesky":
    raise NotImplementedError(f"multivariate_normal: method={method!r} needs an eigendecomposition, which "
                              f"tracegrad does not have; use method='cholesky'")
  mean, cov = tnp.asarray(mean), tnp.asarray(cov)
  w = tnp.result_type(mean, cov, tnp.float32)
  mean, cov = mean.astype(w), cov.astype(w)
  d = w if dtype is None else _dtype(dtype, "multivariate_normal")
  if mean.ndim < 1: raise ValueError(f"multivariate_normal: mean must have ndim >= 1, got mean.ndim == {mean.ndim}")
  if cov.ndim < 2: raise ValueError(f"multivariate_normal: cov must have ndim >= 2, got cov.ndim == {cov.ndim}")
  n = mean.shape[-1]
  if cov.shape[-2:] != (n, n):
    raise ValueError(f"multivariate_normal: cov.shape must be (..., n, n) for n={n}, got cov.shape == {cov.shape}")
  shape = _out_shape("multivariate_normal", shape, tnp.zeros(mean.shape[:-1]), tnp.zeros(cov.shape[:-2]))
  z = normal(_key(k, "multivariate_normal"), (*shape, n), d)
  return mean + tnp.sum(cholesky(cov) * z[..., None, :], axis=-1)
