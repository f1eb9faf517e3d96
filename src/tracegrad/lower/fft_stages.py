"""The complex FFT as stages of real primitive ops, for lowering an FFT once complex values are pairs of reals.

A complex array is a pair (re, im) of real UOps of one shape and dtype. `fft_pairs` transforms an axis by mixed-radix
stages in Stockham's order (no digit-reversed copy): a stage per radix r (4, 2, 3, 5, 7, 11, 13) turns r interleaved
transforms of length `done` into one of length r * done. A stage computes each output as its own sum of r slices
times constant twiddles (the butterfly's signs folded into them), so that no output computes its neighbours' values
only to drop them. A length with a larger prime factor goes through
Bluestein's chirp-z transform: a cyclic convolution of a length 2**a 3**b 5**c, done with two such FFTs. The graph
has a few nodes per stage, whatever the length.

>>> import numpy as np
>>> from tracegrad.ir import UOp, Graph, dtypes
>>> from tracegrad import run
>>> re, im = UOp.param((4,), dtypes.float64), UOp.param((4,), dtypes.float64)
>>> out = run.executable(Graph((re, im), fft_pairs(re, im, inverse=False)), backend="interp")
>>> [a.tolist() for a in out([np.array([1.0, 2, 3, 4]), np.zeros(4)])]
[[10.0, -2.0, -2.0, -2.0], [0.0, 2.0, 0.0, -2.0]]
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..ir import Ops, UOp, dtypes

Pair = tuple[UOp, UOp]
RADICES = (4, 2, 3, 5, 7, 11, 13)   # a stage each; a length with another prime factor goes through Bluestein


def fft_pairs(re: UOp, im: UOp, inverse: bool, axis: int = -1) -> Pair:
  """The unnormalised DFT along `axis` (default the last) of the complex array re + i im:
  X[k] = sum_j x[j] exp(-2 pi i j k / n) (exp(+...) when inverse, no 1/n factor). Along another axis the stages
  run with the axes after it innermost, so they read and write whole rows without a transpose."""
  if re.dtype not in (dtypes.float32, dtypes.float64) or im.dtype is not re.dtype or im.shape != re.shape:
    raise TypeError(f"fft_pairs: re and im should be float32 or float64 arrays of one shape and dtype, got "
                    f"{re.dtype}{list(re.shape)} and {im.dtype}{list(im.shape)}")
  if not re.shape:
    raise ValueError("fft_pairs: the operands need at least one axis to transform, got scalars")
  if inverse:   # the inverse DFT is the forward one with the parts swapped going in and coming out
    im, re = fft_pairs(im, re, False, axis)
    return re, im
  shape = re.shape
  axis %= len(shape)
  n = shape[axis]
  if n <= 1 or re.size == 0: return re, im
  view = (math.prod(shape[:axis]), n, math.prod(shape[axis + 1:]))
  return _reshape(_fft(_reshape((re, im), view)), shape)


def _fft(z: Pair) -> Pair:
  """The forward DFT of z, shape (batch, n, inner), along its middle axis."""
  n = z[0].shape[1]
  radices = _factor(n)
  return _bluestein(z) if radices is None else _stockham(z, radices)


def _factor(n: int) -> list[int] | None:
  """n as a product of RADICES, fours first, or None when it has another prime factor."""
  out = []
  for r in RADICES:
    while n % r == 0:
      out.append(r)
      n //= r
  return out if n == 1 else None


# ---- mixed-radix stages (Stockham: each stage reads its input in place, no digit-reversed copy) ----

def _stockham(z: Pair, radices: list[int]) -> Pair:
  """The stages without a digit-reversed copy. Before a stage, the done-point transforms of the m = n / done
  subsequences x[p + m t] are held as (batch, m, done, inner) ("by row") or, along the last axis (inner = 1), as
  (batch, done, m) ("by column": the runs a stage reads and writes are then m long, not done, which the first stages
  need; at the start and the end both forms are x's order); a radix-r stage combines subsequences p' + (m / r) j.
  A stage but the last computes its r outputs together, a concatenation of parts one long that the scheduler stores
  from one iteration (a butterfly); the last computes each output alone, so that a reader (packing the parts) can
  take its values where they are made."""
  b, n, c = z[0].shape
  done, by_column = 1, c == 1
  for i, r in enumerate(reversed(radices)):
    m2 = n // (r * done)
    if by_column:   # by column in and out: out[q, k, p'] = sum_j w^(j (q done + k)) in[k, j, p']
      src, axis = _map(z, lambda u: u.reshape((b, done, r, m2, c))), 1
      part = lambda j: ((0, b, 1), (0, done, 1), (j, j + 1, 1), (0, m2, 1), (0, c, 1))
      put = lambda u: u.reshape((b, 1, done, m2, c))
    else:       # by row: out[p', q, k] = sum_j w^(j (q done + k)) in[j, p', k]
      src, axis = _map(z, lambda u: u.reshape((b, r, m2, done, c))), 2
      part = lambda j: ((0, b, 1), (j, j + 1, 1), (0, m2, 1), (0, done, 1), (0, c, 1))
      put = lambda u: u.reshape((b, m2, 1, done, c))
    terms = [_map(src, lambda u: put(u.slice(part(j)))) for j in range(r)]
    if i == len(radices) - 1:
      out = _summed(terms, r, done, axis)
    else:
      wshape = tuple(done if a == axis + 1 else 1 for a in range(5))
      tw = _twiddles(r, done, z[0].dtype, done)
      for j in range(1, r if done > 1 else 1):
        w = _map(tw, lambda t: t.slice(((j - 1, j, 1), (0, done, 1))).reshape(wshape).broadcast(terms[0][0].shape))
        terms[j] = _cmul(terms[j], w)
      outs = _dft(terms)
      out = tuple(UOp.concat([x[p] for x in outs], axis) for p in (0, 1))
    done *= r
    z = _map(out, lambda u: u.reshape((b, n, c)))
  return z


def _summed(terms: list[Pair], r: int, done: int, axis: int) -> Pair:
  """The stage's outputs each as its own sum: out[q, k] = sum_j w^(j (q done + k)) term_j[k], the butterfly's signs
  folded into the twiddles w^(j k) of the length r done."""
  shape = list(terms[0][0].shape)
  shape[axis] = r
  wshape = tuple(r if a == axis else done if a == axis + 1 else 1 for a in range(5))
  tw = _twiddles(r, done, terms[0][0].dtype, r * done)
  out = _map(terms[0], lambda u: u.broadcast(tuple(shape)))
  for j in range(1, r):
    w = _map(tw, lambda t: t.slice(((j - 1, j, 1), (0, r * done, 1))).reshape(wshape).broadcast(tuple(shape)))
    out = _add(out, _cmul(_map(terms[j], lambda u: u.broadcast(tuple(shape))), w))
  return out


def _dft(t: list[Pair]) -> list[Pair]:
  """The DFT of the r values t (pairs of one shape), as a butterfly on them: X[q] = sum_j t[j] exp(-2 pi i j q / r)."""
  r = len(t)
  if r == 2: return [_add(t[0], t[1]), _sub(t[0], t[1])]
  if r == 4:
    s0, d0, s1, d1 = _add(t[0], t[2]), _sub(t[0], t[2]), _add(t[1], t[3]), _sub(t[1], t[3])
    d1 = (d1[1], -d1[0])   # -i d1
    return [_add(s0, s1), _add(d0, d1), _sub(s0, s1), _sub(d0, d1)]
  # odd r: t[j] and t[r - j] enter X[q] as (t[j] + t[r - j]) cos(2 pi j q / r) - i (t[j] - t[r - j]) sin(...)
  half = (r - 1) // 2
  sums = [_add(t[j], t[r - j]) for j in range(1, half + 1)]
  diffs = [_sub(t[j], t[r - j]) for j in range(1, half + 1)]
  dtype = t[0][0].dtype
  k = lambda v: UOp.const(dtype, float(v), t[0][0].shape)
  x0 = t[0]
  for s in sums: x0 = _add(x0, s)
  out = [x0] + [None] * (r - 1)
  for q in range(1, half + 1):
    re, im = t[0]
    ri, ii = None, None
    for j, (s, d) in enumerate(zip(sums, diffs), start=1):
      c, sn = math.cos(2 * math.pi * j * q / r), math.sin(2 * math.pi * j * q / r)
      re, im = re + s[0] * k(c), im + s[1] * k(c)
      ri = d[1] * k(sn) if ri is None else ri + d[1] * k(sn)
      ii = d[0] * k(sn) if ii is None else ii + d[0] * k(sn)
    out[q], out[r - q] = (re + ri, im - ii), (re - ri, im + ii)
  return out


@functools.lru_cache(maxsize=64)
def _twiddles(r: int, done: int, dtype, ks: int) -> Pair:
  """w^(j k) for 0 < j < r, k < ks, w = exp(-2 pi i / (r done)), as two constant tables of shape (r - 1, ks)."""
  return _table(_roots(np.outer(np.arange(1, r), np.arange(ks)), r * done), dtype)


# ---- Bluestein ----

def _bluestein(z: Pair) -> Pair:
  """The DFT by the identity jk = (j^2 + k^2 - (k-j)^2) / 2: X[k] = c[k] sum_j (x[j] c[j]) conj(c[k-j]) with the
  chirp c[j] = exp(-pi i j^2 / n), the sum a cyclic convolution of a smooth length m >= 2n - 1 done by FFTs."""
  b, n, inner = z[0].shape
  chirp, spectrum = _chirp_tables(n, z[0].dtype)
  m = spectrum[0].shape[0]
  c = _map(chirp, lambda t: t.reshape((1, n, 1)).broadcast((b, n, inner)))
  a = _fft(_map(_cmul(z, c), lambda u: u.pad(((0, 0), (0, m - n), (0, 0)))))
  f = _cmul(a, _map(spectrum, lambda t: t.reshape((1, m, 1)).broadcast((b, m, inner))))
  im, re = _fft((f[1], f[0]))   # the inverse transform, by swapping the parts
  # stored whole: a reader of the slice would compute the last stage at indices that split into no loops
  kept = _map((re, im), lambda u: UOp(Ops.OPTIMIZATION_BARRIER, u.dtype, (u,)))
  return _cmul(_map(kept, lambda u: u.slice(((0, b, 1), (0, n, 1), (0, inner, 1)))), c)


@functools.lru_cache(maxsize=16)
def _chirp_tables(n: int, dtype) -> tuple[Pair, Pair]:
  """The chirp c (length n) and the transform of the convolution's kernel conj(c[k - j]), laid out cyclically in a
  smooth length m >= 2n - 1, divided by m (the inverse transform's factor)."""
  m = _smooth_at_least(2 * n - 1)
  chirp = _roots(np.arange(n) ** 2, 2 * n)
  kernel = np.zeros(m, np.complex128)
  kernel[:n], kernel[m - n + 1:] = chirp.conj(), chirp[:0:-1].conj()
  return _table(chirp, dtype), _table(np.fft.fft(kernel) / m, dtype)


def _smooth_at_least(n: int) -> int:
  """The least 2**a 3**b 5**c >= n."""
  best, p5 = 2 ** math.ceil(math.log2(n)), 1
  while p5 < best:
    p35 = p5
    while p35 < best:
      p = p35
      while p < n: p *= 2
      best = min(best, p)
      p35 *= 3
    p5 *= 5
  return best


# ---- complex arithmetic on pairs ----

def _roots(k: np.ndarray, n: int) -> np.ndarray:
  """exp(-2 pi i k / n) for integers k, from the angle's remainder in its quadrant: exact on the axes (w^(n/4) is -i,
  not 6e-17 - i), and accurate for large k."""
  q, rem = np.divmod(4 * (k % n), n)
  return np.exp(-0.5j * np.pi * rem / n) * np.array([1, -1j, -1, 1j])[q]


def _table(values: np.ndarray, dtype) -> Pair:
  """Constant complex values (computed in float64) as two BUFFER nodes of dtype."""
  return UOp.buffer(values.real.astype(dtype.np)), UOp.buffer(values.imag.astype(dtype.np))


def _map(z: Pair, f) -> Pair: return f(z[0]), f(z[1])
def _reshape(z: Pair, shape) -> Pair: return z[0].reshape(shape), z[1].reshape(shape)
def _add(a: Pair, b: Pair) -> Pair: return a[0] + b[0], a[1] + b[1]
def _sub(a: Pair, b: Pair) -> Pair: return a[0] - b[0], a[1] - b[1]
def _cmul(a: Pair, b: Pair) -> Pair: return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]

