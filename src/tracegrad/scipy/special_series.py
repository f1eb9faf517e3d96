"""Pieces shared by the hypergeometric, Bessel and Owen's T functions: JAX's promotion of their arguments, an e^x
accurate for large |x|, signed ratios of gamma functions, and generalized hypergeometric series summed term by term,
each element until its next term no longer changes its sum.

>>> s, = series_pfq([tnp.asarray(1.0)], [], tnp.asarray(0.5))   # sum_k (1)_k 0.5^k / k! = 1 / (1 - 0.5)
>>> round(float(s), 5)
2.0
"""
from __future__ import annotations

import math

from .. import lax
from .. import numpy as tnp
from ..array import Array
from ..ir.dtypes import DType
from ..numpy._support import inexact


def promote(fn: str, *xs) -> tuple[list[Array], DType]:
  """The arguments broadcast to one float dtype as JAX promotes them (integers to the default float), half precision
  widened to float32; and the dtype to cast the result back to."""
  xs = tnp.broadcast_arrays(*inexact(fn, *xs))
  d = xs[0].dtype
  if d.itemsize == 2: xs = [x.astype(tnp.float32) for x in xs]
  return xs, d


def eps(x: Array) -> float: return float(tnp.finfo(x.dtype).eps)


# ln 2 split in two, the first part with enough trailing zero bits that n times it is exact (Cody and Waite)
_LN2 = {8: (float.fromhex("0x1.62e42fee00000p-1"), float.fromhex("0x1.a39ef35793c76p-33")),
        4: (float.fromhex("0x1.62e400p-1"), float.fromhex("0x1.7f7d1cp-20"))}


def exp(x: Array) -> Array:
  """e^x within a few ulp for large |x| too: 2^n e^r with n = round(x / ln 2) and r = x - n ln 2 formed exactly."""
  hi, lo = _LN2[x.dtype.itemsize]
  n = tnp.round(x * (1 / math.log(2)))
  r = (x - n * hi) - n * lo
  big = tnp.abs(x) < 1e4
  return tnp.where(big, tnp.exp2(tnp.where(big, n, 0.0)) * tnp.exp(r), tnp.exp(x))


def near_int(v: Array, tol: float) -> Array:
  """Whether v lies within tol of an integer."""
  return tnp.abs(v - tnp.round(v)) < tol


def log_gamma_sign(v: Array) -> tuple[Array, Array]:
  """(log|Gamma(v)|, the sign of Gamma(v)), the sign 0 at the poles (v = 0, -1, -2, ...)."""
  fl = tnp.floor(v)
  pole = (v <= 0) & (fl == v)
  sign = tnp.where((v < 0) & (tnp.mod(fl, 2) == 1), -1.0, 1.0).astype(v.dtype)
  return lax.lgamma(v), tnp.where(pole, 0.0, sign).astype(v.dtype)


def gamma_ratio(up: list[Array], down: list[Array]) -> Array:
  """prod Gamma(up) / prod Gamma(down), through logarithms so that neither product overflows; 0 where a Gamma below
  has a pole (and none above does)."""
  log, sign = 0.0, 1.0
  for v in up:
    lg, s = log_gamma_sign(v)
    log, sign = log + lg, sign * s
  for v in down:
    lg, s = log_gamma_sign(v)
    log, sign = log - tnp.where(s == 0, 0.0, lg), sign * tnp.where(s == 0, 0.0, s)
  return sign * tnp.exp(log)


def series_pfq(nums: list[Array], dens: list[Array], x: Array, t0: Array | None = None, skip: Array | None = None,
               stop_at: Array | None = None, track: tuple[int, ...] = (), cap: int = 500,
               asymptotic: bool = False, last: bool = False) -> list[Array]:
  """sum_k t_k with t_0 = t0 (1 by default) and t_(k+1) = t_k prod(nums + k) / prod(dens + k) x / (k + 1), per
  element until the next term is below eps of the sum, past term stop_at, or (asymptotic, for a divergent series)
  no smaller than the last; `skip` elements are not summed (0). Returns the sum, then for each index of `track` into
  nums + dens the sum's derivative in that parameter (its terms' derivatives carried along, so that a parameter at
  which the terms vanish, as a = 0, still has one); with last=True, then the first term left out."""
  dt, tol, n = x.dtype, eps(x), len(nums)
  zero = tnp.zeros_like(x)
  done = tnp.zeros(x.shape, bool) if skip is None else skip
  t = zero + 1.0 if t0 is None else t0
  us = accs = tuple(zero for _ in track)

  # the loop's invariants travel in its carry: a closed-over value would be recomputed at every step when eager
  consts = (x, tuple(nums), tuple(dens), zero if stop_at is None else stop_at)

  def body(s):
    k, done, t, total, us, accs, (x, nums, dens, stop) = s
    kf = k.astype(dt)
    live = ~done
    total = total + tnp.where(live, t, 0.0)
    accs = tuple(acc + tnp.where(live, u, 0.0) for acc, u in zip(accs, us))
    up, down = [a + kf for a in nums], [b + kf for b in dens]
    base = x / (kf + 1.0)
    for d in down: base = base / d
    r = base
    for f in up: r = r * f
    nxt = t * r
    new_us = []
    for u, i in zip(us, track):
      if i < n:
        dr = base
        for j, f in enumerate(up):
          if j != i: dr = dr * f
      else:
        dr = -r / down[i - n]
      new_us.append(u * r + t * dr)
    big = tnp.abs(nxt) > tol * tnp.abs(total)
    for u, acc in zip(new_us, accs): big = big | (tnp.abs(u) > tol * tnp.abs(acc))
    if asymptotic: big = big & (tnp.abs(nxt) < tnp.abs(t))
    if stop_at is not None: big = big & (kf + 1.0 <= stop)
    us = tuple(tnp.where(live, v, u) for v, u in zip(new_us, us))
    return k + 1, done | ~big, tnp.where(live, nxt, t), total, us, accs, (x, nums, dens, stop)

  def cond(s): return (s[0] < cap) & tnp.any(~s[1])

  init = (tnp.asarray(0, tnp.int32), done, t, zero, us, accs, consts)
  _, _, t, total, _, accs, _ = lax.while_loop(cond, body, init)
  return [total, *accs, t] if last else [total, *accs]
